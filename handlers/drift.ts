/**
 * Schedule (every minute) -> for each track due by its interval, a fetch job
 * (polls the ref: a missed webhook is caught within the interval) and a
 * drift job. Holds no credentials.
 */
import { enqueueDueTracks } from '../src/aws/enqueue-due-tracks.ts';
import { functionLogger } from '../src/aws/function-logger.ts';
import type { ScheduleEvent } from '../src/aws/lambda-events.ts';
import { triggerDeps, type TriggerDeps } from '../src/aws/trigger-deps.ts';
import type { Logger } from '../src/logger.ts';

/** The handler over `deps` (tests pass fakes). */
export function createDriftHandler(
  deps: () => Promise<TriggerDeps> = () => triggerDeps({ fetchQueue: true }),
  log: Logger = functionLogger('drift'),
  now: () => Date = () => new Date(),
) {
  return async (_event: ScheduleEvent): Promise<{ tracks: string[] }> => {
    try {
      const queued = await enqueueDueTracks(now(), await deps());
      if (queued.tracks.length > 0) log.info('due tracks queued', { tracks: queued.tracks });
      return queued;
    } catch (error) {
      // Thrown on: the failed invocation goes to the onFailure destination.
      log.error('scheduling due tracks failed', { error });
      throw error;
    }
  };
}

export const handler = createDriftHandler();
