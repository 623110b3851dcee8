/**
 * The SQS worker shared by the fetch and apply functions: each message is a
 * job, read back by `parse` (which refuses a job meant for the other queue),
 * run by the one job use-case (src/sync/run-job.ts) with the function's own
 * use-cases (`execute`), and summarised in one log line and in the metrics
 * serve's job runner reports (function-metrics.ts). A job that could not
 * run at all throws; the batch reports it failed, so SQS retries it and
 * finally dead-letters it — unless no retry can run it either
 * ({@link isUnrunnable}): that message is logged as an error and deleted,
 * since on the FIFO apply queue it would hold its track's later jobs back
 * for every receive (visibility timeout × maxReceiveCount) before the DLQ.
 * Each job runs with its message as the origin of the jobs it sends
 * (job-origin.ts).
 */
import { InterruptedError, messageOf } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { JobBodyNotFoundError } from '../store/errors.ts';
import { runsInFetch, type Job } from '../sync/jobs.ts';
import {
  JobNotRunnableError,
  runJob,
  summarizeJob,
  type DiscoverSource,
  type ExecuteJob,
  type JobDeps,
  type JobResult,
} from '../sync/run-job.ts';
import { UnknownTrackError } from '../sync/track-named.ts';
import { readTrackState, type TrackState } from '../sync/track-state.ts';
import type { FunctionMetrics } from './function-metrics.ts';
import { messageOrigin, withJobOrigin } from './job-origin.ts';
import type { LambdaContext, SqsBatchResponse, SqsEvent, SqsRecord } from './lambda-events.ts';
import { InvalidJobError } from './parse-job.ts';
import { processSqsBatch } from './sqs-batch.ts';
import { JobTooLargeError, readQueuedJob } from './sqs-job-queue.ts';
import type { JobBodyStore } from '../store/ports.ts';
import { webhookArrivalOf, withWebhookArrival } from './webhook-arrival.ts';

export interface SqsJobHandlerOptions {
  readonly log: Logger;
  readonly metrics: FunctionMetrics;
  /** The reader of `tracksFrom` sources this function may read. */
  readonly discover?: DiscoverSource;
  /** For time-to-deploy; default Date.now. */
  readonly now?: () => number;
  /** Where jobs too large for a message wait (sqs-job-queue.ts); only fetch receives such jobs. */
  readonly jobBodies?: () => Promise<JobBodyStore>;
}

/**
 * Time a job asked to stop needs to record what it did and give its track's
 * lease back (a few store writes), with room to spare. Without it Lambda kills
 * a job that outlives the function's timeout (a health wait longer than it)
 * where it stands: no status, no history, and the track's lease held for
 * twice the track's timeout plus a minute, refusing the retries until then.
 */
const STOP_MARGIN_MS = 20_000;

/**
 * A signal aborted `marginMs` before the invocation's time runs out (never
 * without a context, as in tests that call the handler directly), and what
 * clears its timer.
 */
function deadlineSignal(
  context: LambdaContext | undefined,
  marginMs: number,
): { signal: AbortSignal; clear: () => void } {
  const controller = new AbortController();
  if (context === undefined) return { signal: controller.signal, clear: () => undefined };
  const timer = setTimeout(
    () =>
      controller.abort(
        new InterruptedError(
          `stopped ${Math.round(marginMs / 1000)} s before the function's timeout`,
        ),
      ),
    Math.max(0, context.getRemainingTimeInMillis() - marginMs),
  );
  return { signal: controller.signal, clear: () => clearTimeout(timer) };
}

/**
 * Whether the track's gauges are written after `job`: the jobs that change
 * its state's object counts or its suspension, all of them in apply (a
 * discovery is about a source, not a track).
 */
function reportsTrackGauges(job: Job): boolean {
  return !runsInFetch(job) && job.type !== 'discover';
}

/** The state a sync or rollback left, which its result carries; other jobs' is read back. */
function stateOf(done: JobResult, deps: JobDeps, track: string): Promise<TrackState> {
  return done.type === 'sync' || done.type === 'rollback'
    ? Promise.resolve(done.result.state)
    : readTrackState(deps.state, track);
}

