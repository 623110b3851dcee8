/**
 * Waiting on something a caller may give up on: a request's connection being
 * opened, its credentials being made, a shared discovery. The work itself goes
 * on (each has its own bound, the connection's idle timeout); only the caller
 * stops waiting, with the signal's own reason (a track's TrackTimeoutError),
 * so the error says why it stopped rather than how a cancelled socket died.
 */

/** `work`, or `signal`'s reason as soon as it aborts, whichever comes first. */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return work;
  if (signal.aborted) {
    work.catch(() => undefined);
    return Promise.reject(signal.reason as Error);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      work.catch(() => undefined);
      reject(signal.reason as Error);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error as Error);
      },
    );
  });
}
