/**
 * Git over SSH against a real OpenSSH sshd (Debian's openssh-server) on a
 * loopback port serving the test repositories with git-upload-pack: deploy
 * keys of every type (and one with a passphrase) fetch and sync; a wrong
 * key, an unknown host key and a changed host key are refused naming the
 * host (and the fingerprint seen), and nothing is applied.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { parseConfig } from '../../src/config/index.ts';
import { InterruptedError } from '../../src/errors.ts';
import type { SecretRef } from '../../src/config/secret-ref.ts';
import { GitFetchError } from '../../src/source/git/errors.ts';
import type { GitSource, TrackSource } from '../../src/source/ports.ts';
import { createTrackSource } from '../../src/source/track-source.ts';
import { syncTrack, type SyncDeps } from '../../src/sync/sync-track.ts';
import { eventually } from '../harness/eventually.ts';
import { startTcpFaultProxy, type TcpFaultProxy } from '../harness/fault-proxy.ts';
import { pushFiles, runGit, type GitRepository } from '../harness/git-server.ts';
import { sshKey, startSshd, type SshKey, type SshServer } from '../harness/sshd.ts';
import { TrackFixture } from '../harness/track-fixture.ts';
import { commitAfter, driftAndWriteBack } from '../harness/write-back.ts';
import { assertInterrupted } from '../harness/interrupted.ts';
import { trackSourceAsBundled } from '../harness/lambda-build.ts';

const configMap = (value: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {value: "${value}"}\n`;

describe('Git over SSH', () => {
  const fixture = new TrackFixture('ssh');
  let sshd: SshServer;
  let keys: { ed25519: SshKey; ecdsa: SshKey; rsa: SshKey; protected: SshKey; stranger: SshKey };
  const secrets = new Map<string, string>();
  const readSecret = async (ref: SecretRef): Promise<string> => {
    if (ref.scheme === 'env' && secrets.has(ref.name)) return secrets.get(ref.name)!;
    throw new Error(`unexpected reference ${JSON.stringify(ref)}`);
  };
  let deps: SyncDeps;
  let workDir: string;
  let repo: GitRepository;

  before(async () => {
    const [ed25519, ecdsa, rsa, protectedKey, stranger] = await Promise.all([
      sshKey('ed25519'),
      sshKey('ecdsa'),
      sshKey('rsa'),
      sshKey('ed25519', 'correct horse'),
      sshKey('ed25519'),
    ]);
    keys = { ed25519, ecdsa, rsa, protected: protectedKey, stranger };
    sshd = await startSshd([ed25519, ecdsa, rsa, protectedKey].map((k) => k.publicKey));
    await fixture.start();
    workDir = await mkdtemp(join(tmpdir(), 'driftless-ssh-cache-'));
    secrets.set('KNOWN_HOSTS', sshd.knownHostsLine);
    deps = { ...fixture.deps, source: createTrackSource({ cacheDir: workDir, readSecret }) };
    repo = await fixture.git.createRepository('over-ssh');
  });

  after(async () => {
    await fixture.stop();
    await sshd?.stop();
    if (workDir) await rm(workDir, { recursive: true, force: true });
  });

  async function sshTrack(name: string, key: SshKey, extra = '') {
    secrets.set(`KEY_${name.replace(/-/g, '_')}`, key.privateKey);
    if (key.passphrase) secrets.set(`PASS_${name.replace(/-/g, '_')}`, key.passphrase);
    const ns = `ssh-${name}-${Date.now().toString(36)}`;
    await fixture.core.createNamespace({ body: { metadata: { name: ns } } });
    after(() => fixture.core.deleteNamespace({ name: ns }).catch(() => undefined));
    const auth = [
      'type: ssh',
      `secret: env:KEY_${name.replace(/-/g, '_')}`,
      'knownHosts: env:KNOWN_HOSTS',
      ...(key.passphrase ? [`passphrase: env:PASS_${name.replace(/-/g, '_')}`] : []),
    ].join(', ');
    const [track] = parseConfig(
      [
        'tracks:',
        `  - name: ${name}`,
        `    repository: ${sshd.urlOf(repo.bareDir)}`,
        `    namespace: ${ns}`,
        `    auth: {${auth}}`,
        extra,
      ].join('\n'),
      'driftless.yaml',
    ).tracks;
    return { track: track!, ns };
  }

  it('fetches and syncs with ed25519, ECDSA, RSA and passphrase-protected deploy keys, fresh and incremental', async () => {
    for (const [label, key] of [
      ['ed25519', keys.ed25519],
      ['ecdsa', keys.ecdsa],
      ['rsa', keys.rsa],
      ['passphrase', keys.protected],
    ] as const) {
      // Prepare
      const sha = await pushFiles(repo, { 'settings.yaml': configMap(label) });
      const { track, ns } = await sshTrack(`key-${label}`, key);

      // Act
      const result = await syncTrack(track, { trigger: 'manual' }, deps);

      // Assess
      assert.equal(result.result, 'applied', `${label}: ${result.error}`);
      assert.equal(result.revision, sha, label);
      assert.equal(await fixture.configMapValue(ns, 'settings'), label);

      // An incremental fetch over the same cache: the next commit.
      const next = await pushFiles(repo, { 'settings.yaml': configMap(`${label}-2`) });
      const again = await syncTrack(track, { trigger: 'manual' }, deps);
      assert.equal(again.result, 'applied', `${label} again: ${again.error}`);
      assert.equal(again.revision, next);
      assert.equal(await fixture.configMapValue(ns, 'settings'), `${label}-2`);
    }
  });

  it('fetches over SSH with the Git source as the fetch function bundles it (ESM, serverless.yml’s esbuild settings)', async (t) => {
    // Prepare: the source built the way serverless package builds the fetch function.
    const source = await trackSourceAsBundled(t, readSecret);
    const sha = await pushFiles(repo, { 'settings.yaml': configMap('bundled') });
    const { track } = await sshTrack('bundled', keys.ed25519);

    // Act
    const resolved = await source.resolve(track);
    const files = await source.readFiles(track, resolved.revision);

    // Assess
    assert.equal(resolved.revision, sha);
    const settings = files.find((file) => file.path === 'settings.yaml');
    assert.match(Buffer.from(settings?.content ?? []).toString('utf8'), /value: "bundled"/);
  });

  it('refuses a wrong key, a wrong passphrase, an unknown host and a changed host key, naming the host, applying nothing', async () => {
    const host = `127\\.0\\.0\\.1:${sshd.port}`;
    const other = await sshKey('ed25519');
    const cases: { name: string; key: SshKey; knownHosts: string; error: RegExp }[] = [
      {
        name: 'a key the server does not accept',
        key: keys.stranger,
        knownHosts: sshd.knownHostsLine,
        error: new RegExp(`@${host} refused the deploy key`),
      },
      {
        name: 'a wrong passphrase',
        key: { ...keys.protected, passphrase: 'not-the-passphrase-7f3a' },
        knownHosts: sshd.knownHostsLine,
        error: new RegExp(`the deploy key for ${host} cannot be read`),
      },
      {
        name: 'an unknown host',
        key: keys.ed25519,
        knownHosts: `[127.0.0.1]:1 ${other.publicKey.split(' ').slice(0, 2).join(' ')}`,
        error: new RegExp(
          `^track "[^"]+": ${host} is not in knownHosts; its host key is ssh-ed25519 SHA256:`,
        ),
      },
      {
        name: 'a changed host key',
        key: keys.ed25519,
        knownHosts: `[127.0.0.1]:${sshd.port} ${other.publicKey.split(' ').slice(0, 2).join(' ')}`,
        error: new RegExp(
          `the host key of ${host} changed: it presented ssh-ed25519 SHA256:\\S+, which is not the key knownHosts holds`,
        ),
      },
    ];
    for (const bad of cases) {
      // Prepare
      secrets.set('KNOWN_HOSTS', bad.knownHosts);
      const { track, ns } = await sshTrack(`bad-${cases.indexOf(bad)}`, bad.key);

      // Act
      const result = await syncTrack(track, { trigger: 'manual' }, deps);

      // Assess
      assert.equal(result.result, 'failed', bad.name);
      assert.match(result.error ?? '', bad.error, bad.name);
      assert.ok(
        !(result.error ?? '').includes('PRIVATE KEY') &&
          !(result.error ?? '').includes('not-the-passphrase-7f3a'),
        `${bad.name}: no key or passphrase in the message`,
      );
      assert.equal(await fixture.configMapValue(ns, 'settings'), undefined, bad.name);
    }
    secrets.set('KNOWN_HOSTS', sshd.knownHostsLine);
  });

  describe('a host that falls silent once connected', () => {
    let proxy: TcpFaultProxy;
    let track: TrackSource;
    let revision: string;

    /** A source whose connections go through a fresh proxy. */
    async function sourceThroughProxy(idleTimeoutMs: number): Promise<GitSource> {
      proxy = await startTcpFaultProxy(sshd.port);
      // The host key is known under the proxy's port: the connection goes through it.
      secrets.set(
        'KNOWN_HOSTS_PROXY',
        sshd.knownHostsLine.replace(`]:${sshd.port} `, `]:${proxy.port} `),
      );
      secrets.set('KEY_SILENT', keys.ed25519.privateKey);
      track = {
        name: 'silent',
        repository: sshd.urlOf(repo.bareDir).replace(`:${sshd.port}/`, `:${proxy.port}/`),
        reference: 'main',
        auth: {
          type: 'ssh',
          secret: { scheme: 'env', name: 'KEY_SILENT' },
          knownHosts: { scheme: 'env', name: 'KNOWN_HOSTS_PROXY' },
        },
      };
      const cacheDir = await mkdtemp(join(workDir, 'silent-'));
      return createTrackSource({ cacheDir, readSecret, idleTimeoutMs });
    }

    /** A source over a fresh proxy, whose parked session (the ref listing's) then goes silent. */
    async function silentAfterListing(idleTimeoutMs: number): Promise<GitSource> {
      const source = await sourceThroughProxy(idleTimeoutMs);
      await pushFiles(repo, { 'settings.yaml': configMap('silent') });
      revision = (await source.resolve(track)).revision;
      proxy.blackhole();
      return source;
    }

    afterEach(() => proxy?.stop());

    it(
      'fails the fetch after the idle timeout, naming the host, and closes the connection',
      // A regression fails here instead of hanging the run.
      { timeout: 60_000 },
      async () => {
        // Prepare
        const source = await silentAfterListing(2_000);

        // Act
        const failure = await source.readFiles(track, revision).then(
          () => undefined,
          (error: unknown) => error,
        );

        // Assess
        assert.ok(failure instanceof GitFetchError, String(failure));
        assert.match(failure.message, /127\.0\.0\.1:\d+ sent nothing over SSH for 2 s/);
        assert.ok(
          await eventually(async () => proxy.connections === 0, 10_000, 20),
          `connections still open: ${proxy.connections}`,
        );
      },
    );

    it(
      'closes the connection at once when the call is asked to stop',
      // A regression fails here instead of hanging the run.
      { timeout: 60_000 },
      async () => {
        // Prepare: an idle timeout far beyond the test's; only the signal can end the fetch.
        const source = await silentAfterListing(600_000);
        const controller = new AbortController();
        const reading = source.readFiles(track, revision, 'manifests', {
          signal: controller.signal,
        });
        reading.catch(() => undefined);
        // The fetch request is written: the fetch waits for the pack on the parked connection.
        const requested = await eventually(async () => proxy.swallowed > 0, 10_000, 20);
        const connectedWhileReading = proxy.connections;

        // Act
        controller.abort(new Error('interrupted by SIGINT'));

        // Assess
        const closed = await eventually(async () => proxy.connections === 0, 10_000, 20);
        assert.ok(requested, 'the fetch request was sent');
        assert.equal(connectedWhileReading, 1);
        assert.ok(closed, `connections still open: ${proxy.connections}`);
        await assert.rejects(reading, (error) => {
          assert.ok(error instanceof GitFetchError, String(error));
          assert.match(error.message, /interrupted by SIGINT/);
          return true;
        });
      },
    );
    it(
      'cancels a write-back push at once when the call is asked to stop',
      // A regression fails here instead of hanging the run.
      { timeout: 60_000 },
      async () => {
        // Prepare: the clone goes through; from the edit on, the host is silent, so the push
        // waits on it. An idle timeout far beyond the test's: only the signal can end it.
        const source = await sourceThroughProxy(600_000);
        const head = await pushFiles(repo, { 'settings.yaml': configMap('before-push') });
        const controller = new AbortController();
        const pushing = source.commit!(
          track,
          commitAfter(() => proxy.blackhole(), { 'settings.yaml': configMap('from-cluster') }),
          { signal: controller.signal },
        );
        pushing.catch(() => undefined);
        const requested = await eventually(async () => proxy.swallowed > 0, 10_000, 20);

        // Act
        controller.abort(new InterruptedError('interrupted by SIGINT'));

        // Assess: the connection is closed, the call fails with the interruption, and the
        // branch is where it was.
        const closed = await eventually(async () => proxy.connections === 0, 10_000, 20);
        assert.ok(requested, 'the push sent its first bytes');
        assert.ok(closed, `connections still open: ${proxy.connections}`);
        await assertInterrupted(pushing);
        const main = await runGit(['--git-dir', repo.bareDir, 'rev-parse', 'main']);
        assert.equal(main.trim(), head);
      },
    );
  });

  it('writes a cluster change back over SSH (git-receive-pack through the deploy key)', async () => {
    // Prepare: a syncTo: git track over SSH, synced; then the value is changed in the cluster.
    const writable = await fixture.git.createRepository('write-back-over-ssh');
    await pushFiles(writable, { 'settings.yaml': `# tuned live\n${configMap('from-git')}` });
    const { track } = await sshTrack('ssh-write', keys.ed25519, '    rules: [{syncTo: git}]');
    const over = { ...track, repository: sshd.urlOf(writable.bareDir) };
    assert.equal((await syncTrack(over, { trigger: 'manual' }, deps)).result, 'applied');
    const ns = over.namespace!;
    await fixture.core.patchNamespacedConfigMap({
      name: 'settings',
      namespace: ns,
      body: [{ op: 'replace', path: '/data/value', value: 'from-cluster' }],
    });

    // Act
    const { written } = await driftAndWriteBack(over, deps);

    // Assess: pushed through sshd's git-receive-pack; the file keeps its comment.
    assert.equal(written.result, 'written-back', written.error);
    const file = await runGit(['--git-dir', writable.bareDir, 'show', 'main:settings.yaml']);
    assert.match(file, /^# tuned live\n/);
    assert.match(file, /value: "?from-cluster"?/);
    assert.equal(
      (await runGit(['--git-dir', writable.bareDir, 'rev-parse', 'main'])).trim(),
      written.commit,
    );
  });
});
