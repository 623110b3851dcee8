/**
 * Apply queue (SQS FIFO, one message group per track) -> sync, drift or
 * rollback against the track's cluster. The only function that builds
 * cluster credentials.
 */
import { applyDeps } from '../src/aws/function-deps.ts';
import { functionLogger } from '../src/aws/function-logger.ts';
import { sqsJobHandler } from '../src/aws/job-handler.ts';
import { parseApplyJob } from '../src/aws/parse-job.ts';
import { executeApplyJob } from '../src/sync/execute-job.ts';

/** The handler over `deps` (tests and the local stage pass their own). */
export function createApplyHandler(deps = () => applyDeps(), log = functionLogger('apply')) {
  return sqsJobHandler(parseApplyJob, executeApplyJob, deps, log);
}

export const handler = createApplyHandler();
