/** The local stage's drift function: due jobs go to the fetch and apply functions through serverless-offline. */
import { triggerDeps } from '../../src/aws/function-deps.ts';
import { invokeJobQueues } from '../../src/aws/invoke-job-queue.ts';
import { createDriftHandler } from '../drift.ts';

export const handler = createDriftHandler(() => triggerDeps({ fetchQueue: true }, invokeJobQueues));
