/**
 * Planted secrets, end to end through the driftless command: one marker in a
 * SOPS-encrypted Secret (encrypted here by the real sops for a key made by
 * the real age-keygen) and one in a `substituteFrom` secret. After sync,
 * drift, diff, rollback, status, history and `serve` running a revision
 * whose apply fails on a secret value, the markers are in the cluster's
 * Secret — and nowhere in the store, the logs or any command's output, in
 * any form (as is, base64).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api } from '@kubernetes/client-node';
import { CLI, runDriftless, TSX, type CliRun } from '../harness/driftless-cli.ts';
import { eventually } from '../harness/eventually.ts';
import {
  pushFiles,
  startGitServer,
  type GitRepository,
  type GitServer,
} from '../harness/git-server.ts';
import { freePort } from '../harness/processes.ts';
import { rendererBinaries, rendererEnvironment } from '../harness/renderers.ts';
import {
  createTestNamespace,
  sharedKubeConfig,
  sharedKubeconfigPath,
} from '../harness/shared-cluster.ts';
import { generateAgeKey, sopsEncrypt, type AgeKey } from '../harness/sops.ts';

const planted = (what: string): string => `planted-${what}-${randomBytes(6).toString('hex')}`;

describe('planted secrets never leave the cluster', () => {
  let git: GitServer;
  let repo: GitRepository;
  let dir: string;
  let ns: string;
  let core: CoreV1Api;
  let env: NodeJS.ProcessEnv;
  let key: AgeKey;
  /** Everything any command printed, and every log line. */
  const printed: string[] = [];
  /** Markers that must appear nowhere but in the cluster. */
  const markers: string[] = [];

  const driftless = async (...args: string[]): Promise<CliRun> => {
    const run = await runDriftless(args, { cwd: dir, env });
    printed.push(run.stdout, run.stderr);
    return run;
  };

  /** A revision: a SOPS-encrypted Secret holding `sopsValue`, one fed by substituteFrom, and `extra` files. */
  async function pushRevision(sopsValue: string, extra: Record<string, string> = {}) {
    const secret = [
      'apiVersion: v1',
      'kind: Secret',
      'metadata:',
      '  name: sops-secret',
      'stringData:',
      `  password: ${sopsValue}`,
      '',
    ].join('\n');
    return pushFiles(repo, {
      'sops-secret.yaml': await sopsEncrypt(secret, {
        format: 'yaml',
        age: [key.recipient],
        encryptedRegex: '^(data|stringData)$',
      }),
      'vars-secret.yaml':
        'apiVersion: v1\nkind: Secret\nmetadata: {name: vars-secret}\nstringData: {token: "${API_TOKEN}"}\n',
      'settings.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {cluster: "${CLUSTER}"}\n',
      ...extra,
    });
  }

  const secretValue = async (name: string, field: string): Promise<string | undefined> => {
    const secret = await core.readNamespacedSecret({ name, namespace: ns });
    const value = secret.data?.[field];
    return value === undefined ? undefined : Buffer.from(value, 'base64').toString('utf8');
  };

  before(async () => {
    const kc = sharedKubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    ns = await createTestNamespace(kc, 'secrets');
    git = await startGitServer();
    repo = await git.createRepository('secrets');
    dir = await mkdtemp(join(tmpdir(), 'driftless-secrets-e2e-'));
    key = await generateAgeKey();
    env = {
      ...process.env,
      ...rendererEnvironment(await rendererBinaries()),
      NO_COLOR: '1',
      TEST_GIT_CREDENTIALS: `${git.username}:${git.password}`,
      SOPS_AGE_KEY_REF: key.identity,
    };
    await writeFile(
      join(dir, 'driftless.yaml'),
      [
        'store: {type: fs, path: store}',
        'clusters:',
        '  - name: test',
        `    kubeconfig: ${sharedKubeconfigPath()}`,
        'tracks:',
        '  - name: app',
        `    repository: ${repo.url}`,
        `    namespace: ${ns}`,
        '    auth: {type: basic, secret: env:TEST_GIT_CREDENTIALS}',
        '    decryption: {provider: sops, keys: [env:SOPS_AGE_KEY_REF]}',
        '    substitute: {CLUSTER: e2e}',
        '    substituteFrom: [{secret: file:vars.env}]',
        '',
      ].join('\n'),
    );
  });

  after(async () => {
    await core.deleteNamespace({ name: ns }).catch(() => undefined);
    await git?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('sync, drift, diff, rollback, status and history: the values reach the cluster, nothing else', async () => {
    // Prepare
    const sopsFirst = planted('sops-first');
    const tokenFirst = planted('token-first');
    markers.push(sopsFirst, tokenFirst, key.identity);
    await writeFile(join(dir, 'vars.env'), `API_TOKEN=${tokenFirst}\n`);
    const first = await pushRevision(sopsFirst);

    // Act + Assess: sync puts both in the cluster.
    const sync = await driftless('sync', '--track', 'app', '-o', 'json');
    assert.equal(sync.code, 0, sync.stderr);
    assert.equal(JSON.parse(sync.stdout).result, 'applied');
    assert.equal(await secretValue('sops-secret', 'password'), sopsFirst);
    assert.equal(await secretValue('vars-secret', 'token'), tokenFirst);
    assert.equal(
      (await core.readNamespacedConfigMap({ name: 'settings', namespace: ns })).data?.cluster,
      'e2e',
    );

    // In sync: no drift, no differences.
    const clean = await driftless('diff', '--track', 'app', '-o', 'json');
    assert.equal(clean.code, 0, clean.stdout + clean.stderr);
    const noDrift = await driftless('drift', '--track', 'app', '--detect-only', '-o', 'json');
    assert.equal(noDrift.code, 0, noDrift.stdout + noDrift.stderr);

    // A hand edit: diff (text and JSON) and drift show that the key changed, not to what.
    const edited = planted('edited');
    markers.push(edited);
    const live = await core.readNamespacedSecret({ name: 'sops-secret', namespace: ns });
    live.data = { ...live.data, password: Buffer.from(edited).toString('base64') };
    await core.replaceNamespacedSecret({
      name: 'sops-secret',
      namespace: ns,
      body: live,
      fieldManager: 'kubectl-edit',
    });
    const diffText = await driftless('diff', '--track', 'app');
    assert.equal(diffText.code, 1, diffText.stderr);
    assert.match(diffText.stdout, /^- {2}password: '\*\*\* \(hmac:[0-9a-f]{12}\)'$/m);
    assert.match(diffText.stdout, /^\+ {2}password: '\*\*\* \(hmac:[0-9a-f]{12}\)'$/m);
    const diffJson = await driftless('diff', '--track', 'app', '-o', 'json');
    assert.equal(diffJson.code, 1, diffJson.stderr);
    assert.deepEqual(
      JSON.parse(diffJson.stdout).changes.map((c: { subject: string }) => c.subject),
      [`Secret/${ns}/sops-secret`],
    );
    const drift = await driftless('drift', '--track', 'app', '-o', 'json');
    assert.equal(JSON.parse(drift.stdout).drifted[0].subject, `Secret/${ns}/sops-secret`);
    assert.equal(await secretValue('sops-secret', 'password'), sopsFirst, 'drift put it back');

    // A second revision, then a rollback to the first: decrypted and substituted again.
    const sopsSecond = planted('sops-second');
    const tokenSecond = planted('token-second');
    markers.push(sopsSecond, tokenSecond);
    await writeFile(join(dir, 'vars.env'), `API_TOKEN=${tokenSecond}\n`);
    await pushRevision(sopsSecond);
    assert.equal((await driftless('sync', '--track', 'app')).code, 0);
    assert.equal(await secretValue('sops-secret', 'password'), sopsSecond);
    const rollback = await driftless(
      'rollback',
      '--track',
      'app',
      '--revision',
      first,
      '-o',
      'json',
    );
    assert.equal(rollback.code, 0, rollback.stdout + rollback.stderr);
    assert.equal(await secretValue('sops-secret', 'password'), sopsFirst);
    assert.equal(
      await secretValue('vars-secret', 'token'),
      tokenSecond,
      'substituteFrom is read now',
    );
    for (const args of [
      ['status', '-o', 'json'],
      ['status'],
      ['history', '--track', 'app', '-o', 'json'],
      ['history', '--track', 'app'],
      ['render', '--track', 'app'],
    ]) {
      assert.equal((await driftless(...args)).code, 0, args.join(' '));
    }
    assert.equal((await driftless('unpin', '--track', 'app')).code, 0);
  });

  it('serve with an apply the cluster refuses: the error is recorded and logged without the value', async () => {
    // Prepare: a substituteFrom value the API server quotes back when it refuses it (a bad name).
    const badName = `Planted-Bad-${randomBytes(4).toString('hex')}`;
    markers.push(badName);
    await writeFile(join(dir, 'vars.env'), `API_TOKEN=${markers[1]}\nBAD_NAME=${badName}\n`);
    const bad = await pushRevision(markers[0]!, {
      'bad.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "${BAD_NAME}"}\n',
    });
    const port = await freePort();

    // Act: serve polls the track at start and applies the new revision, which fails.
    const child = spawn(process.execPath, ['--import', TSX, CLI, 'serve', '--port', String(port)], {
      cwd: dir,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let logs = '';
    child.stdout.on('data', (chunk: Buffer) => (logs += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (logs += chunk.toString('utf8')));
    try {
      const failed = await eventually(
        async () => {
          const status = await driftless('status', '--track', 'app', '-o', 'json');
          const parsed = JSON.parse(status.stdout || '{}') as unknown;
          const state = (Array.isArray(parsed) ? parsed[0] : parsed) as {
            desiredRevision?: string;
            conditions?: { type: string; status: string }[];
          };
          return (
            state.desiredRevision === bad &&
            state.conditions?.some((c) => c.type === 'Ready' && c.status === 'False') === true
          );
        },
        90_000,
        1_000,
      );
      assert.ok(failed, `serve did not record the failed apply:\n${logs}`);
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.on('exit', resolve));
    }
    printed.push(logs);

    // Assess: the refusal is there, the value is not.
    const status = await driftless('status', '--track', 'app', '-o', 'json');
    assert.match(status.stdout, /\*\*\*/, 'the API server quoted the value, redacted');
    assert.match(status.stdout, /other objects? not applied for their sake/);
    assert.ok(logs.includes('"level"'), 'serve logged JSON lines');
  });

  it('finds the markers in the cluster and nowhere else', async () => {
    const store = join(dir, 'store');
    const files = await readdir(store, { recursive: true, withFileTypes: true });
    const stored: string[] = [];
    for (const entry of files) {
      if (entry.isFile()) stored.push(await readFile(join(entry.parentPath, entry.name), 'utf8'));
    }
    assert.ok(stored.length > 3, 'the store holds artifacts, state and history');
    for (const marker of markers) {
      for (const form of [marker, Buffer.from(marker).toString('base64')]) {
        assert.ok(!stored.some((text) => text.includes(form)), 'a marker is in the store');
        assert.ok(!printed.some((text) => text.includes(form)), 'a marker was printed');
      }
    }
    // The refused revision changed nothing that ran: the second revision's value is still there.
    assert.equal(await secretValue('sops-secret', 'password'), markers[4]);
  });
});
