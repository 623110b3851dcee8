import { setTimeout as sleep } from 'node:timers/promises';
import { DriftlessError, throwIfInterrupted } from '../errors.ts';

/** Something did not happen within its time limit. */
export class WaitTimeoutError extends DriftlessError {
  readonly code = 'WAIT_TIMEOUT';
}

/**
 * Polls `done` until it returns true; throws WaitTimeoutError naming `what`
 * after `timeoutMs`. Errors from `done` count as "not yet" until the deadline.
 * An aborted `signal` ends the wait at once with its InterruptedError.
 */
export async function waitUntil(
  what: string,
  done: () => Promise<boolean>,
  timeoutMs: number,
  intervalMs = 250,
  signal?: AbortSignal,
): Promise<void> {
  // The monotonic clock: a change of the system's clock neither cuts nor stretches the wait.
  const deadline = performance.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    throwIfInterrupted(signal);
    try {
      if (await done()) return;
    } catch (error) {
      lastError = error;
    }
    if (performance.now() >= deadline) {
      const why = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      throw new WaitTimeoutError(`timed out after ${timeoutMs} ms waiting for ${what}${why}`);
    }
    // Woken early by the signal: the check at the top of the loop throws its reason.
    await sleep(intervalMs, undefined, signal ? { signal } : undefined).catch(() => undefined);
  }
}
