/**
 * Connects to a configured cluster. Only the apply side calls this: it is
 * where cluster credentials are read.
 */
import { cwd } from 'node:process';
import { formatSecretRef } from '../config/secret-ref.ts';
import type { Cluster } from '../config/types.ts';
import { NotImplementedError } from '../errors.ts';
import { KubeconfigError } from './errors.ts';
import {
  endpointFromContext,
  type ClusterEndpoint,
  type EndpointOptions,
} from './cluster-endpoint.ts';
import { KubeApiCluster } from './kube-api-cluster.ts';
import {
  parseKubeconfig,
  readDefaultKubeconfig,
  readKubeconfigFile,
  resolveContext,
  type Kubeconfig,
} from './kubeconfig.ts';
import type { KubernetesPort } from './kubernetes-port.ts';

/** Reads a secret's value; injected so this module never reads the environment itself. */
export type SecretReader = (
  ref: Extract<Cluster['credentials'], { type: 'kubeconfigSecret' }>['secret'],
) => Promise<string>;

export interface ConnectOptions extends EndpointOptions {
  readonly readSecret?: SecretReader;
  /** Where `$KUBECONFIG` and `$HOME` are looked up; default the process environment. */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

async function kubeconfigOf(cluster: Cluster, options: ConnectOptions): Promise<Kubeconfig> {
  const credentials = cluster.credentials;
  switch (credentials.type) {
    case 'kubeconfig':
      return credentials.path
        ? readKubeconfigFile(credentials.path)
        : readDefaultKubeconfig(options.env);
    case 'kubeconfigSecret': {
      if (!options.readSecret)
        throw new NotImplementedError(
          `cluster "${cluster.name}": kubeconfigSecret needs a secret reader`,
        );
      const ref = credentials.secret;
      // Relative paths in a kubeconfig from a secret have no file to be relative to.
      return parseKubeconfig(
        await options.readSecret(ref),
        `from secret ${formatSecretRef(ref)}`,
        cwd(),
      );
    }
    case 'eks':
      throw new NotImplementedError(
        `cluster "${cluster.name}": EKS credentials are only available in the apply function`,
      );
  }
}

/** The API server endpoint of a configured cluster, with its context (or the current one) resolved. */
export async function endpointFor(
  cluster: Cluster,
  options: ConnectOptions = {},
): Promise<ClusterEndpoint> {
  try {
    const kubeconfig = await kubeconfigOf(cluster, options);
    return endpointFromContext(resolveContext(kubeconfig, cluster.context), options);
  } catch (error) {
    if (error instanceof KubeconfigError) {
      throw new KubeconfigError(`cluster "${cluster.name}": ${error.message}`, { cause: error });
    }
    throw error;
  }
}

/** The KubernetesPort of a configured cluster. */
export async function connectCluster(
  cluster: Cluster,
  options: ConnectOptions = {},
): Promise<KubernetesPort> {
  return KubeApiCluster.forEndpoint(await endpointFor(cluster, options));
}

/** The endpoint of a context (default: the current one) of a kubeconfig file. */
export function endpointFromFile(path: string, context?: string): ClusterEndpoint {
  return endpointFromContext(resolveContext(readKubeconfigFile(path), context));
}
