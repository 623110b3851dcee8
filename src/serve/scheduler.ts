/**
 * The clock of `driftless serve`: it ticks and the schedule use-case
 * (src/sync/schedule.ts) queues a poll and a drift check for each track due
 * — the work the drift function does in AWS on its EventBridge schedule.
 * The clock ticks as often as the shortest interval asks (between 1 s and
 * 1 min), and a track is taken at the tick nearest its due time.
 */
import type { Track } from '../config/types.ts';
import { scheduleDueTracks, type ScheduleDeps } from '../sync/schedule.ts';

/** setInterval takes at most a signed 32-bit delay; longer ones would fire every millisecond. */
const MAX_DELAY_MS = 2 ** 31 - 1;

export interface SchedulerTimers {
  setInterval(callback: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
}

export interface SchedulerOptions {
  /** Also queue both jobs for every track at start (catch up on pushes missed while stopped). Default true. */
  readonly runAtStart?: boolean;
  readonly timers?: SchedulerTimers;
  /** Told when a tick could not queue its jobs (store unreadable, queue closed). */
  readonly onError?: (error: unknown) => void;
  /**
   * Told on every tick of each track removed from the config that still has state; not of the
   * track of a deleted GitTrack being collected (`deps.published` tells those apart), which
   * its source's discovery collects and reports.
   */
  readonly onRemovedTrack?: (track: string) => void;
  readonly now?: () => Date;
}

export interface Scheduler {
  stop(): void;
  /**
   * Settles once the start-up tick has queued its jobs (or failed, told to `onError`): the tick
   * reads the tracks' states first, so until then the queue may look idle with a poll to come.
   */
  readonly started: Promise<void>;
}

const REAL_TIMERS: SchedulerTimers = {
  setInterval: (callback, ms) => setInterval(callback, ms),
  clearInterval: (handle) => clearInterval(handle as NodeJS.Timeout),
};

/** How often the clock ticks for `tracks`: the shortest interval, within 1 s and 1 min. */
export function schedulePeriod(tracks: readonly Track[]): number {
  const intervals = tracks.filter((track) => !track.suspend).map((track) => track.interval);
  return Math.min(60_000, Math.max(1_000, Math.min(MAX_DELAY_MS, ...intervals)));
}

/** Starts the clock over `deps`; see the module comment. */
export function startScheduler(deps: ScheduleDeps, options: SchedulerOptions = {}): Scheduler {
  const timers = options.timers ?? REAL_TIMERS;
  const now = options.now ?? (() => new Date());
  const periodMs = schedulePeriod(deps.tracks);
  const tick = (all: boolean): Promise<void> =>
    scheduleDueTracks(now(), deps, { periodMs, all })
      .then(({ removed }) => removed.forEach((track) => options.onRemovedTrack?.(track)))
      .catch((error: unknown) => options.onError?.(error));
  const started = (options.runAtStart ?? true) ? tick(true) : Promise.resolve();
  const handle = timers.setInterval(() => void tick(false), periodMs);
  return { stop: () => timers.clearInterval(handle), started };
}
