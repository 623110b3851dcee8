/**
 * Connects to a configured cluster. Only the apply side calls this: it is
 * where cluster credentials are read.
 */
import { KubeConfig } from '@kubernetes/client-node';
import type { Cluster } from '../config/types.ts';
import { NotImplementedError } from '../errors.ts';
import { ClusterUnreachableError } from './errors.ts';
import { KubeApiCluster } from './kube-api-cluster.ts';
import type { KubernetesPort } from './kubernetes-port.ts';

/** Reads a secret's value; injected so this module never reads the environment itself. */
export type SecretReader = (
  ref: Extract<Cluster['credentials'], { type: 'kubeconfigSecret' }>['secret'],
) => Promise<string>;

/** Builds the KubeConfig for a configured cluster, with its context selected. */
export async function kubeConfigFor(
  cluster: Cluster,
  readSecret?: SecretReader,
): Promise<KubeConfig> {
  const kc = new KubeConfig();
  const credentials = cluster.credentials;
  switch (credentials.type) {
    case 'kubeconfig':
      if (credentials.path) kc.loadFromFile(credentials.path);
      else kc.loadFromDefault();
      break;
    case 'kubeconfigSecret':
      if (!readSecret)
        throw new NotImplementedError(
          `cluster "${cluster.name}": kubeconfigSecret needs a secret reader`,
        );
      kc.loadFromString(await readSecret(credentials.secret));
      break;
    case 'eks':
      throw new NotImplementedError(
        `cluster "${cluster.name}": EKS credentials are not supported yet; use a kubeconfig`,
      );
  }
  if (cluster.context) {
    if (!kc.getContextObject(cluster.context)) {
      throw new ClusterUnreachableError(
        `cluster "${cluster.name}": the kubeconfig has no context "${cluster.context}"`,
      );
    }
    kc.setCurrentContext(cluster.context);
  }
  if (!kc.getCurrentCluster()) {
    throw new ClusterUnreachableError(
      `cluster "${cluster.name}": the kubeconfig has no current cluster`,
    );
  }
  return kc;
}

/** The KubernetesPort of a configured cluster. */
export async function connectCluster(
  cluster: Cluster,
  readSecret?: SecretReader,
): Promise<KubernetesPort> {
  return KubeApiCluster.fromKubeConfig(await kubeConfigFor(cluster, readSecret));
}
