/** The local stage's webhook function: jobs go to the fetch function through serverless-offline. */
import { webhookDeps } from '../../src/aws/function-deps.ts';
import { invokeJobQueues } from '../../src/aws/invoke-job-queue.ts';
import { createWebhookHandler } from '../webhook.ts';

export const handler = createWebhookHandler(() => webhookDeps(invokeJobQueues));
