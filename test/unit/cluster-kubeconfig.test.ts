import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { endpointFromContext } from '../../src/cluster/cluster-endpoint.ts';
import { endpointFor } from '../../src/cluster/connect-cluster.ts';
import { CredentialError, KubeconfigError } from '../../src/cluster/errors.ts';
import {
  parseKubeconfig,
  readDefaultKubeconfig,
  readKubeconfigFile,
  resolveContext,
} from '../../src/cluster/kubeconfig.ts';

const PEM_CA = '-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n';
const PEM_CERT = '-----BEGIN CERTIFICATE-----\nCLIENT\n-----END CERTIFICATE-----\n';
const PEM_KEY = '-----BEGIN PRIVATE KEY-----\nKEY\n-----END PRIVATE KEY-----\n';
const b64 = (text: string): string => Buffer.from(text).toString('base64');

function kubeconfig(user: string, extra = ''): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: c',
    '  cluster:',
    '    server: https://k8s.example.com:6443/',
    `    certificate-authority-data: ${b64(PEM_CA)}`,
    'users:',
    '- name: u',
    `  user: ${user}`,
    'contexts:',
    '- name: ctx',
    '  context: {cluster: c, user: u}',
    'current-context: ctx',
    extra,
  ].join('\n');
}

/** Asserts `action` throws a KubeconfigError whose message contains every fragment. */
function assertKubeconfigError(action: () => unknown, ...fragments: string[]): void {
  assert.throws(action, (error: unknown) => {
    assert.ok(error instanceof KubeconfigError, String(error));
    for (const fragment of fragments) assert.ok(error.message.includes(fragment), error.message);
    return true;
  });
}

async function headersOf(text: string): Promise<Record<string, unknown>> {
  const context = resolveContext(parseKubeconfig(text, 'test', '/base'));
  return { ...(await endpointFromContext(context).credentials.current()).headers };
}

/** `text` parsed, every cluster and user read: what resolving a context to each would read. */
function readWhole(text: string, source: string, baseDir: string): unknown {
  const config = parseKubeconfig(text, source, baseDir);
  for (const read of [...config.clusters.values(), ...config.users.values()]) read();
  return config;
}

