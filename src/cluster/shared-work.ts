/**
 * Work several callers wait for, each until its own signal (a track's
 * deadline): a shared read of discovery, a connection being opened. One caller
 * giving up must not cancel what another still waits for; but once every
 * caller has given up, nobody needs the answer, and the work is cancelled
 * rather than left to its idle timeout (an open socket keeps a process from
 * exiting for that long).
 */
import { untilAborted } from './until-aborted.ts';

export class SharedWork<T> {
  /** The work's own outcome, whoever waits for it. */
  readonly result: Promise<T>;
  private readonly cancel = new AbortController();
  /** Callers with a signal still waiting; undefined once one waited without (never cancelled). */
  private waiting: number | undefined = 0;
  private settled = false;

  /** Starts `work`, which ends what it does when its signal aborts. */
  constructor(work: (cancel: AbortSignal) => Promise<T>) {
    this.result = work(this.cancel.signal);
    const settle = (): void => {
      this.settled = true;
    };
    this.result.then(settle, settle);
  }

  /** The result, or `signal`'s reason as soon as it aborts. */
  wait(signal?: AbortSignal): Promise<T> {
    if (signal === undefined) {
      this.waiting = undefined;
      return this.result;
    }
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    if (this.waiting !== undefined) {
      this.waiting++;
      const gaveUp = (): void => {
        if (this.waiting === undefined || --this.waiting > 0 || this.settled) return;
        this.cancel.abort(signal.reason);
      };
      signal.addEventListener('abort', gaveUp, { once: true });
      const done = (): void => signal.removeEventListener('abort', gaveUp);
      this.result.then(done, done);
    }
    return untilAborted(this.result, signal);
  }
}
