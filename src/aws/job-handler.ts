/**
 * The SQS worker shared by the fetch and apply functions: each message is a
 * job, read back by `parse` (which refuses a job meant for the other queue),
 * run by the one job use-case (src/sync/run-job.ts) with the function's own
 * use-cases (`execute`), and summarised in one log line. A job that could not run at all throws; the batch reports it failed,
 * so SQS retries it and finally dead-letters it.
 */
import type { Logger } from '../logger.ts';
import type { Job } from '../sync/jobs.ts';
import {
  runJob,
  summarizeJob,
  type DiscoverSource,
  type ExecuteJob,
  type JobDeps,
} from '../sync/run-job.ts';
import type { SqsBatchResponse, SqsEvent } from './lambda-events.ts';
import { processSqsBatch } from './sqs-batch.ts';

/** A handler of SQS batches of jobs. */
export function sqsJobHandler<J extends Job>(
  parse: (body: string) => J,
  execute: ExecuteJob<J>,
  deps: () => Promise<JobDeps>,
  log: Logger,
  discover?: DiscoverSource,
): (event: SqsEvent) => Promise<SqsBatchResponse> {
  return (event) =>
    processSqsBatch(
      event,
      async (record) => {
        const job = parse(record.body);
        const summary = summarizeJob(await runJob(job, await deps(), execute, discover));
        log[summary.result === 'failed' ? 'warn' : 'info'](`${job.type} finished`, {
          track: job.track,
          trigger: 'trigger' in job ? job.trigger : undefined,
          deliveryId: job.type === 'fetch' ? job.deliveryId : undefined,
          ...summary,
        });
      },
      (record, error) => log.error('job failed', { messageId: record.messageId, error }),
    );
}
