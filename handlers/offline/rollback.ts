/** The local stage's rollback function: the job goes to the apply function through serverless-offline. */
import { triggerDeps } from '../../src/aws/function-deps.ts';
import { invokeJobQueues } from '../../src/aws/invoke-job-queue.ts';
import { createRollbackHandler } from '../rollback.ts';

export const handler = createRollbackHandler(() =>
  triggerDeps({ fetchQueue: false }, invokeJobQueues),
);
