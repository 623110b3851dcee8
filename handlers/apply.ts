/**
 * Apply queue (SQS FIFO, one message group per track) -> sync, drift or
 * rollback against the track's cluster. The only function that builds
 * cluster credentials.
 */
import { checkHealthExprs } from '../src/apply/health-exprs.ts';
import { functionConfigFile } from '../src/aws/function-config.ts';
import { applyDeps } from '../src/aws/function-deps.ts';
import { functionLogger } from '../src/aws/function-logger.ts';
import { functionMetrics } from '../src/aws/function-metrics.ts';
import { sqsJobHandler } from '../src/aws/job-handler.ts';
import { parseApplyJob } from '../src/aws/parse-job.ts';
import { discoverInApply, executeApplyJob } from '../src/sync/execute-job.ts';

/**
 * The apply function's deps, its config's CEL health expressions checked: it
 * alone judges health, so only its bundle carries the CEL parser.
 */
export async function checkedApplyDeps(load: typeof applyDeps = applyDeps) {
  const deps = await load();
  await checkHealthExprs(deps, functionConfigFile());
  return deps;
}

/** The handler over `deps` (tests and the local stage pass their own). */
export function createApplyHandler(
  deps = () => checkedApplyDeps(),
  log = functionLogger('apply'),
  metrics = functionMetrics(log),
) {
  return sqsJobHandler(parseApplyJob, executeApplyJob, deps, {
    log,
    metrics,
    discover: discoverInApply,
  });
}

export const handler = createApplyHandler();
