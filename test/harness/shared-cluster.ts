/**
 * Access to the one test cluster of a test run. `test/run-tests.ts` starts it
 * before any test file and passes its kubeconfig in DRIFTLESS_TEST_KUBECONFIG;
 * each test works in a namespace of its own.
 */
import { randomBytes } from 'node:crypto';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import type { ClusterEndpoint } from '../../src/cluster/cluster-endpoint.ts';
import { endpointFromFile } from '../../src/cluster/connect-cluster.ts';
import { KubeApiCluster } from '../../src/cluster/kube-api-cluster.ts';

export const TEST_KUBECONFIG_VARIABLE = 'DRIFTLESS_TEST_KUBECONFIG';

/** The test cluster's kubeconfig; throws (so the test fails, never skips) when there is none. */
export function sharedKubeconfigPath(): string {
  const path = process.env[TEST_KUBECONFIG_VARIABLE];
  if (!path) {
    throw new Error(
      `${TEST_KUBECONFIG_VARIABLE} is not set: integration tests need the test cluster; run them with "npm test" ` +
        `(or "npm test -- test/integration/<file>.test.ts")`,
    );
  }
  return path;
}

/** The shared test cluster as driftless reaches it (its own kubeconfig reader). */
export function sharedClusterEndpoint(): ClusterEndpoint {
  return endpointFromFile(sharedKubeconfigPath());
}

/** A driftless connection to the shared test cluster. */
export function sharedCluster(): KubeApiCluster {
  return KubeApiCluster.forEndpoint(sharedClusterEndpoint());
}

/**
 * client-node's KubeConfig for the shared test cluster: tests set up and
 * inspect the cluster through client-node, so what they see does not depend
 * on the code under test.
 */
export function sharedKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(sharedKubeconfigPath());
  return kc;
}

/** Creates a namespace with a unique name; delete it when the test is done. */
export async function createTestNamespace(kc: KubeConfig, prefix: string): Promise<string> {
  const name = `${prefix}-${randomBytes(3).toString('hex')}`;
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
  return name;
}
