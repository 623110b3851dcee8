/** A KubeTransport that counts the requests going through it, by method. */
import type { ClusterEndpoint } from '../../src/cluster/cluster-endpoint.ts';
import { createKubeTransport, type KubeTransport } from '../../src/cluster/kube-http.ts';

export interface CountingTransport {
  readonly transport: KubeTransport;
  /** Requests sent so far. */
  total(): number;
  /** e.g. {GET: 3, PATCH: 1}. */
  byMethod(): Record<string, number>;
}

export function countingTransport(endpoint: ClusterEndpoint): CountingTransport {
  const inner = createKubeTransport(endpoint);
  const counts: Record<string, number> = {};
  return {
    transport: (request) => {
      counts[request.method] = (counts[request.method] ?? 0) + 1;
      return inner(request);
    },
    total: () => Object.values(counts).reduce((sum, n) => sum + n, 0),
    byMethod: () => ({ ...counts }),
  };
}
