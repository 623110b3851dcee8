import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createClusterConnector } from '../../src/aws/cluster-connector.ts';
import type { EksAccess } from '../../src/aws/eks-endpoint.ts';
import type { ClusterEndpoint } from '../../src/cluster/cluster-endpoint.ts';
import type { KubernetesPort } from '../../src/cluster/kubernetes-port.ts';
import type { Cluster } from '../../src/config/types.ts';

const KUBECONFIG = `
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: 'https://staging.example.com:6443'}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: ctx, context: {cluster: c, user: u}}]
current-context: ctx
`;

const FROM_SECRET: Cluster = {
  name: 'staging',
  credentials: {
    type: 'kubeconfigSecret',
    secret: { scheme: 'aws-ssm', name: '/driftless/cluster/staging' },
  },
};
const EKS: Cluster = {
  name: 'prod',
  credentials: { type: 'eks', name: 'prod-eks', region: 'eu-west-1' },
};

/** A port that remembers the endpoint it was built from. */
function fakeConnect(built: ClusterEndpoint[]) {
  return (endpoint: ClusterEndpoint) => {
    built.push(endpoint);
    return { endpoint } as unknown as KubernetesPort;
  };
}

describe('createClusterConnector', () => {
  it('builds a kubeconfigSecret cluster from its secret, reuses it, and rebuilds it after 5 minutes', async () => {
    // Prepare
    const reads: string[] = [];
    const built: ClusterEndpoint[] = [];
    let now = 0;
    const connect = createClusterConnector({
      readSecret: async (ref) => {
        reads.push(JSON.stringify(ref));
        return KUBECONFIG;
      },
      connect: fakeConnect(built),
      now: () => now,
    });

    // Act
    const first = await connect(FROM_SECRET);
    const second = await connect(FROM_SECRET);
    now = 5 * 60_000 + 1;
    const third = await connect(FROM_SECRET);

    // Assess
    assert.equal(first, second);
    assert.notEqual(third, first);
    assert.equal(reads.length, 2);
    assert.equal(built[0]?.server, 'https://staging.example.com:6443');
    assert.deepEqual((await built[0]?.credentials.current())?.headers, {
      authorization: 'Bearer abc',
    });
  });

  it('connects to EKS through DescribeCluster and a token, once per container', async () => {
    // Prepare
    const calls: string[] = [];
    const built: ClusterEndpoint[] = [];
    const eks: EksAccess = {
      credentials: async () => ({ accessKeyId: 'AKID', secretAccessKey: 'secret' }),
      describeCluster: async (cluster) => {
        calls.push(`${cluster.name} ${cluster.region}`);
        return { endpoint: 'https://prod.eks.example', certificateAuthority: 'Q0E=' };
      },
    };
    const connect = createClusterConnector({
      readSecret: async () => assert.fail('EKS needs no secret'),
      eks,
      connect: fakeConnect(built),
    });

    // Act
    await connect(EKS);
    await connect(EKS);

    // Assess
    assert.deepEqual(calls, ['prod-eks eu-west-1']);
    assert.equal(built.length, 1);
    const { headers } = (await built[0]?.credentials.current()) ?? { headers: {} };
    assert.match(String(headers.authorization), /^Bearer k8s-aws-v1\./);
  });

  it('does not keep a failed connection', async () => {
    // Prepare
    let attempts = 0;
    const connect = createClusterConnector({
      readSecret: async () => {
        attempts += 1;
        if (attempts === 1) throw new Error('throttled');
        return KUBECONFIG;
      },
      connect: fakeConnect([]),
    });

    // Act
    await assert.rejects(connect(FROM_SECRET), /throttled/);
    await connect(FROM_SECRET);

    // Assess
    assert.equal(attempts, 2);
  });
});
