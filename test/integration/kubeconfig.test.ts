/**
 * driftless' own kubeconfig reader against the real API server: bearer
 * tokens (a real ServiceAccount token from the TokenRequest API), token
 * files that rotate, exec plugins handing out tokens or client
 * certificates, and impersonation. The server's SelfSubjectReview says who
 * it took us for.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, RbacAuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { endpointFromFile } from '../../src/cluster/connect-cluster.ts';
import { createKubeTransport, type KubeTransport } from '../../src/cluster/kube-http.ts';
import { createTestNamespace, sharedKubeConfig } from '../harness/shared-cluster.ts';

/** Who the API server says we are. */
async function whoAmI(transport: KubeTransport): Promise<string> {
  const response = await transport({
    method: 'POST',
    path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
  });
  assert.equal(response.status, 201, JSON.stringify(response.body));
  return (response.body as { status: { userInfo: { username: string } } }).status.userInfo.username;
}

describe('kubeconfig credentials against the real API server', () => {
  let kc: KubeConfig;
  let ns: string;
  let dir: string;
  let token: string;
  let server: string;
  let caData: string;
  const serviceAccount = 'reader';

  /** Writes a kubeconfig for the test cluster with `user` and returns its path. */
  async function kubeconfigWith(name: string, user: object): Promise<string> {
    const path = join(dir, `${name}.yaml`);
    const config = {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'test', cluster: { server, 'certificate-authority-data': caData } }],
      users: [{ name: 'u', user }],
      contexts: [{ name: 'ctx', context: { cluster: 'test', user: 'u' } }],
      'current-context': 'ctx',
    };
    await writeFile(path, JSON.stringify(config)); // JSON is YAML
    return path;
  }

  /** An exec plugin (a real process) printing `status` as its ExecCredential. */
  async function execPlugin(name: string, status: object): Promise<object> {
    const script = join(dir, `${name}.mjs`);
    const answer = {
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      status,
    };
    await writeFile(script, `console.log(${JSON.stringify(JSON.stringify(answer))});`);
    return {
      apiVersion: 'client.authentication.k8s.io/v1',
      command: process.execPath,
      args: [script],
      interactiveMode: 'Never',
    };
  }

  before(async () => {
    kc = sharedKubeConfig();
    ns = await createTestNamespace(kc, 'kubeconfig');
    dir = await mkdtemp(join(tmpdir(), 'driftless-kubeconfig-it-'));
    server = kc.getCurrentCluster()!.server;
    caData = kc.getCurrentCluster()!.caData!;
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespacedServiceAccount({
      namespace: ns,
      body: { metadata: { name: serviceAccount } },
    });
    await kc.makeApiClient(RbacAuthorizationV1Api).createNamespacedRoleBinding({
      namespace: ns,
      body: {
        metadata: { name: 'reader-view' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
        subjects: [{ kind: 'ServiceAccount', name: serviceAccount, namespace: ns }],
      },
    });
    const requested = await core.createNamespacedServiceAccountToken({
      name: serviceAccount,
      namespace: ns,
      body: { spec: { audiences: [], expirationSeconds: 3600 } },
    });
    token = requested.status!.token;
  });

  after(async () => {
    await kc.makeApiClient(CoreV1Api).deleteNamespace({ name: ns });
    await rm(dir, { recursive: true, force: true });
  });

  const saName = () => `system:serviceaccount:${ns}:${serviceAccount}`;

  it('authenticates with a bearer token from tokenFile, and RBAC applies to it', async () => {
    // Prepare
    const tokenFile = join(dir, 'token');
    await writeFile(tokenFile, `${token}\n`);
    const transport = createKubeTransport(
      endpointFromFile(await kubeconfigWith('token-file', { tokenFile })),
    );

    // Act
    const me = await whoAmI(transport);
    const allowed = await transport({ method: 'GET', path: `/api/v1/namespaces/${ns}/configmaps` });
    const forbidden = await transport({
      method: 'GET',
      path: '/api/v1/namespaces/default/secrets',
    });

    // Assess
    assert.equal(me, saName());
    assert.equal(allowed.status, 200);
    assert.equal(forbidden.status, 403);
  });

  it('after a 401 re-reads a rotated tokenFile and retries once', async () => {
    // Prepare
    const tokenFile = join(dir, 'rotating-token');
    await writeFile(tokenFile, 'not-a-valid-token');
    const transport = createKubeTransport(
      endpointFromFile(await kubeconfigWith('rotating', { tokenFile })),
    );
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    const before = await transport({ method: 'GET', path });

    // Act: the file rotates; the cached token is still the stale one.
    await writeFile(tokenFile, token);
    const afterRotation = await transport({ method: 'GET', path });

    // Assess
    assert.equal(before.status, 401);
    assert.equal(afterRotation.status, 200);
  });

  it('gets a token from an exec plugin', async () => {
    // Prepare
    const exec = await execPlugin('token-plugin', { token });
    const transport = createKubeTransport(
      endpointFromFile(await kubeconfigWith('exec-token', { exec })),
    );

    // Act + Assess
    assert.equal(await whoAmI(transport), saName());
  });

  it('gets a client certificate from an exec plugin', async () => {
    // Prepare
    const user = kc.getCurrentUser()!;
    const exec = await execPlugin('cert-plugin', {
      clientCertificateData: Buffer.from(user.certData!, 'base64').toString(),
      clientKeyData: Buffer.from(user.keyData!, 'base64').toString(),
    });
    const transport = createKubeTransport(
      endpointFromFile(await kubeconfigWith('exec-cert', { exec })),
    );

    // Act + Assess
    assert.equal(await whoAmI(transport), 'driftless-admin');
  });

  it('impersonates the user named by `as`', async () => {
    // Prepare
    const user = kc.getCurrentUser()!;
    const transport = createKubeTransport(
      endpointFromFile(
        await kubeconfigWith('impersonate', {
          'client-certificate-data': user.certData,
          'client-key-data': user.keyData,
          as: saName(),
        }),
      ),
    );

    // Act + Assess
    assert.equal(await whoAmI(transport), saName());
  });

  it('refuses a server whose certificate the configured CA did not sign', async () => {
    // Prepare: a CA that is not the cluster's.
    const otherCa = Buffer.from((await import('node:tls')).rootCertificates[0]!).toString('base64');
    const path = join(dir, 'wrong-ca.yaml');
    await writeFile(
      path,
      JSON.stringify({
        clusters: [{ name: 't', cluster: { server, 'certificate-authority-data': otherCa } }],
        users: [{ name: 'u', user: { token } }],
        contexts: [{ name: 'c', context: { cluster: 't', user: 'u' } }],
        'current-context': 'c',
      }),
    );

    // Act + Assess
    await assert.rejects(
      createKubeTransport(endpointFromFile(path))({ method: 'GET', path: '/version' }),
      /certificate/,
    );
  });
});