describe('kubeconfig reader', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-kubeconfig-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads what client-node reads from the same file: server, CA, client certificate and key', async () => {
    // Prepare
    const path = join(dir, 'certs.yaml');
    await writeFile(
      path,
      kubeconfig(`{client-certificate-data: ${b64(PEM_CERT)}, client-key-data: ${b64(PEM_KEY)}}`),
    );
    const reference = new KubeConfig();
    reference.loadFromFile(path);
    const options: { ca?: unknown; cert?: unknown; key?: unknown } = {};
    await reference.applyToHTTPSOptions(options);

    // Act
    const endpoint = endpointFromContext(resolveContext(readKubeconfigFile(path)));
    const credentials = await endpoint.credentials.current();

    // Assess
    assert.equal(endpoint.server, reference.getCurrentCluster()?.server);
    assert.equal(endpoint.ca?.toString(), String(options.ca));
    assert.equal(credentials.clientCertificate?.cert.toString(), String(options.cert));
    assert.equal(credentials.clientCertificate?.key.toString(), String(options.key));
    assert.equal(endpoint.insecureSkipTlsVerify, false);
    assert.match(endpoint.label, /context "ctx" of kubeconfig .*certs\.yaml/);
  });

  it('resolves relative file paths against the kubeconfig directory and reads them', async () => {
    // Prepare
    await writeFile(join(dir, 'ca.pem'), PEM_CA);
    await writeFile(join(dir, 'client.pem'), PEM_CERT);
    await writeFile(join(dir, 'client.key'), PEM_KEY);
    const path = join(dir, 'files.yaml');
    await writeFile(
      path,
      [
        'clusters: [{name: c, cluster: {server: "https://k", certificate-authority: ca.pem, tls-server-name: api.internal}}]',
        'users: [{name: u, user: {client-certificate: client.pem, client-key: ./client.key}}]',
        'contexts: [{name: ctx, context: {cluster: c, user: u}}]',
        'current-context: ctx',
      ].join('\n'),
    );

    // Act
    const endpoint = endpointFromContext(resolveContext(readKubeconfigFile(path)));
    const credentials = await endpoint.credentials.current();

    // Assess
    assert.equal(endpoint.ca?.toString(), PEM_CA);
    assert.equal(endpoint.tlsServerName, 'api.internal');
    assert.equal(credentials.clientCertificate?.cert.toString(), PEM_CERT);
    assert.equal(credentials.clientCertificate?.key.toString(), PEM_KEY);
  });

  it('reads only the cluster and user of the context it resolves, as kubectl does', () => {
    // Prepare: a ~/.kube/config holding an OIDC user and a proxied cluster no chosen context uses
    const text = [
      'clusters:',
      '  - {name: good, cluster: {server: "https://k"}}',
      '  - {name: proxied, cluster: {server: "https://x", proxy-url: "http://proxy:3128"}}',
      'users:',
      '  - {name: me, user: {token: t}}',
      '  - {name: oidc, user: {auth-provider: {name: oidc}}}',
      'contexts:',
      '  - {name: good, context: {cluster: good, user: me}}',
      '  - {name: sso, context: {cluster: good, user: oidc}}',
    ].join('\n');
    const config = parseKubeconfig(text, 'kc.yaml', '/');

    // Act, Assess
    assert.equal(resolveContext(config, 'good').cluster.server, 'https://k');
    assertKubeconfigError(
      () => resolveContext(config, 'sso'),
      'users[1] ("oidc").user.auth-provider: "oidc" is not supported',
    );
  });

  it('names the file and field of what is wrong', () => {
    assertKubeconfigError(
      () => readWhole('clusters: [{name: c, cluster: {}}]', 'kc.yaml', '/'),
      'kubeconfig kc.yaml',
      'clusters[0] ("c").cluster.server: is missing',
    );
    assertKubeconfigError(
      () => readWhole('clusters: [{name: c, cluster: {server: "ftp://x"}}]', 'kc.yaml', '/'),
      '"ftp://x" is not an http(s) URL',
    );
    assertKubeconfigError(
      () => readWhole('users: [{name: u, user: {auth-provider: {name: oidc}}}]', 'kc.yaml', '/'),
      'users[0] ("u").user.auth-provider: "oidc" is not supported',
      'exec credential plugin',
    );
    assertKubeconfigError(
      () =>
        readWhole(
          'clusters: [{name: c, cluster: {server: "https://x", proxy-url: "http://proxy:3128"}}]',
          'kc.yaml',
          '/',
        ),
      'proxy-url: is not supported',
    );
    assertKubeconfigError(
      () =>
        readWhole(
          `clusters: [{name: c, cluster: {server: "https://x", insecure-skip-tls-verify: true, certificate-authority-data: ${b64(PEM_CA)}}}]`,
          'kc.yaml',
          '/',
        ),
      'insecure-skip-tls-verify cannot be combined with a certificate authority',
    );
    assertKubeconfigError(
      () => readWhole('users: [{name: u, user: {token: t, username: a, password: b}}]', 'kc', '/'),
      'both a token and a username/password',
    );
    assertKubeconfigError(
      () =>
        readWhole(
          `users: [{name: u, user: {client-certificate-data: ${b64(PEM_CERT)}}}]`,
          'kc',
          '/',
        ),
      'a client certificate needs its key',
    );
    assertKubeconfigError(
      () =>
        readWhole(
          'users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1alpha1, command: x}}}]',
          'kc',
          '/',
        ),
      'users[0] ("u").user.exec.apiVersion',
      'v1alpha1',
    );
    assertKubeconfigError(() => readWhole('clusters: {}', 'kc', '/'), 'clusters: must be a list');
    assertKubeconfigError(() => readWhole('a: [', 'kc', '/'), 'kubeconfig kc: invalid YAML (line');
  });

  it('never quotes the file in a YAML error, since kubeconfigs hold secrets', () => {
    assert.throws(
      () => parseKubeconfig('users:\n- name: u\n  user: {token: s3cr3t-token\n', 'kc', '/'),
      (error: unknown) => error instanceof KubeconfigError && !error.message.includes('s3cr3t'),
    );
  });

  it('selects the named context, and lists the contexts when it does not exist', () => {
    // Prepare
    const config = parseKubeconfig(
      [
        'clusters: [{name: a, cluster: {server: "https://a"}}, {name: b, cluster: {server: "https://b"}}]',
        'users: [{name: u, user: {token: t}}]',
        'contexts: [{name: one, context: {cluster: a, user: u}}, {name: two, context: {cluster: b}}]',
      ].join('\n'),
      'kc',
      '/',
    );

    // Act + Assess
    assert.equal(resolveContext(config, 'two').cluster.server, 'https://b');
    assert.deepEqual(resolveContext(config, 'two').user, {});
    assertKubeconfigError(
      () => resolveContext(config, 'three'),
      'no context "three" (contexts: one, two)',
    );
    assertKubeconfigError(() => resolveContext(config), 'no current-context');
  });

  it('refuses a context that names an undefined cluster or user', () => {
    const config = parseKubeconfig(
      'contexts: [{name: x, context: {cluster: gone, user: nobody}}]\ncurrent-context: x',
      'kc',
      '/',
    );
    assertKubeconfigError(
      () => resolveContext(config),
      'names cluster "gone", which is not defined',
    );
  });

  it('merges $KUBECONFIG files as kubectl does: the first definition of a name wins, missing files are skipped', async () => {
    // Prepare
    const first = join(dir, 'first.yaml');
    const second = join(dir, 'second.yaml');
    await writeFile(
      first,
      'clusters: [{name: shared, cluster: {server: "https://first"}}]\nusers: [{name: u, user: {token: one}}]',
    );
    await writeFile(
      second,
      [
        'clusters: [{name: shared, cluster: {server: "https://second"}}, {name: only2, cluster: {server: "https://only2"}}]',
        'users: [{name: u, user: {token: two}}]',
        'contexts: [{name: ctx, context: {cluster: shared, user: u}}, {name: c2, context: {cluster: only2, user: u}}]',
        'current-context: ctx',
      ].join('\n'),
    );
    const env = { KUBECONFIG: [first, join(dir, 'missing.yaml'), second].join(delimiter) };

    // Act
    const merged = readDefaultKubeconfig(env);

    // Assess
    const ctx = resolveContext(merged);
    assert.equal(ctx.cluster.server, 'https://first');
    assert.equal(ctx.user.token, 'one');
    assert.equal(resolveContext(merged, 'c2').cluster.server, 'https://only2');
  });

  it('says where it looked when there is no kubeconfig at all', () => {
    assertKubeconfigError(
      () => readDefaultKubeconfig({ HOME: join(dir, 'nohome') }),
      `KUBECONFIG is not set and ${join(dir, 'nohome', '.kube', 'config')} does not exist`,
    );
    assertKubeconfigError(
      () => readDefaultKubeconfig({ KUBECONFIG: join(dir, 'nope.yaml') }),
      'none of the files in KUBECONFIG exists',
    );
  });

  it('prefixes errors with the configured cluster', async () => {
    await assert.rejects(
      endpointFor({ name: 'prod', credentials: { type: 'kubeconfig', path: join(dir, 'absent') } }),
      (error: unknown) =>
        error instanceof KubeconfigError &&
        error.message === `cluster "prod": kubeconfig ${join(dir, 'absent')} does not exist`,
    );
  });
});

