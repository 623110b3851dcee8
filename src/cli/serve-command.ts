/**
 * `driftless serve`: the local stack in one process until SIGINT or SIGTERM,
 * then a graceful stop (no new webhooks or scheduled work, running jobs
 * finish). Logs are JSON lines on stderr; stdout stays empty.
 */
import { jsonLogger } from '../logger.ts';
import { DEFAULT_PORT, startServe, type ServeOptions } from '../serve/start-serve.ts';
import type { CommandHandler } from './command-handler.ts';
import { onInterrupt } from './interrupts.ts';
import { EXIT_OK } from './exit-codes.ts';

/** Resolves with the signal's name when the process should stop. */
export type WaitForStop = () => Promise<string>;

/** The first SIGINT or SIGTERM. A second one while stopping ends the process at once. */
export const waitForSignal: WaitForStop = () => new Promise((resolve) => onInterrupt(resolve));

/** The command, with how it learns to stop injectable (tests resolve the promise themselves). */
export function serveCommandWith(
  waitForStop: WaitForStop = waitForSignal,
  options: Omit<ServeOptions, 'port' | 'logger'> = {},
): CommandHandler {
  return async (ctx, line, output) => {
    const logger = jsonLogger((text) => output.log(text));
    const serve = await startServe(ctx, {
      ...options,
      port: line.port ?? DEFAULT_PORT,
      logger,
    });
    const signal = await waitForStop();
    logger.info('stop requested', { signal });
    await serve.close();
    return EXIT_OK;
  };
}

export const serveCommand: CommandHandler = serveCommandWith();
