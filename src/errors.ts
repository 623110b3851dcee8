/**
 * Base class of every error Driftless raises on purpose.
 *
 * One subclass per kind of failure, each with a stable `code` that callers,
 * logs and JSON output can match on without parsing messages (the Powertools
 * convention). The original error, when there is one, travels as `cause`.
 */
export abstract class DriftlessError extends Error {
  /** Stable, machine-readable identifier of the kind of failure. */
  abstract readonly code: string;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The user asked for something malformed: a bad flag, a bad config value. Exit code 2. */
export class UsageError extends DriftlessError {
  readonly code = 'USAGE';
}

/** A feature the DESIGN.md contract names but this build does not implement yet. Exit code 2. */
export class NotImplementedError extends DriftlessError {
  readonly code = 'NOT_IMPLEMENTED';
}

/**
 * Whoever runs a use-case asked it to stop (the CLI at Ctrl-C or SIGTERM).
 * Use-cases take an AbortSignal aborted with one of these: nothing more is
 * sent to the cluster, waits end, and what was done so far is recorded.
 */
export class InterruptedError extends DriftlessError {
  readonly code = 'INTERRUPTED';
}

/** Why `signal` was aborted, as an InterruptedError; undefined while it is not. */
export function interruptionOf(signal: AbortSignal | undefined): InterruptedError | undefined {
  if (signal?.aborted !== true) return undefined;
  const reason: unknown = signal.reason;
  return reason instanceof InterruptedError
    ? reason
    : new InterruptedError(`interrupted: ${messageOf(reason)}`, { cause: reason });
}

/** Throws why `signal` was aborted, if it was: the check before a step that is not undone. */
export function throwIfInterrupted(signal: AbortSignal | undefined): void {
  const interruption = interruptionOf(signal);
  if (interruption !== undefined) throw interruption;
}

/**
 * `work`, or its InterruptedError as soon as `signal` aborts, whichever comes first: for a step
 * that only reads (a Git fetch, a render) and cannot itself be stopped half-way. What it was
 * doing goes on unobserved until the process exits; nothing of it is recorded.
 */
export function untilInterrupted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  return untilSignalled(work, signal, interruptionOf);
}

/** The calls {@link whenAborted} holds for each signal, behind the one listener it adds. */
const abortCalls = new WeakMap<AbortSignal, Set<() => void>>();

/**
 * Calls `onAbort` once when `signal` aborts (never, if it has already: check first, as with
 * `addEventListener`); the function returned takes the call back. Every request and wait of a
 * job watches the job's signal: Node's EventTarget walks the listeners it holds on each add and
 * remove, and a sync keeps 128 requests in flight (APPLY_CONCURRENCY), two watches each. Here a
 * signal gets one listener, the first time, and the calls a set.
 */
export function whenAborted(signal: AbortSignal, onAbort: () => void): () => void {
  const calls = callsOn(signal);
  calls.add(onAbort);
  return () => {
    calls.delete(onAbort);
  };
}

/** The set of calls `signal` makes when it aborts: its one listener added the first time. */
function callsOn(signal: AbortSignal): Set<() => void> {
  const known = abortCalls.get(signal);
  if (known !== undefined) return known;
  const calls = new Set<() => void>();
  abortCalls.set(signal, calls);
  const callAll = (): void => {
    abortCalls.delete(signal);
    for (const call of calls) {
      // As EventTarget does: one call's error does not keep the others from running.
      try {
        call();
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
    calls.clear();
  };
  signal.addEventListener('abort', callAll, { once: true });
  return calls;
}

/**
 * `work`, or `reasonOf(signal)` as soon as `signal` aborts, whichever settles first; the work
 * itself goes on, unobserved. One race for {@link untilInterrupted} and the cluster's
 * `untilAborted`, which differ in what they reject with.
 */
export function untilSignalled<T>(
  work: Promise<T>,
  signal: AbortSignal | undefined,
  reasonOf: (signal: AbortSignal) => unknown,
): Promise<T> {
  if (signal === undefined) return work;
  if (signal.aborted) {
    work.catch(() => undefined);
    return Promise.reject(reasonOf(signal) as Error);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      work.catch(() => undefined);
      reject(reasonOf(signal) as Error);
    };
    const stopWatching = whenAborted(signal, onAbort);
    work.then(
      (value) => {
        stopWatching();
        resolve(value);
      },
      (error: unknown) => {
        stopWatching();
        reject(error as Error);
      },
    );
  });
}

/** The message of anything thrown: an Error's message, or the thrown value as text. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * `error`'s message about `subject` (`Kind/namespace/name`), naming it once: the API server's
 * errors (KubernetesApiError) start with it already, others do not.
 */
export function messageAbout(subject: string, error: unknown): string {
  const message = messageOf(error);
  return message.startsWith(subject) ? message : `${subject}: ${message}`;
}
