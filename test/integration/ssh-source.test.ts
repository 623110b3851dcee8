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
import { after, before, describe, it } from 'node:test';
import { parseConfig } from '../../src/config/index.ts';
import type { SecretRef } from '../../src/config/secret-ref.ts';
import { createTrackSource } from '../../src/source/track-source.ts';
import { syncTrack, type SyncDeps } from '../../src/sync/sync-track.ts';
import { pushFiles, runGit, type GitRepository } from '../harness/git-server.ts';
import { sshKey, startSshd, type SshKey, type SshServer } from '../harness/sshd.ts';
import { TrackFixture } from '../harness/track-fixture.ts';
import { driftAndWriteBack } from '../harness/write-back.ts';

const configMap = (value: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {value: "${value}"}\n`;

describe('Git over SSH', () => {
  const fixture = new TrackFixture('ssh');
  let sshd: SshServer;
  let keys: { ed25519: SshKey; ecdsa: SshKey; rsa: SshKey; protected: SshKey; stranger: SshKey };
  const secrets = new Map<string, string>();
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
    const readSecret = async (ref: SecretRef): Promise<string> => {
      if (ref.scheme === 'env' && secrets.has(ref.name)) return secrets.get(ref.name)!;
      throw new Error(`unexpected reference ${JSON.stringify(ref)}`);
    };
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
