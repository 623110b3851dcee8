/**
 * What the apply function runs with: the config, the store and the cluster
 * connections — the only place cluster credentials are read. Built once per
 * container, so connections (and EKS tokens) are reused by warm invocations.
 */
import type { Environment } from '../config/env.ts';
import { createClusterConnector, type ClusterConnector } from './cluster-connector.ts';
import { functionConfig } from './function-config.ts';
import { functionStore } from './function-store.ts';
import type { RunApplyJobDeps } from './run-apply-job.ts';
import { createAwsSecretReader } from './secrets.ts';

let connect: ClusterConnector | undefined;

/** The apply function's ports. */
export async function applyDeps(env?: Environment): Promise<RunApplyJobDeps> {
  const config = await functionConfig(env);
  const store = functionStore(config, env);
  connect ??= createClusterConnector({
    readSecret: createAwsSecretReader(env === undefined ? {} : { env }),
  });
  return {
    tracks: config.tracks,
    clusters: config.clusters,
    connect,
    artifacts: store.artifacts,
    state: store.state,
  };
}
