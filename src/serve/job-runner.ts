/**
 * Runs the jobs the queue hands out: each job type to its use-case, the
 * follow-up syncs a job asks for (a fetch's revision, dependents a sync
 * unblocked) back onto the queue, and every outcome into logs and metrics. A failure is recorded and reported, never thrown: one bad
 * track must not stop the others.
 */
import type { Track } from '../config/types.ts';
import type { DriftJob, FetchJob, Job, RollbackJob, SyncJob } from '../sync/jobs.ts';
import type { Logger } from '../logger.ts';
import type { ServeMetrics } from './serve-metrics.ts';
import type { JobContext } from './track-queue.ts';
import { messageOf } from '../errors.ts';

/** What a job did, reduced to what logs and metrics need. */
export interface JobOutcome {
  /** `applied`, `unchanged`, `failed`, `skipped`, `stored`, `corrected`, ... as the use-case says. */
  readonly result: string;
  readonly revision?: string | null;
  /** Why the job failed; set when `result` is `failed`. */
  readonly error?: string;
  /** Sync jobs to queue next: a fetch's new revision, the dependents a sync made Ready for. */
  readonly next?: readonly SyncJob[];
}

/** The use-cases, one per job type; `use-case-handlers.ts` wires the real ones. */
export interface JobHandlers {
  fetch(track: Track, job: FetchJob): Promise<JobOutcome>;
  sync(track: Track, job: SyncJob): Promise<JobOutcome>;
  drift(track: Track, job: DriftJob): Promise<JobOutcome>;
  rollback(track: Track, job: RollbackJob): Promise<JobOutcome>;
}

export interface JobRunnerDeps {
  readonly tracks: readonly Track[];
  readonly handlers: JobHandlers;
  /** Where follow-up sync jobs go: the same queue, behind their track's other jobs. */
  readonly enqueue: (job: Job, context: JobContext) => Promise<void>;
  readonly metrics: ServeMetrics;
  readonly logger: Logger;
  readonly now?: () => number;
}

async function dispatch(track: Track, job: Job, handlers: JobHandlers): Promise<JobOutcome> {
  switch (job.type) {
    case 'fetch':
      return handlers.fetch(track, job);
    case 'sync':
      return handlers.sync(track, job);
    case 'drift':
      return handlers.drift(track, job);
    case 'rollback':
      return handlers.rollback(track, job);
  }
}

/** The queue's `run` function over `deps`. */
export function createJobRunner(deps: JobRunnerDeps) {
  const now = deps.now ?? Date.now;
  const byName = new Map(deps.tracks.map((track) => [track.name, track]));

  return async (job: Job, context: JobContext): Promise<void> => {
    const log = deps.logger.child({
      track: job.track,
      job: job.type,
      trigger: 'trigger' in job ? job.trigger : undefined,
      deliveryId: job.type === 'fetch' ? job.deliveryId : undefined,
      revision: job.type === 'sync' || job.type === 'rollback' ? job.revision : undefined,
    });
    const track = byName.get(job.track);
    if (!track) {
      // Only a bug (every producer takes names from the config) gets here.
      deps.metrics.countError(job.track, job.type);
      log.error('job for an unknown track dropped');
      return;
    }
    const started = now();
    let outcome: JobOutcome;
    try {
      outcome = await dispatch(track, job, deps.handlers);
    } catch (error) {
      // The use-case could not record its own result (store or cluster unreachable, a bug).
      deps.metrics.countError(track.name, job.type);
      deps.metrics.countJob(track.name, job.type, 'error');
      log.error('job failed', { error: messageOf(error), durationMs: now() - started });
      return;
    }
    const fields = {
      result: outcome.result,
      revision: outcome.revision ?? undefined,
      durationMs: now() - started,
    };
    deps.metrics.countJob(track.name, job.type, outcome.result);
    if (outcome.result === 'failed') {
      deps.metrics.countError(track.name, job.type);
      log.warn(`${job.type} failed`, { ...fields, error: outcome.error });
    } else {
      log.info(`${job.type} finished`, fields);
    }
    if (job.type === 'sync' && outcome.result === 'applied' && context.receivedAt !== undefined) {
      deps.metrics.observeDeploy(track, (now() - context.receivedAt) / 1000);
    }
    for (const next of outcome.next ?? []) {
      try {
        await deps.enqueue(next, context);
      } catch (error) {
        // Shutting down: the artifact is stored, and the next start's poll syncs it.
        log.warn('sync job not queued', {
          track: next.track,
          revision: next.revision,
          error: messageOf(error),
        });
      }
    }
  };
}
