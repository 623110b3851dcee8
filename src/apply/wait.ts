import { setTimeout as sleep } from 'node:timers/promises';
import { DriftlessError } from '../errors.ts';

/** Something did not happen within its time limit. */
export class WaitTimeoutError extends DriftlessError {
  readonly code = 'WAIT_TIMEOUT';
}

/**
 * Polls `done` until it returns true; throws WaitTimeoutError naming `what`
 * after `timeoutMs`. Errors from `done` count as "not yet" until the deadline.
 */
export async function waitUntil(
  what: string,
  done: () => Promise<boolean>,
  timeoutMs: number,
  intervalMs = 250,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      if (await done()) return;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) {
      const why = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      throw new WaitTimeoutError(`timed out after ${timeoutMs} ms waiting for ${what}${why}`);
    }
    await sleep(intervalMs);
  }
}
