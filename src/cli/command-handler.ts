import type { LocalContext } from '../sync/local-context.ts';
import type { Output } from './output.ts';
import type { CommandLine } from './parse-command-line.ts';

/**
 * Runs one command against an open context; returns the exit code. `signal`
 * is given to commands that stop cleanly (commands.ts `stopsCleanly`): it is
 * aborted at the first Ctrl-C or SIGTERM (interrupts.ts).
 */
export type CommandHandler = (
  ctx: LocalContext,
  line: CommandLine,
  output: Output,
  signal?: AbortSignal,
) => Promise<number>;
