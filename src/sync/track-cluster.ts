/**
 * The identity a track acts with in its cluster, and how long a job of the
 * track may work there. With `serviceAccountName`, apply, prune, health
 * checks and drift correction run as `system:serviceaccount:<namespace>:<name>`
 * through impersonation (as Flux's kustomize-controller does), so the track
 * can do exactly what that account's RBAC allows and the API server's
 * refusals name the account. A sync, rollback or drift check ends its
 * requests at its start plus the track's `timeout` ({@link TrackDeadline}).
 */
import { setMaxListeners } from 'node:events';
import { boundedCluster } from '../cluster/bounded-cluster.ts';
import type { KubernetesPort } from '../cluster/kubernetes-port.ts';
import type { Track } from '../config/types.ts';
import { DriftlessError, InterruptedError } from '../errors.ts';

/** The cluster connection cannot impersonate (a port without the capability). */
export class ImpersonationUnavailableError extends DriftlessError {
  readonly code = 'IMPERSONATION_UNAVAILABLE';
}

type Acting = Pick<Track, 'name'> &
  Partial<Pick<Track, 'serviceAccountName' | 'namespace' | 'targetNamespace'>>;

/** The service account's user name, or undefined when the track acts with Driftless' own rights. */
export function serviceAccountUser(track: Acting): string | undefined {
  if (track.serviceAccountName === undefined) return undefined;
  const namespace = track.targetNamespace ?? track.namespace;
  return `system:serviceaccount:${namespace}:${track.serviceAccountName}`;
}

/** `cluster` as the track acts in it: impersonating its service account when it names one. */
export function actingAs(cluster: KubernetesPort, track: Acting): KubernetesPort {
  const user = serviceAccountUser(track);
  if (user === undefined) return cluster;
  if (cluster.impersonate === undefined) {
    throw new ImpersonationUnavailableError(
      `track "${track.name}": this cluster connection cannot impersonate ${user}`,
    );
  }
  const namespace = track.targetNamespace ?? track.namespace;
  // The groups the API server gives a service account's own tokens.
  return cluster.impersonate(user, [
    'system:serviceaccounts',
    `system:serviceaccounts:${namespace}`,
    'system:authenticated',
  ]);
}

/** A job of the track reached the track's timeout before it finished. */
export class TrackTimeoutError extends DriftlessError {
  readonly code = 'TRACK_TIMEOUT';
}

/** What a {@link TrackDeadline} bounds: named in its error. */
export type TrackJob =
  | 'sync'
  | 'rollback'
  | 'drift check'
  | 'delete'
  | 'diff'
  | 'status check'
  | 'discovery'
  | 'GitTrack status write'
  | 'dashboard read';

/**
 * How a {@link TrackDeadline}'s error names what ran out. By default a track and its own
 * `timeout`; a deadline that is no track's (a `tracksFrom` source's discovery) says what it is.
 */
export interface DeadlineWording {
  /** Names the subject before its quoted name: `track` by default. */
  readonly subject: string;
  /** The limit that ran out: `the track's timeout` by default. */
  readonly limit: string;
}

const TRACK_WORDING: DeadlineWording = { subject: 'track', limit: "the track's timeout" };

