/** The local stage's dashboard function: actions go to the fetch and apply functions through serverless-offline. */
import { dashboardDeps } from '../../src/aws/function-deps.ts';
import { invokeJobQueues } from '../../src/aws/invoke-job-queue.ts';
import { createDashboardHandler } from '../dashboard.ts';

export const handler = createDashboardHandler(() => dashboardDeps(invokeJobQueues));
