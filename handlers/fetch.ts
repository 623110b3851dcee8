/**
 * Fetch queue (SQS) -> resolve the track's ref, render and store the
 * revision -> a sync job on the apply queue. Failed messages are reported
 * one by one and end in the fetch DLQ after their retries.
 */
import { fetchDeps } from '../src/aws/fetch-deps.ts';
import { functionLogger } from '../src/aws/function-logger.ts';
import type { SqsBatchResponse, SqsEvent } from '../src/aws/lambda-events.ts';
import { parseFetchJob } from '../src/aws/parse-job.ts';
import { runFetchJob, type RunFetchJobDeps } from '../src/aws/run-fetch-job.ts';
import { processSqsBatch } from '../src/aws/sqs-batch.ts';
import type { Logger } from '../src/logger.ts';

/** The handler over `deps` (tests pass fakes). */
export function createFetchHandler(
  deps: () => Promise<RunFetchJobDeps> = () => fetchDeps(),
  log: Logger = functionLogger('fetch'),
) {
  return (event: SqsEvent): Promise<SqsBatchResponse> =>
    processSqsBatch(
      event,
      async (record) => {
        const job = parseFetchJob(record.body);
        const result = await runFetchJob(job, await deps());
        log[result.outcome === 'failed' ? 'warn' : 'info'](`fetch ${result.outcome}`, {
          track: job.track,
          trigger: job.trigger,
          deliveryId: job.deliveryId,
          revision: result.revision,
          error: result.error,
        });
      },
      (record, error) => log.error('fetch job failed', { messageId: record.messageId, error }),
    );
}

export const handler = createFetchHandler();
