/**
 * `auth: {type: githubApp}` end to end: the driftless command (a child
 * process, as users run it) asks a local HTTPS endpoint standing in for
 * GitHub's installation-token API — at `apiUrl`, as for GitHub Enterprise
 * Server, trusted through NODE_EXTRA_CA_CERTS — which checks the app's JWT
 * (RS256 signature with the app's public key, `iss`, `iat`/`exp`) and
 * returns the token the test Git server requires. Token reuse across the
 * fetches of one process and refresh of a token close to expiry are counted
 * at the endpoint.
 */
import assert from 'node:assert/strict';
import { createVerify, generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api } from '@kubernetes/client-node';
import { generateServingCertificate } from '../harness/certificates.ts';
import { runDriftless } from '../harness/driftless-cli.ts';
import { pushFiles, startGitServer, type GitServer } from '../harness/git-server.ts';
import {
  createTestNamespace,
  sharedKubeConfig,
  sharedKubeconfigPath,
} from '../harness/shared-cluster.ts';

const APP_ID = '4242';
const INSTALLATION_ID = '777';

interface TokenRequest {
  readonly path: string;
  readonly verdict: 'issued' | 'refused';
  readonly why?: string;
}

/** Checks a GitHub App JWT as GitHub does; the reason it is refused, or undefined. */
function jwtProblem(authorization: string | undefined, publicKey: string): string | undefined {
  const jwt = /^bearer (.+)$/i.exec(authorization ?? '')?.[1];
  if (jwt === undefined) return 'no bearer JWT';
  const [header, payload, signature] = jwt.split('.');
  if (!header || !payload || !signature) return 'not a JWT';
  const alg = (JSON.parse(Buffer.from(header, 'base64url').toString()) as { alg: string }).alg;
  if (alg !== 'RS256') return `alg ${alg}`;
  const verifier = createVerify('RSA-SHA256').update(`${header}.${payload}`);
  if (!verifier.verify(publicKey, Buffer.from(signature, 'base64url'))) return 'bad signature';
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as {
    iss: unknown;
    iat: number;
    exp: number;
  };
  const now = Math.floor(Date.now() / 1000);
  if (String(claims.iss) !== APP_ID) return `iss ${String(claims.iss)}`;
  if (claims.iat > now + 60) return 'iat in the future';
  if (claims.exp <= now || claims.exp - claims.iat > 600) return 'exp out of range';
  return undefined;
}