/**
 * Whether `error` says the message can never run, however often it comes
 * back: not a job this version reads, or one for the other queue
 * (InvalidJobError); a track or cluster no longer configured, as when a
 * deployment removed it while its jobs waited (UnknownTrackError; one
 * added by a deployment that reached this function last is polled by the
 * schedule at once); a job this function has no port for
 * (JobNotRunnableError); a stored job this function cannot read, or that is
 * gone (JobTooLargeError, JobBodyNotFoundError). Everything else — the
 * store or a cluster unreachable, the track's lease taken, the function's
 * time running out — may pass, and is retried.
 */
export function isUnrunnable(error: unknown): boolean {
  return (
    error instanceof InvalidJobError ||
    error instanceof UnknownTrackError ||
    error instanceof JobNotRunnableError ||
    error instanceof JobTooLargeError ||
    error instanceof JobBodyNotFoundError
  );
}

/**
 * The type and track of a message, from the job when it was read, else from
 * the message attributes the queue sets (sqs-job-queue.ts): never from its
 * body, which a job that did not parse may hold anything in.
 */
function labelsOf(record: SqsRecord, job: Job | undefined): { type?: string; track?: string } {
  return {
    type: job?.type ?? record.messageAttributes?.type?.stringValue,
    track: job?.track ?? record.messageAttributes?.track?.stringValue,
  };
}

/** A handler of SQS batches of jobs. */
export function sqsJobHandler<J extends Job>(
  parse: (body: string) => J,
  execute: ExecuteJob<J>,
  deps: () => Promise<JobDeps>,
  options: SqsJobHandlerOptions,
): (event: SqsEvent, context?: LambdaContext) => Promise<SqsBatchResponse> {
  const { log, metrics, discover } = options;
  const now = options.now ?? Date.now;
  const processBatch = (event: SqsEvent, signal: AbortSignal): Promise<SqsBatchResponse> =>
    processSqsBatch(
      event,
      async (record) => {
        /** Deleted rather than retried, with what tells which job it was, never its content. */
        const drop = (error: unknown, job?: J): void =>
          log.error('job dropped: no retry can run it', {
            messageId: record.messageId,
            ...labelsOf(record, job),
            receiveCount: record.attributes?.ApproximateReceiveCount,
            error,
          });
        let job: J;
        try {
          job = parse(await readQueuedJob(record.body, options.jobBodies));
        } catch (error) {
          if (!isUnrunnable(error)) throw error;
          drop(error);
          return;
        }
        // Jobs this one queues carry the same arrival (webhook-arrival.ts) and, as their
        // origin, this message (job-origin.ts).
        const arrival = webhookArrivalOf(record);
        let ports: JobDeps;
        let done: JobResult;
        try {
          ports = { ...(await deps()), signal };
          done = await withJobOrigin(messageOrigin(record.messageId), () =>
            withWebhookArrival(arrival, () => runJob(job, ports, execute, discover)),
          );
        } catch (error) {
          // Could not run (no config, store or cluster, the track's lease taken): retried by SQS,
          // unless no retry could run it either.
          metrics.countError(job.track, job.type);
          metrics.countJob(job.track, job.type, 'error');
          if (!isUnrunnable(error)) throw error;
          drop(error, job);
          return;
        }
        const summary = summarizeJob(done);
        log[summary.result === 'failed' ? 'warn' : 'info'](`${job.type} finished`, {
          track: job.track,
          trigger: 'trigger' in job ? job.trigger : undefined,
          deliveryId: job.type === 'fetch' ? job.deliveryId : undefined,
          ...summary,
        });
        metrics.countJob(job.track, job.type, summary.result);
        if (summary.result === 'failed') metrics.countError(job.track, job.type);
        const track = ports.tracks.find((candidate) => candidate.name === job.track);
        if (track === undefined) return;
        if (job.type === 'sync' && summary.result === 'applied' && arrival !== undefined) {
          metrics.observeDeploy(track, (now() - arrival) / 1000);
        }
        if (reportsTrackGauges(job)) {
          await stateOf(done, ports, track.name).then(
            (state) => metrics.trackGauges(track, state),
            (error: unknown) =>
              log.warn('track gauges not written', {
                track: track.name,
                error: messageOf(error),
              }),
          );
        }
      },
      (record, error) => log.error('job failed', { messageId: record.messageId, error }),
    );

  return async (event, context) => {
    const deadline = deadlineSignal(context, STOP_MARGIN_MS);
    try {
      return await processBatch(event, deadline.signal);
    } finally {
      deadline.clear();
    }
  };
}
