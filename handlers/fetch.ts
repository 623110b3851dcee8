/**
 * Fetch queue (SQS) -> resolve the track's ref, render and store the
 * revision -> a sync job on the apply queue. The only function that reads
 * Git credentials. Failed messages are reported one by one and end in the
 * fetch DLQ after their retries.
 */
import { fetchDeps, functionJobBodies } from '../src/aws/function-deps.ts';
import { functionLogger } from '../src/aws/function-logger.ts';
import { functionMetrics } from '../src/aws/function-metrics.ts';
import { sqsJobHandler } from '../src/aws/job-handler.ts';
import { parseFetchJob } from '../src/aws/parse-job.ts';
import { discoverInFetch, executeFetchJob } from '../src/sync/execute-job.ts';

/** The handler over `deps` (tests and the local stage pass their own). */
export function createFetchHandler(
  deps = () => fetchDeps(),
  log = functionLogger('fetch'),
  metrics = functionMetrics(log),
) {
  return sqsJobHandler(parseFetchJob, executeFetchJob, deps, {
    log,
    metrics,
    discover: discoverInFetch,
    // Write-backs of large objects arrive as a name in the store (sqs-job-queue.ts).
    jobBodies: () => functionJobBodies(),
  });
}

export const handler = createFetchHandler();
