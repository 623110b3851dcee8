/**
 * What the webhook function runs with: the config, its webhook signing
 * secrets (the only secrets it may read), the delivery log and the fetch
 * queue. Built once per container.
 */
import { readEnv, type Environment } from '../config/env.ts';
import type { AcceptWebhookDeps } from './accept-webhook.ts';
import { functionConfig } from './function-config.ts';
import { FUNCTION_ENV } from './function-env.ts';
import { functionStore } from './function-store.ts';
import type { JobQueue } from '../sync/jobs.ts';
import { invokeJobQueueFromEnv } from './invoke-job-queue.ts';
import { createAwsSecretReader, type SecretReader } from './secrets.ts';
import { sqsClient } from './sqs-client.ts';
import { SqsJobQueue } from './sqs-job-queue.ts';

let readSecret: SecretReader | undefined;
let queue: JobQueue | undefined;

/** The webhook function's ports. */
export async function webhookDeps(env?: Environment): Promise<AcceptWebhookDeps> {
  const config = await functionConfig(env);
  readSecret ??= createAwsSecretReader(env === undefined ? {} : { env });
  // Only the fetch queue: a webhook never asks for an apply directly.
  queue ??=
    invokeJobQueueFromEnv({ fetch: true }, env) ??
    new SqsJobQueue({
      client: sqsClient(),
      fetchQueueUrl: readEnv(FUNCTION_ENV.fetchQueueUrl, env),
    });
  return { config, readSecret, deliveries: functionStore(config, env).deliveries, queue };
}
