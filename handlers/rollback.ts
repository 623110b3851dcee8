/**
 * Manual invoke `{"track": "web", "revision": "<sha>"}` or
 * `{"track": "web", "previous": true}` -> check the revision is stored ->
 * queue a rollback job (the apply function applies it and pins the track).
 * Answers `{track, revision, queued: true}`. `{"track": "web", "action":
 * "suspend|resume|sync|unpin|delete"}` queues that operation instead (a
 * lifecycle job, or a fetch for sync) and answers `{track, action, queued:
 * true}`. A bad request or a revision that is not stored fails the
 * invocation with a message saying why.
 */
import { functionLogger } from '../src/aws/function-logger.ts';
import { invocationOrigin, withJobOrigin } from '../src/aws/job-origin.ts';
import type { LambdaContext } from '../src/aws/lambda-events.ts';
import {
  parseRollbackRequest,
  requestRollback,
  type RollbackAnswer,
} from '../src/sync/request-action.ts';
import { triggerDeps, type TriggerDeps } from '../src/aws/function-deps.ts';
import type { Logger } from '../src/logger.ts';

/** The handler over `deps` (tests pass fakes). */
export function createRollbackHandler(
  deps: () => Promise<TriggerDeps> = () => triggerDeps({ fetchQueue: true }),
  log: Logger = functionLogger('rollback'),
) {
  return async (event: unknown, context?: LambdaContext): Promise<RollbackAnswer> => {
    try {
      const request = parseRollbackRequest(event);
      const ports = await deps();
      // Each invocation is a request of its own: a second suspend minutes after the first is
      // queued again, not dropped as its duplicate (job-origin.ts).
      const queued = await withJobOrigin(invocationOrigin(context), () =>
        requestRollback(request, ports),
      );
      log.info('rollback queued', queued);
      return queued;
    } catch (error) {
      log.error('rollback refused', { error });
      throw error;
    }
  };
}

export const handler = createRollbackHandler();
