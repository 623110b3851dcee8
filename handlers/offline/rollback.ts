/** The local stage's rollback function: its jobs go to the apply function (the sync action's to fetch) through serverless-offline. */
import { triggerDeps } from '../../src/aws/function-deps.ts';
import { invokeJobQueues } from '../../src/aws/invoke-job-queue.ts';
import { createRollbackHandler } from '../rollback.ts';

export const handler = createRollbackHandler(() =>
  triggerDeps({ fetchQueue: true }, invokeJobQueues),
);
