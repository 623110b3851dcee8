/**
 * What the apply function runs with: the config, the store, the apply queue
 * (for dependents a job unblocks) and the cluster connections — the only
 * place cluster credentials are read. Built once per
 * container, so connections (and EKS tokens) are reused by warm invocations.
 */
import { readEnv, type Environment } from '../config/env.ts';
import type { JobQueue } from '../sync/jobs.ts';
import { createClusterConnector, type ClusterConnector } from './cluster-connector.ts';
import { functionConfig } from './function-config.ts';
import { FUNCTION_ENV } from './function-env.ts';
import { functionStore } from './function-store.ts';
import { invokeJobQueueFromEnv } from './invoke-job-queue.ts';
import type { RunApplyJobDeps } from './run-apply-job.ts';
import { createAwsSecretReader } from './secrets.ts';
import { sqsClient } from './sqs-client.ts';
import { SqsJobQueue } from './sqs-job-queue.ts';

let connect: ClusterConnector | undefined;
let queue: JobQueue | undefined;

/** The apply function's ports. */
export async function applyDeps(env?: Environment): Promise<RunApplyJobDeps> {
  const config = await functionConfig(env);
  const store = functionStore(config, env);
  connect ??= createClusterConnector({
    readSecret: createAwsSecretReader(env === undefined ? {} : { env }),
  });
  queue ??=
    invokeJobQueueFromEnv({ apply: true }, env) ??
    new SqsJobQueue({
      client: sqsClient(),
      applyQueueUrl: readEnv(FUNCTION_ENV.applyQueueUrl, env),
    });
  return {
    tracks: config.tracks,
    clusters: config.clusters,
    connect,
    artifacts: store.artifacts,
    state: store.state,
    queue,
  };
}
