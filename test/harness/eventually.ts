/**
 * Waiting in tests for something that happens asynchronously (a job on a
 * queue, a controller acting on an object), by polling instead of sleeping a
 * fixed time that is too short under load and too long otherwise.
 */
import { setTimeout as sleep } from 'node:timers/promises';

/** Polls `check` every `intervalMs` until it returns true; false once `timeoutMs` has passed. */
export async function eventually(
  check: () => Promise<boolean>,
  timeoutMs = 30_000,
  intervalMs = 100,
): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (await check()) return true;
    await sleep(intervalMs);
  }
  return check();
}

/**
 * Polls `check` until it returns a value (a throw counts as not yet), or
 * fails naming `what` after `timeoutMs`.
 */
export async function eventuallyValue<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    const value = await check().catch(() => undefined);
    if (value !== undefined) return value;
    await sleep(200);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}
