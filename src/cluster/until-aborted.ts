/**
 * Waiting on something a caller may give up on: a request's connection being
 * opened, its credentials being made, a shared discovery. The work itself goes
 * on (each has its own bound, the connection's idle timeout); only the caller
 * stops waiting, with the signal's own reason (a track's TrackTimeoutError),
 * so the error says why it stopped rather than how a cancelled socket died.
 */
import { untilSignalled } from '../errors.ts';

/** `work`, or `signal`'s reason as soon as it aborts, whichever comes first. */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  return untilSignalled(work, signal, (aborted) => aborted.reason);
}
