/**
 * Schedule (every minute) -> for each track due by its interval, a fetch job
 * (polls the ref: a missed webhook is caught within the interval) and a
 * drift job. Holds no credentials. A track that left the config but still
 * has state is logged and counted (`driftless_track_removed_from_config`)
 * on every tick; the track of a deleted GitTrack whose objects are being
 * collected is only counted (`driftless_track_collecting`).
 */
import { triggerDeps, type TriggerDeps } from '../src/aws/function-deps.ts';
import { functionLogger } from '../src/aws/function-logger.ts';
import { functionMetrics, type FunctionMetrics } from '../src/aws/function-metrics.ts';
import type { ScheduleEvent } from '../src/aws/lambda-events.ts';
import type { Logger } from '../src/logger.ts';
import { KeptTrackStates } from '../src/sync/kept-track-states.ts';
import {
  REMOVED_TRACK_MESSAGE,
  scheduleDueTracks,
  type ScheduledTick,
} from '../src/sync/schedule.ts';

/** serverless.yml's `rate(1 minute)`: a track due before the next tick is taken at this one. */
const SCHEDULE_PERIOD_MS = 60_000;

/** The handler over `deps` (tests and the local stage pass their own). */
export function createDriftHandler(
  deps: () => Promise<TriggerDeps> = () => triggerDeps({ fetchQueue: true }),
  log: Logger = functionLogger('drift'),
  now: () => Date = () => new Date(),
  metrics: FunctionMetrics = functionMetrics(log),
) {
  // Kept while the function stays warm: a tick reads only the states that changed since the last.
  const keptStates = new KeptTrackStates();
  return async (_event: ScheduleEvent): Promise<ScheduledTick> => {
    try {
      const queued = await scheduleDueTracks(
        now(),
        { ...(await deps()), keptStates },
        {
          periodMs: SCHEDULE_PERIOD_MS,
        },
      );
      if (queued.tracks.length > 0) log.info('due tracks queued', { tracks: queued.tracks });
      for (const track of queued.removed) {
        log.warn(REMOVED_TRACK_MESSAGE, { track });
        metrics.removedFromConfig(track);
      }
      // Not logged: the discovery this tick queued collects it, and reports a collection that
      // fails or is put off (the apply function's discover job). Nothing here is to delete.
      for (const track of queued.collecting) metrics.collecting(track.name);
      // Not logged either: the discovery reports the refused document (and the GitTrack's status).
      for (const track of queued.held) metrics.held(track.name);
      return queued;
    } catch (error) {
      // Thrown on: the failed invocation goes to the onFailure destination.
      log.error('scheduling due tracks failed', { error });
      throw error;
    }
  };
}

export const handler = createDriftHandler();
