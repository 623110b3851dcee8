/** The local stage's fetch function: sync jobs go to the apply function through serverless-offline. */
import { fetchDeps } from '../../src/aws/function-deps.ts';
import { invokeJobQueues } from '../../src/aws/invoke-job-queue.ts';
import { createFetchHandler } from '../fetch.ts';

export const handler = createFetchHandler(() => fetchDeps(invokeJobQueues));
