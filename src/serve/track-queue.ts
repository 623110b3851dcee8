/**
 * The in-process job queue of `driftless serve`: one FIFO lane per track, so
 * a track's jobs run one at a time and in order (DESIGN.md: at most one apply
 * job per track at a time), while different tracks run in parallel up to a
 * bound. It stands in for the SQS FIFO queue grouped by track of the deployed
 * shape.
 */
import { DriftlessError } from '../errors.ts';
import type { Job, JobQueue } from '../sync/jobs.ts';

/** What travels with a job inside the process, beside the job's own JSON. */
export interface JobContext {
  /** When the webhook that caused the job arrived (ms since the epoch), for time-to-deploy. */
  readonly receivedAt?: number;
}

/** Runs one job. Expected not to throw; a throw is reported to `onError` and the lane goes on. */
export type RunJob = (job: Job, context: JobContext) => Promise<void>;

/** The queue is shutting down and takes no more jobs. */
export class QueueClosedError extends DriftlessError {
  readonly code = 'QUEUE_CLOSED';
}

export interface TrackQueueOptions {
  /** How many tracks run a job at once; default 4. */
  readonly concurrency?: number;
  /** Told about a job whose `run` threw (a bug: runners report failures themselves). */
  readonly onError?: (job: Job, error: unknown) => void;
}

interface Entry {
  job: Job;
  context: JobContext;
}

interface Lane {
  readonly waiting: Entry[];
  running: boolean;
}

/**
 * Whether `next` can be folded into the waiting `entry` instead of queued
 * behind it. Two waiting fetches of a track do the same work — a fetch
 * resolves the ref itself, the payload's sha is only a hint — and so do two
 * waiting drift checks; folding them keeps a busy or slow track from piling
 * up scheduled work. Sync and rollback jobs name a revision and never fold.
 */
function folds(entry: Entry, next: Job): boolean {
  const waiting = entry.job;
  if (waiting.type === 'fetch' && next.type === 'fetch') return waiting.revision === next.revision;
  if (waiting.type === 'drift' && next.type === 'drift') {
    return (waiting.detectOnly ?? false) === (next.detectOnly ?? false);
  }
  return false;
}

/** A webhook's trigger and delivery id say more than a schedule's: a scheduled fetch does not replace them. */
function outranks(waiting: Job, next: Job): boolean {
  return (
    waiting.type === 'fetch' &&
    waiting.trigger === 'webhook' &&
    next.type === 'fetch' &&
    next.trigger !== 'webhook'
  );
}

/** The earlier arrival: a fold deploys the change the first webhook announced. */
function earlier(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.min(a, b);
}

export class TrackQueue implements JobQueue {
  readonly #run: RunJob;
  readonly #concurrency: number;
  readonly #onError: (job: Job, error: unknown) => void;
  readonly #lanes = new Map<string, Lane>();
  /** Tracks with waiting jobs and none running, in the order they became ready: fair across tracks. */
  readonly #ready: string[] = [];
  readonly #running = new Set<Promise<void>>();
  #closed = false;
  #idleWaiters: (() => void)[] = [];

  constructor(run: RunJob, options: TrackQueueOptions = {}) {
    this.#run = run;
    this.#concurrency = Math.max(1, options.concurrency ?? 4);
    this.#onError = options.onError ?? (() => undefined);
  }

  /** Jobs waiting to run (not counting the running ones). */
  get length(): number {
    let waiting = 0;
    for (const lane of this.#lanes.values()) waiting += lane.waiting.length;
    return waiting;
  }

  /** Jobs running now. */
  get running(): number {
    return this.#running.size;
  }

  /** Whether `enqueue` still takes jobs. */
  get accepting(): boolean {
    return !this.#closed;
  }

  /**
   * Queues `job` behind the track's earlier jobs, folding it into a waiting
   * job of the same kind when that does the same work. Resolves once queued,
   * not once run. Throws {@link QueueClosedError} after {@link close}.
   */
  async enqueue(job: Job, context: JobContext = {}): Promise<void> {
    if (this.#closed)
      throw new QueueClosedError(`the queue is closed; ${job.type} job of "${job.track}" refused`);
    let lane = this.#lanes.get(job.track);
    if (!lane) {
      lane = { waiting: [], running: false };
      this.#lanes.set(job.track, lane);
    }
    const twin = lane.waiting.find((entry) => folds(entry, job));
    if (twin) {
      if (!outranks(twin.job, job)) twin.job = job;
      twin.context = {
        ...twin.context,
        receivedAt: earlier(twin.context.receivedAt, context.receivedAt),
      };
      return;
    }
    lane.waiting.push({ job, context });
    if (!lane.running && lane.waiting.length === 1) this.#ready.push(job.track);
    this.#pump();
  }

  /** Resolves when no job waits or runs (tests and demos use it). */
  idle(): Promise<void> {
    if (this.#isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /**
   * Stops taking jobs, drops the waiting ones and resolves when the running
   * ones have finished, with the number dropped. Nothing is lost for good:
   * the next start polls every track's ref again.
   */
  async close(): Promise<{ dropped: number }> {
    this.#closed = true;
    const dropped = this.length;
    for (const lane of this.#lanes.values()) lane.waiting.length = 0;
    this.#ready.length = 0;
    await Promise.all([...this.#running]);
    this.#notifyIdle();
    return { dropped };
  }

  #isIdle(): boolean {
    return this.#running.size === 0 && this.length === 0;
  }

  #notifyIdle(): void {
    if (!this.#isIdle()) return;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  #pump(): void {
    while (this.#running.size < this.#concurrency && this.#ready.length > 0) {
      const track = this.#ready.shift()!;
      const lane = this.#lanes.get(track);
      const entry = lane?.waiting.shift();
      if (!lane || !entry) continue;
      lane.running = true;
      const run = this.#start(entry).finally(() => {
        this.#running.delete(run);
        lane.running = false;
        if (lane.waiting.length > 0) this.#ready.push(track);
        else this.#lanes.delete(track);
        this.#pump();
        this.#notifyIdle();
      });
      this.#running.add(run);
    }
  }

  async #start(entry: Entry): Promise<void> {
    try {
      await this.#run(entry.job, entry.context);
    } catch (error) {
      this.#onError(entry.job, error);
    }
  }
}
