/**
 * What the drift and rollback functions run with: the config, the store
 * (read only, by their IAM roles) and both queues. No secret reader: these
 * functions hold no credentials of any kind.
 */
import { readEnv, type Environment } from '../config/env.ts';
import type { Track } from '../config/types.ts';
import type { ArtifactStore, StateStore } from '../store/ports.ts';
import type { JobQueue } from '../sync/jobs.ts';
import { functionConfig } from './function-config.ts';
import { FUNCTION_ENV } from './function-env.ts';
import { functionStore } from './function-store.ts';
import { invokeJobQueueFromEnv } from './invoke-job-queue.ts';
import { sqsClient } from './sqs-client.ts';
import { SqsJobQueue } from './sqs-job-queue.ts';

export interface TriggerDeps {
  readonly tracks: readonly Track[];
  readonly artifacts: ArtifactStore;
  readonly state: StateStore;
  readonly queue: JobQueue;
}

let queue: JobQueue | undefined;

/**
 * The drift and rollback functions' ports. `fetchQueue`: whether the function
 * polls refs (drift) and so needs the fetch queue; rollback only ever sends
 * to the apply queue, and its role allows nothing else.
 */
export async function triggerDeps(
  options: { readonly fetchQueue: boolean },
  env?: Environment,
): Promise<TriggerDeps> {
  const config = await functionConfig(env);
  const store = functionStore(config, env);
  queue ??=
    invokeJobQueueFromEnv({ apply: true, fetch: options.fetchQueue }, env) ??
    new SqsJobQueue({
      client: sqsClient(),
      applyQueueUrl: readEnv(FUNCTION_ENV.applyQueueUrl, env),
      ...(options.fetchQueue ? { fetchQueueUrl: readEnv(FUNCTION_ENV.fetchQueueUrl, env) } : {}),
    });
  return { tracks: config.tracks, artifacts: store.artifacts, state: store.state, queue };
}
