/**
 * Cluster connections of the apply function, the only function that builds
 * cluster credentials: a kubeconfig from Secrets Manager or SSM
 * (`kubeconfigSecret`), an EKS cluster through an IAM token (`eks`), or a
 * kubeconfig file bundled with the function. Each connection is kept for
 * the container's lifetime (its discovery cache and keep-alive sockets with
 * it); one built from a secret is rebuilt every few minutes so a rotated
 * kubeconfig is picked up, and EKS tokens renew themselves before expiry.
 */
import type { ClusterEndpoint } from '../cluster/cluster-endpoint.ts';
import { endpointFor } from '../cluster/connect-cluster.ts';
import { KubeApiCluster } from '../cluster/kube-api-cluster.ts';
import type { KubernetesPort } from '../cluster/kubernetes-port.ts';
import type { Cluster } from '../config/types.ts';
import { eksEndpoint, sdkEksAccess, type EksAccess } from './eks-endpoint.ts';
import type { SecretReader } from './secrets.ts';

/** Connects to a configured cluster. */
export type ClusterConnector = (cluster: Cluster) => Promise<KubernetesPort>;

export interface ClusterConnectorOptions {
  /** Reads `kubeconfigSecret` references. */
  readonly readSecret: SecretReader;
  /** The AWS calls behind EKS connections; default the AWS SDK. */
  readonly eks?: EksAccess;
  /** Turns an endpoint into a port; default {@link KubeApiCluster.forEndpoint}. */
  readonly connect?: (endpoint: ClusterEndpoint) => KubernetesPort;
  readonly now?: () => number;
  /** How long a connection built from a secret is reused; default 5 minutes. */
  readonly secretTtlMs?: number;
}

const DEFAULT_SECRET_TTL_MS = 5 * 60_000;

/** A {@link ClusterConnector} caching one connection per cluster; see the module comment. */
export function createClusterConnector(options: ClusterConnectorOptions): ClusterConnector {
  const now = options.now ?? Date.now;
  const connect =
    options.connect ?? ((endpoint: ClusterEndpoint) => KubeApiCluster.forEndpoint(endpoint));
  const secretTtl = options.secretTtlMs ?? DEFAULT_SECRET_TTL_MS;
  const cache = new Map<string, { port: Promise<KubernetesPort>; expires: number }>();

  const endpoint = async (cluster: Cluster): Promise<ClusterEndpoint> => {
    const credentials = cluster.credentials;
    if (credentials.type !== 'eks') return endpointFor(cluster, { readSecret: options.readSecret });
    const eks = options.eks ?? sdkEksAccess();
    return eksEndpoint(
      {
        name: credentials.name,
        region: credentials.region,
        ...(credentials.roleArn === undefined ? {} : { roleArn: credentials.roleArn }),
      },
      eks,
      { now: () => new Date(now()) },
    );
  };

  return (cluster) => {
    const hit = cache.get(cluster.name);
    if (hit !== undefined && hit.expires > now()) return hit.port;
    const port = endpoint(cluster).then(connect);
    const expires =
      cluster.credentials.type === 'kubeconfigSecret'
        ? now() + secretTtl
        : Number.POSITIVE_INFINITY;
    const entry = { port, expires };
    cache.set(cluster.name, entry);
    // A failed connection is not kept: the next job tries again.
    port.catch(() => {
      if (cache.get(cluster.name) === entry) cache.delete(cluster.name);
    });
    return port;
  };
}
