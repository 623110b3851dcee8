/**
 * The local stand-in for the scheduled drift function: every track's
 * `interval`, a fetch job (polling the ref, so a missed webhook is caught
 * within the interval) and a drift job. One timer per track, since intervals
 * differ per track and there is no shared clock to align them to.
 */
import type { Track } from '../config/types.ts';
import type { DriftJob, FetchJob } from '../sync/jobs.ts';

/** setInterval takes at most a signed 32-bit delay; longer ones would fire every millisecond. */
const MAX_DELAY_MS = 2 ** 31 - 1;

export interface SchedulerTimers {
  setInterval(callback: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
}

export interface SchedulerOptions {
  /** Also enqueue both jobs for every track at start (catch up on pushes missed while stopped). Default true. */
  readonly runAtStart?: boolean;
  readonly timers?: SchedulerTimers;
}

export interface Scheduler {
  stop(): void;
}

const REAL_TIMERS: SchedulerTimers = {
  setInterval: (callback, ms) => setInterval(callback, ms),
  clearInterval: (handle) => clearInterval(handle as NodeJS.Timeout),
};

/** The jobs one tick enqueues for `track`, fetch first so a drift check compares against fresh Git. */
export function scheduledJobs(track: Track): [FetchJob, DriftJob] {
  return [
    { type: 'fetch', track: track.name, trigger: 'schedule' },
    { type: 'drift', track: track.name },
  ];
}

/**
 * Starts a timer per track that is not suspended; `enqueue` receives the
 * jobs (it must not throw: the scheduler has nobody to tell).
 */
export function startScheduler(
  tracks: readonly Track[],
  enqueue: (job: FetchJob | DriftJob) => void,
  options: SchedulerOptions = {},
): Scheduler {
  const timers = options.timers ?? REAL_TIMERS;
  const handles: unknown[] = [];
  for (const track of tracks) {
    if (track.suspend) continue;
    const tick = (): void => {
      for (const job of scheduledJobs(track)) enqueue(job);
    };
    if (options.runAtStart ?? true) tick();
    handles.push(timers.setInterval(tick, Math.min(Math.max(track.interval, 1000), MAX_DELAY_MS)));
  }
  return {
    stop() {
      for (const handle of handles.splice(0)) timers.clearInterval(handle);
    },
  };
}
