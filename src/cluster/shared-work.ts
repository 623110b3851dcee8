/**
 * Work several callers wait for, each until its own signal (a track's
 * deadline): a shared read of discovery, a connection being opened. One caller
 * giving up must not cancel what another still waits for; but once every
 * caller has given up, nobody needs the answer, and the work is cancelled
 * rather than left to its idle timeout (an open socket keeps a process from
 * exiting for that long).
 */
import { setMaxListeners } from 'node:events';
import { untilAborted } from './until-aborted.ts';

export class SharedWork<T> {
  /** The work's own outcome, whoever waits for it. */
  readonly result: Promise<T>;
  private readonly cancel = new AbortController();
  /** Callers with a signal still waiting; undefined once one waited without (never cancelled). */
  private waiting: number | undefined = 0;
  /** Whether any caller waited yet: work started ahead of its callers is theirs from then on. */
  private claimed = false;
  private settled = false;

  /**
   * Starts `work`, which ends what it does when its signal aborts. `onCancel` runs just before
   * that, synchronously: whoever keeps the work for later callers forgets it there, so none
   * joins work already cancelled (its rejection only arrives a few ticks later).
   */
  constructor(
    work: (cancel: AbortSignal) => Promise<T>,
    private readonly onCancel?: () => void,
  ) {
    // Every request of the work listens on it (a legacy discovery sends one per group version):
    // Node would warn on the user's terminal past 10 listeners, a leak check that does not apply.
    setMaxListeners(0, this.cancel.signal);
    this.result = work(this.cancel.signal);
    const settle = (): void => {
      this.settled = true;
    };
    this.result.then(settle, settle);
  }

  /** The result, or `signal`'s reason as soon as it aborts. */
  wait(signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    this.claimed = true;
    // Done already (discovery, asked once per object applied): nothing to give up on, and no
    // listener to add — Node's EventTarget checks each new one against every listener the
    // track's signal holds, which cost a first sync of 500 objects ~15 ms of CPU (profile).
    if (this.settled) return this.result;
    if (signal === undefined) {
      this.waiting = undefined;
      return this.result;
    }
    if (this.waiting !== undefined) {
      this.waiting++;
      const gaveUp = (): void => {
        if (this.waiting === undefined || --this.waiting > 0 || this.settled) return;
        this.onCancel?.();
        this.cancel.abort(signal.reason);
      };
      signal.addEventListener('abort', gaveUp, { once: true });
      const done = (): void => signal.removeEventListener('abort', gaveUp);
      this.result.then(done, done);
    }
    return untilAborted(this.result, signal);
  }

  /**
   * Keeps work started ahead of its callers (the CLI reads discovery while it fetches Git) for
   * the callers to come, without being one: they alone decide once they wait, so the last to give
   * up still cancels it. Should `until` abort before any came (the command ended without needing
   * it), nobody will, and it is cancelled rather than left to its idle timeout.
   */
  keepUntil(until: AbortSignal): void {
    const unclaimed = (): void => {
      if (this.claimed || this.settled) return;
      this.onCancel?.();
      this.cancel.abort(until.reason);
    };
    if (until.aborted) {
      unclaimed();
      return;
    }
    until.addEventListener('abort', unclaimed, { once: true });
    const done = (): void => until.removeEventListener('abort', unclaimed);
    this.result.then(done, done);
  }
}