describe('GitHub App installation tokens against a local token endpoint', () => {
  let git: GitServer;
  let api: Server;
  let apiUrl: string;
  let dir: string;
  let ns: string;
  let core: CoreV1Api;
  let env: NodeJS.ProcessEnv;
  const token = `ghs_${randomBytes(18).toString('hex')}`;
  const requests: TokenRequest[] = [];
  /** How long the endpoint's tokens live. */
  let lifetimeMs = 60 * 60_000;
  const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
  // GitHub hands out PKCS#1 PEM files.
  const privateKey = keys.privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  const publicKey = keys.publicKey.export({ type: 'spki', format: 'pem' }).toString();

  before(async () => {
    const kc = sharedKubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    ns = await createTestNamespace(kc, 'ghapp');
    // The Git server takes the installation token, as GitHub does, and nothing else.
    git = await startGitServer({ username: 'x-access-token', password: token });
    dir = await mkdtemp(join(tmpdir(), 'driftless-ghapp-'));
    await mkdir(join(dir, 'tls'));
    const tls = await generateServingCertificate(join(dir, 'tls'));
    api = createServer(
      { cert: await readFile(tls.cert), key: await readFile(tls.key) },
      (request, response) => {
        const path = request.url ?? '';
        const why =
          request.method === 'POST' &&
          path === `/api/v3/app/installations/${INSTALLATION_ID}/access_tokens`
            ? jwtProblem(request.headers.authorization, publicKey)
            : `unexpected ${request.method} ${path}`;
        requests.push({
          path,
          verdict: why === undefined ? 'issued' : 'refused',
          ...(why ? { why } : {}),
        });
        response.setHeader('content-type', 'application/json');
        if (why !== undefined) {
          response.statusCode = 401;
          response.end(JSON.stringify({ message: 'A JSON web token could not be decoded' }));
          return;
        }
        response.statusCode = 201;
        response.end(
          JSON.stringify({
            token,
            expires_at: new Date(Date.now() + lifetimeMs).toISOString(),
            permissions: { contents: 'read' },
            repository_selection: 'all',
          }),
        );
      },
    );
    await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
    apiUrl = `https://127.0.0.1:${(api.address() as AddressInfo).port}/api/v3`;
    await writeFile(join(dir, 'app.pem'), privateKey);
    env = {
      ...process.env,
      NO_COLOR: '1',
      // How a GitHub Enterprise Server with a private CA is trusted, by the CLI and in Lambda alike.
      NODE_EXTRA_CA_CERTS: tls.caCert,
    };
  });

  after(async () => {
    await core.deleteNamespace({ name: ns }).catch(() => undefined);
    await new Promise((resolve) => api?.close(resolve));
    await git?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** A config with one track per repository, all authenticated as the app with `keyFile`. */
  async function writeConfig(
    repos: readonly { name: string; url: string }[],
    keyFile = 'app.pem',
    appId = APP_ID,
  ) {
    await writeFile(
      join(dir, 'driftless.yaml'),
      [
        'store: {type: fs, path: store}',
        'clusters:',
        `  - {name: test, kubeconfig: ${sharedKubeconfigPath()}}`,
        'tracks:',
        ...repos.flatMap((repo) => [
          `  - name: ${repo.name}`,
          `    repository: ${repo.url}`,
          `    namespace: ${ns}`,
          `    auth: {type: githubApp, appId: ${appId}, installationId: ${INSTALLATION_ID}, privateKey: file:${keyFile}, apiUrl: "${apiUrl}"}`,
        ]),
        '',
      ].join('\n'),
    );
  }

  it('fetches with an installation token, one token for every fetch of the process', async () => {
    // Prepare
    const repos = [];
    for (const name of ['app-a', 'app-b']) {
      const repo = await git.createRepository(name);
      await pushFiles(repo, {
        [`${name}.yaml`]: `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ${name}}\ndata: {value: one}\n`,
      });
      repos.push({ name, url: repo.url });
    }
    await writeConfig(repos);
    requests.length = 0;

    // Act
    const sync = await runDriftless(['sync', '-o', 'json'], { cwd: dir, env });

    // Assess
    assert.equal(sync.code, 0, `${sync.stdout}${sync.stderr}${JSON.stringify(requests)}`);
    for (const name of ['app-a', 'app-b']) {
      const cm = await core.readNamespacedConfigMap({ name, namespace: ns });
      assert.equal(cm.data?.value, 'one');
    }
    assert.deepEqual(requests, [
      { path: `/api/v3/app/installations/${INSTALLATION_ID}/access_tokens`, verdict: 'issued' },
    ]);
    assert.ok(!sync.stdout.includes(token) && !sync.stderr.includes(token));
  });

  it('asks for a new token when the cached one is about to expire', async () => {
    // Prepare: tokens that expire within the refresh margin.
    lifetimeMs = 2 * 60_000;
    requests.length = 0;

    // Act
    const sync = await runDriftless(['sync', '-o', 'json'], { cwd: dir, env });

    // Assess: each of the two fetches found the token too close to expiry.
    lifetimeMs = 60 * 60_000;
    assert.equal(sync.code, 0, sync.stdout + sync.stderr);
    assert.equal(requests.filter((r) => r.verdict === 'issued').length, 2);
  });

  it('fails naming the app when GitHub refuses the JWT (another key, another app id), and stores nothing', async () => {
    for (const [label, keyFile, appId] of [
      ['another key', 'other.pem', APP_ID],
      ['another app id', 'app.pem', '9999'],
    ] as const) {
      // Prepare
      const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
      await writeFile(
        join(dir, 'other.pem'),
        other.export({ type: 'pkcs1', format: 'pem' }).toString(),
      );
      const repo = await git.createRepository(`refused-${appId}-${keyFile.replace('.pem', '')}`);
      await pushFiles(repo, { 'x.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n' });
      await writeConfig([{ name: 'refused', url: repo.url }], keyFile, appId);
      requests.length = 0;

      // Act
      const sync = await runDriftless(['sync', '--track', 'refused'], { cwd: dir, env });

      // Assess
      assert.notEqual(sync.code, 0, label);
      assert.match(
        sync.stdout + sync.stderr,
        new RegExp(
          `GitHub App ${appId}, installation ${INSTALLATION_ID} at https://127\\.0\\.0\\.1:\\d+/api/v3: no installation token: HTTP 401`,
        ),
        label,
      );
      assert.equal(requests[0]?.verdict, 'refused', label);
      assert.ok(!(sync.stdout + sync.stderr).includes('PRIVATE KEY'), `${label}: no key in output`);
    }
  });
});