/**
 * The longest delay setTimeout takes (2^31 - 1 ms, about 24.8 days): Node fires a longer one
 * after 1 ms, with a TimeoutOverflowWarning. A track's `timeout` may be longer (`600h`).
 */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * How long a job of a track (a sync, a rollback, a drift check) may work
 * with its cluster: until the job's start plus the track's `timeout`. Each
 * request already ends after 60 s without a byte (kube-connection.ts), but an
 * API server that takes connections and never answers, or answers a byte at a
 * time, would otherwise hold the job, its lease, and every job queued behind it
 * (`driftless sync` of all tracks, `serve`'s queue) for far longer.
 *
 * At the deadline every request still waiting is cancelled and rejects with
 * a {@link TrackTimeoutError}, and no request is sent after it ({@link bound});
 * the job's steps stop as they stop when asked to ({@link signal}): nothing
 * more is applied or pruned, what was done is recorded, and nothing already
 * applied is undone. Disposed when the job ends.
 */
export class TrackDeadline {
  /** When the time is up, on the monotonic clock (`performance.now()`). */
  private readonly endsAt: number;
  /** What the requests waiting at the deadline reject with. */
  readonly error: TrackTimeoutError;
  private readonly requests = new AbortController();
  private readonly stopping = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private readonly onInterrupt: () => void;

  constructor(
    track: Pick<Track, 'name' | 'timeout'>,
    job: TrackJob,
    /** The job's own signal (Ctrl-C, `serve` stopping): forwarded to {@link signal}. */
    private readonly interrupt: AbortSignal | undefined,
    wording: DeadlineWording = TRACK_WORDING,
  ) {
    // Every wait of the job listens on them (requests in flight, 128 while applying, through
    // one listener: whenAborted): Node would warn on the user's terminal past 10 listeners, a
    // leak check that does not apply here.
    setMaxListeners(0, this.requests.signal, this.stopping.signal);
    this.endsAt = performance.now() + track.timeout;
    // The time counts from before the lease and covers the store's reads and a cluster that
    // answers slowly: the message says what ran out, not who used it.
    this.error = new TrackTimeoutError(
      `${wording.subject} "${track.name}": the ${job} did not finish within ${wording.limit} (${track.timeout} ms)`,
    );
    this.arm(track.timeout);
    this.onInterrupt = () => this.stopping.abort(interrupt?.reason);
    if (interrupt?.aborted) this.onInterrupt();
    else interrupt?.addEventListener('abort', this.onInterrupt, { once: true });
  }

  /**
   * The ms left until the deadline, by the monotonic clock as the timer counts: a change of the
   * system's clock (one moved it by ~40 s during a test run here) neither shortens nor lengthens it.
   */
  msLeft(): number {
    return this.endsAt - performance.now();
  }

  /**
   * Sets the timer for the `left` ms, in steps setTimeout can take. Counted by the timers alone,
   * as one timer would: a change of the system's clock moves no deadline.
   */
  private arm(left: number): void {
    if (left > MAX_TIMER_MS) {
      this.timer = setTimeout(() => this.arm(left - MAX_TIMER_MS), MAX_TIMER_MS);
      return;
    }
    this.timer = setTimeout(() => {
      this.requests.abort(this.error);
      // The steps take an InterruptedError as their reason to stop and quote its message.
      this.stopping.abort(new InterruptedError(this.error.message, { cause: this.error }));
    }, left);
  }

  /** True once the deadline passed. */
  get passed(): boolean {
    return this.requests.signal.aborted;
  }

  /**
   * Aborted when the job is asked to stop (with the job's own InterruptedError) or at the
   * deadline: what the apply, prune, health wait and drift correction stop on. Requests in
   * flight when the job is asked to stop still finish; at the deadline they are cancelled.
   */
  get signal(): AbortSignal {
    return this.stopping.signal;
  }

  /** `cluster` with every request ending at the deadline. */
  bound(cluster: KubernetesPort): KubernetesPort {
    return boundedCluster(cluster, this.requests.signal);
  }

  /** Stops the clock: the job is over. */
  dispose(): void {
    clearTimeout(this.timer);
    this.interrupt?.removeEventListener('abort', this.onInterrupt);
  }
}

/**
 * `read` of the track's cluster, its requests ending at its start plus the track's `timeout`
 * ({@link TrackDeadline}), as a sync's do: for what only reads (`diff`, `status --objects`, the
 * objects on `serve`'s dashboard). Past the deadline it fails with the deadline's
 * TrackTimeoutError, whatever it got so far: the reads cut short would otherwise show as objects
 * that could not be read or would fail, which says nothing true about them.
 */
export async function readWithinTimeout<T>(
  track: Pick<Track, 'name' | 'timeout'>,
  job: TrackJob,
  cluster: KubernetesPort,
  /** Given the signal the deadline aborts too, for what it waits on besides the cluster (Git). */
  read: (cluster: KubernetesPort, signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const deadline = new TrackDeadline(track, job, undefined);
  try {
    const result = await read(deadline.bound(cluster), deadline.signal);
    if (deadline.passed) throw deadline.error;
    return result;
  } catch (error) {
    throw deadline.passed ? deadline.error : error;
  } finally {
    deadline.dispose();
  }
}
