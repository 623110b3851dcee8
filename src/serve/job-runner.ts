/**
 * Runs the jobs the queue hands out through the one job use-case
 * (src/sync/run-job.ts), and turns each result into logs and metrics. The
 * follow-up jobs a job asks for go back onto the queue behind their track's
 * other jobs. A failure is recorded and reported, never thrown: one bad
 * track must not stop the others.
 */
import { messageOf } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { Job, JobQueue } from '../sync/jobs.ts';
import { discoverAny, executeJob } from '../sync/execute-job.ts';
import { runJob, summarizeJob, type ExecuteJob, type JobDeps } from '../sync/run-job.ts';
import type { ServeMetrics } from './serve-metrics.ts';
import type { JobContext } from './track-queue.ts';

export interface JobRunnerDeps {
  /** The ports jobs run with; the queue is the runner's own. */
  readonly ports: Omit<JobDeps, 'queue'>;
  /** Where follow-up jobs go: the same queue, behind their track's other jobs. */
  readonly enqueue: (job: Job, context: JobContext) => Promise<void>;
  /** Told when a discover job published a source's tracks: the process reads its track list again. */
  readonly onDiscovered?: () => Promise<void>;
  readonly metrics: ServeMetrics;
  readonly logger: Logger;
  /** The use-cases; default the real ones. Unit tests pass fakes. */
  readonly execute?: ExecuteJob;
  readonly now?: () => number;
}

/** The queue's `run` function over `deps`. */
export function createJobRunner(deps: JobRunnerDeps) {
  const now = deps.now ?? Date.now;

  return async (job: Job, context: JobContext): Promise<void> => {
    const log = deps.logger.child({
      track: job.track,
      job: job.type,
      trigger: 'trigger' in job ? job.trigger : undefined,
      deliveryId: job.type === 'fetch' ? job.deliveryId : undefined,
      revision: job.type === 'sync' || job.type === 'rollback' ? job.revision : undefined,
    });
    const queue: JobQueue = {
      // Shutting down: the artifact is stored, and the next start's poll syncs it.
      enqueue: (next) =>
        deps.enqueue(next, context).catch((error: unknown) =>
          log.warn('follow-up job not queued', {
            track: next.track,
            next: next.type,
            error: messageOf(error),
          }),
        ),
    };
    const started = now();
    let summary;
    try {
      summary = summarizeJob(
        await runJob(job, { ...deps.ports, queue }, deps.execute ?? executeJob, discoverAny),
      );
    } catch (error) {
      // The use-case could not record its own result (store or cluster unreachable, a bug).
      deps.metrics.countError(job.track, job.type);
      deps.metrics.countJob(job.track, job.type, 'error');
      log.error('job failed', { error: messageOf(error), durationMs: now() - started });
      return;
    }
    if (job.type === 'discover') {
      await deps
        .onDiscovered?.()
        .catch((error: unknown) =>
          log.warn('published tracks not read', { error: messageOf(error) }),
        );
    }
    const fields = {
      result: summary.result,
      revision: summary.revision ?? undefined,
      durationMs: now() - started,
    };
    deps.metrics.countJob(job.track, job.type, summary.result);
    if (summary.result === 'failed') {
      deps.metrics.countError(job.track, job.type);
      log.warn(`${job.type} failed`, { ...fields, error: summary.error });
    } else {
      log.info(`${job.type} finished`, fields);
    }
    const track = deps.ports.tracks.find((candidate) => candidate.name === job.track);
    if (job.type === 'sync' && summary.result === 'applied' && context.receivedAt !== undefined) {
      if (track) deps.metrics.observeDeploy(track, (now() - context.receivedAt) / 1000);
    }
  };
}
