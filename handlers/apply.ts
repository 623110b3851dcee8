/**
 * Apply queue (SQS FIFO, one message group per track) -> sync, drift or
 * rollback against the track's cluster. The only function that builds
 * cluster credentials.
 */
import { applyDeps } from '../src/aws/apply-deps.ts';
import { functionLogger } from '../src/aws/function-logger.ts';
import type { SqsBatchResponse, SqsEvent } from '../src/aws/lambda-events.ts';
import { parseApplyJob } from '../src/aws/parse-job.ts';
import { runApplyJob, type RunApplyJobDeps } from '../src/aws/run-apply-job.ts';
import { processSqsBatch } from '../src/aws/sqs-batch.ts';
import type { Logger } from '../src/logger.ts';

/** The handler over `deps` (tests pass fakes). */
export function createApplyHandler(
  deps: () => Promise<RunApplyJobDeps> = () => applyDeps(),
  log: Logger = functionLogger('apply'),
) {
  return (event: SqsEvent): Promise<SqsBatchResponse> =>
    processSqsBatch(
      event,
      async (record) => {
        const job = parseApplyJob(record.body);
        const result = await runApplyJob(job, await deps());
        const failed = 'result' in result && result.result === 'failed';
        log[failed ? 'warn' : 'info'](`${job.type} finished`, {
          track: job.track,
          revision: result.revision,
          result: 'result' in result ? result.result : undefined,
          corrected: 'corrected' in result ? result.corrected : undefined,
          drifted: 'drifted' in result ? result.drifted.length : undefined,
          error: 'error' in result ? result.error : undefined,
        });
      },
      (record, error) => log.error('apply job failed', { messageId: record.messageId, error }),
    );
}

export const handler = createApplyHandler();
