/** The local stage's apply function: dependents' syncs go back to it through serverless-offline. */
import { applyDeps } from '../../src/aws/function-deps.ts';
import { invokeJobQueues } from '../../src/aws/invoke-job-queue.ts';
import { createApplyHandler } from '../apply.ts';

export const handler = createApplyHandler(() => applyDeps(invokeJobQueues));