describe('kubeconfig credentials', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-credentials-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('sends a token, basic auth and impersonation headers', async () => {
    assert.deepEqual(await headersOf(kubeconfig('{token: abc}')), { authorization: 'Bearer abc' });
    assert.deepEqual(await headersOf(kubeconfig('{username: admin, password: "p:w"}')), {
      authorization: `Basic ${b64('admin:p:w')}`,
    });
    assert.deepEqual(
      await headersOf(
        kubeconfig(
          '{token: abc, as: jane, as-uid: "42", as-groups: [dev, ops], as-user-extra: {"scopes/x": [a, b]}}',
        ),
      ),
      {
        authorization: 'Bearer abc',
        'impersonate-user': 'jane',
        'impersonate-uid': '42',
        'impersonate-group': ['dev', 'ops'],
        'impersonate-extra-scopes%2Fx': ['a', 'b'],
      },
    );
  });

  it('re-reads a tokenFile after a minute and right after a 401', async () => {
    // Prepare
    const tokenPath = join(dir, 'token');
    await writeFile(tokenPath, 'first\n');
    let now = 0;
    const context = resolveContext(
      parseKubeconfig(kubeconfig(`{tokenFile: ${tokenPath}}`), 'kc', dir),
    );
    const credentials = endpointFromContext(context, { now: () => now }).credentials;

    // Act + Assess
    assert.equal((await credentials.current()).headers.authorization, 'Bearer first');
    await writeFile(tokenPath, 'second');
    now = 30_000;
    assert.equal((await credentials.current()).headers.authorization, 'Bearer first', 'cached');
    now = 61_000;
    assert.equal((await credentials.current()).headers.authorization, 'Bearer second');
    await writeFile(tokenPath, 'third');
    credentials.invalidate();
    assert.equal((await credentials.current()).headers.authorization, 'Bearer third');
  });

  it('runs an exec plugin with KUBERNETES_EXEC_INFO and its env, once for concurrent requests, again after expiry', async () => {
    // Prepare: a real plugin process that logs each run and answers with a numbered token.
    const plugin = join(dir, 'plugin.mjs');
    const runs = join(dir, 'runs.log');
    await writeFile(
      plugin,
      `import { appendFileSync } from 'node:fs';
appendFileSync(${JSON.stringify(runs)}, JSON.stringify({ info: JSON.parse(process.env.KUBERNETES_EXEC_INFO), extra: process.env.PLUGIN_EXTRA, args: process.argv.slice(2) }) + '\\n');
const n = (await import('node:fs')).readFileSync(${JSON.stringify(runs)}, 'utf8').trim().split('\\n').length;
console.log(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential',
  status: { token: 'token-' + n, expirationTimestamp: new Date(Number(process.env.PLUGIN_NOW) + 600000).toISOString() } }));
`,
    );
    let now = Date.parse('2026-01-01T00:00:00Z');
    const exec = {
      apiVersion: 'client.authentication.k8s.io/v1',
      command: process.execPath,
      args: [plugin, '--region', 'eu'],
      env: [
        { name: 'PLUGIN_EXTRA', value: 'yes' },
        { name: 'PLUGIN_NOW', value: String(now) },
      ],
      interactiveMode: 'Never',
      provideClusterInfo: true,
    };
    const text = kubeconfig(JSON.stringify({ exec }));
    const credentials = endpointFromContext(resolveContext(parseKubeconfig(text, 'kc', dir)), {
      now: () => now,
    }).credentials;

    // Act
    const concurrent = await Promise.all([1, 2, 3].map(() => credentials.current()));
    now += 9 * 60_000; // one minute left: still good
    const later = await credentials.current();
    now += 55_000; // five seconds left: inside the margin, so the plugin runs again
    const renewed = await credentials.current();

    // Assess
    assert.deepEqual(
      concurrent.map((c) => c.headers.authorization),
      ['Bearer token-1', 'Bearer token-1', 'Bearer token-1'],
    );
    assert.equal(later.headers.authorization, 'Bearer token-1');
    assert.equal(renewed.headers.authorization, 'Bearer token-2');
    const logged = (await readFile(runs, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { info: unknown; extra: string; args: string[] });
    assert.equal(logged.length, 2);
    assert.equal(logged[0]?.extra, 'yes');
    assert.deepEqual(logged[0]?.args, ['--region', 'eu']);
    assert.deepEqual(logged[0]?.info, {
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      spec: {
        interactive: false,
        cluster: {
          server: 'https://k8s.example.com:6443',
          'certificate-authority-data': b64(PEM_CA),
        },
      },
    });
    assert.equal(process.env.PLUGIN_EXTRA, undefined, "the plugin's env never leaks into ours");
  });

  it('uses the client certificate an exec plugin hands out', async () => {
    // Prepare
    const plugin = join(dir, 'cert-plugin.mjs');
    await writeFile(
      plugin,
      `console.log(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1beta1', kind: 'ExecCredential',
  status: { clientCertificateData: ${JSON.stringify(PEM_CERT)}, clientKeyData: ${JSON.stringify(PEM_KEY)} } }));`,
    );
    const exec = {
      apiVersion: 'client.authentication.k8s.io/v1beta1',
      command: process.execPath,
      args: [plugin],
    };
    const credentials = endpointFromContext(
      resolveContext(parseKubeconfig(kubeconfig(JSON.stringify({ exec })), 'kc', dir)),
    ).credentials;

    // Act
    const first = await credentials.current();
    const second = await credentials.current();

    // Assess
    assert.equal(first.clientCertificate?.cert, PEM_CERT);
    assert.equal(first.clientCertificate?.key, PEM_KEY);
    assert.equal(first.headers.authorization, undefined);
    assert.equal(
      first.clientCertificate,
      second.clientCertificate,
      'same object: the TLS agent is reused',
    );
  });

  it('reports a failing plugin with its stderr (credential-shaped words masked), a missing one with its install hint, and never its output', async () => {
    // Prepare
    const failing = join(dir, 'failing.mjs');
    await writeFile(
      failing,
      "console.error('login required: run aws sso login'); process.exit(3);",
    );
    const leaking = join(dir, 'leaking.mjs');
    await writeFile(leaking, 'console.log(\'{"token": "s3cr3t"\');');
    const credentialsFor = (exec: object) =>
      endpointFromContext(
        resolveContext(parseKubeconfig(kubeconfig(JSON.stringify({ exec })), 'kc', dir)),
      ).credentials;
    const v1 = 'client.authentication.k8s.io/v1';

    // Act + Assess
    await assert.rejects(
      credentialsFor({ apiVersion: v1, command: process.execPath, args: [failing] }).current(),
      (error: unknown) =>
        error instanceof CredentialError &&
        /exited with 3: login required: run aws sso login$/.test(error.message),
    );
    // A plugin that prints credentials on stderr (debug output, a bug): the error keeps the
    // words around them, never the credentials themselves.
    const jwt = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJwbGFudGVkLW1hcmtlciJ9.c2lnbmF0dXJlMTIz';
    const awsSecret = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYPLANTEDKEY';
    const hexToken = 'a3f9c1d2e4b5a6978877665544332211ffeeddcc';
    const requestId = '123e4567-e89b-12d3-a456-426614174000';
    const bootstrapToken = 'abcdef.0123456789abcdef';
    const password = 'correcthorsebatterystaple42';
    const host = 'ip-10-0-1-23.eu-west-1.compute.internal';
    // Values of settings named like credentials, whatever they look like.
    const settings =
      'client_secret=lowercase0secret0value refresh_token: 1//0gLxPLANTED password: "Sup3r! Secret" token=ya29.a0AfH6SMB-xx_yy.zz%2Fabc';
    const chatty = join(dir, 'chatty.mjs');
    await writeFile(
      chatty,
      `console.error(${JSON.stringify(
        `debug: sending ${jwt} with ${awsSecret} and ${hexToken}\nusing ${bootstrapToken} or ${password} at ${host}\n${settings}\nrequest ${requestId} refused: token expired`,
      )}); process.exit(1);`,
    );
    await assert.rejects(
      credentialsFor({ apiVersion: v1, command: process.execPath, args: [chatty] }).current(),
      (error: unknown) => {
        assert.ok(error instanceof CredentialError);
        for (const planted of [
          jwt,
          awsSecret,
          hexToken,
          'cGxhbnRlZC1tYXJrZXI',
          'PLANTEDKEY',
          bootstrapToken,
          '0123456789abcdef',
          password,
          'lowercase0secret0value',
          '0gLxPLANTED',
          'Sup3r',
          'ya29',
        ]) {
          assert.ok(!error.message.includes(planted), `${planted} in: ${error.message}`);
        }
        assert.match(
          error.message,
          /exited with 1: debug: sending \*\*\* with \*\*\* and \*\*\*\n/,
        );
        assert.ok(error.message.includes(`using *** or *** at ${host}\n`), error.message);
        assert.ok(
          error.message.includes('client_secret=*** refresh_token: *** password: *** token=***\n'),
          error.message,
        );
        assert.ok(error.message.endsWith(`request ${requestId} refused: token expired`));
        return true;
      },
    );
    await assert.rejects(
      credentialsFor({
        apiVersion: v1,
        command: 'driftless-no-such-plugin',
        installHint: 'brew install it',
      }).current(),
      (error: unknown) =>
        error instanceof CredentialError &&
        error.message.includes('cannot run driftless-no-such-plugin') &&
        error.message.endsWith('brew install it'),
    );
    await assert.rejects(
      credentialsFor({ apiVersion: v1, command: process.execPath, args: [leaking] }).current(),
      (error: unknown) =>
        error instanceof CredentialError &&
        error.message.includes('not JSON') &&
        !error.message.includes('s3cr3t'),
    );
    await assert.rejects(
      credentialsFor({ apiVersion: v1, command: 'x', interactiveMode: 'Always' }).current(),
      /interactiveMode Always needs a terminal/,
    );
  });
});
