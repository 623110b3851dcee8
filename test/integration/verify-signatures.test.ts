/**
 * `verify: {keys}` against commits signed by the real git with Debian's
 * gnupg and with `gpg.format=ssh` (ssh-keygen): signed by a trusted key ->
 * synced; unsigned, signed by another key, or altered after signing ->
 * refused with reason VerificationFailed naming the commit and the signer,
 * nothing stored, the cluster unchanged.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { SecretRef } from '../../src/config/secret-ref.ts';
import { conditionOf, readTrackState } from '../../src/sync/track-state.ts';
import { syncTrack, type SyncDeps } from '../../src/sync/sync-track.ts';
import {
  parseTrustedKeys,
  splitSignedCommit,
  verifyCommitSignature,
} from '../../src/source/verify-signature.ts';
import { pushFiles, runGit } from '../harness/git-server.ts';
import { gpgSigningKey, sshSigningKey, type SigningKey } from '../harness/signing.ts';
import { TrackFixture } from '../harness/track-fixture.ts';
import { createGitSource } from '../../src/source/git/index.ts';
import { trackSourceAsBundled } from '../harness/lambda-build.ts';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const configMap = (value: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {value: "${value}"}\n`;

describe('signed commits', () => {
  const fixture = new TrackFixture('verify');
  const keys = new Map<string, string>();
  let deps: SyncDeps;
  let gpg: SigningKey;
  let ssh: { ed25519: SigningKey; ecdsa: SigningKey; rsa: SigningKey };
  let stranger: SigningKey;
  let strangerSsh: SigningKey;
  let readSecret: (ref: SecretRef) => Promise<string>;
  let workDir: string;

  before(async () => {
    [gpg, stranger] = await Promise.all([gpgSigningKey('Trusted Dev'), gpgSigningKey('Stranger')]);
    const [ed25519, ecdsa, rsa, other] = await Promise.all([
      sshSigningKey('ed25519'),
      sshSigningKey('ecdsa'),
      sshSigningKey('rsa'),
      sshSigningKey('ed25519'),
    ]);
    ssh = { ed25519, ecdsa, rsa };
    strangerSsh = other;
    // One reference may hold several keys: armored blocks and ssh- lines together.
    keys.set(
      'SIGNING_KEYS',
      [gpg.publicKey, ed25519.publicKey, ecdsa.publicKey, rsa.publicKey].join('\n'),
    );
    await fixture.start();
    readSecret = async (ref: SecretRef): Promise<string> => {
      if (ref.scheme === 'env' && keys.has(ref.name)) return keys.get(ref.name)!;
      if (ref.scheme === 'env' && ref.name === 'TEST_GIT_CREDENTIALS') {
        return `${fixture.git.username}:${fixture.git.password}`;
      }
      throw new Error(`unexpected reference ${JSON.stringify(ref)}`);
    };
    workDir = await mkdtemp(join(tmpdir(), 'driftless-verify-git-'));
    deps = { ...fixture.deps, source: createGitSource({ cacheDir: workDir, readSecret }) };
  });

  // At the suite's end: an after() called inside before() would run as soon as before() ends.
  after(async () => {
    await fixture.stop();
    const keys = [gpg, stranger, ssh.ed25519, ssh.ecdsa, ssh.rsa, strangerSsh];
    await Promise.all([
      ...keys.map((key) => key.dispose()),
      rm(workDir, { recursive: true, force: true }),
    ]);
  });

  it('syncs commits signed by a trusted OpenPGP, Ed25519, ECDSA or RSA SSH key', async () => {
    const { track, repo, ns } = await fixture.newTrack(
      'signed',
      'verify: {keys: [env:SIGNING_KEYS]}',
    );
    for (const [label, key] of [
      ['gpg', gpg],
      ['ssh ed25519', ssh.ed25519],
      ['ssh ecdsa', ssh.ecdsa],
      ['ssh rsa', ssh.rsa],
    ] as const) {
      // Prepare
      const sha = await pushFiles(repo, { 'settings.yaml': configMap(label) }, key);

      // Act
      const result = await syncTrack(track, { trigger: 'manual' }, deps);

      // Assess
      assert.equal(result.result, 'applied', `${label}: ${result.error}`);
      assert.equal(result.revision, sha, label);
      assert.equal(await fixture.configMapValue(ns, 'settings'), label);
    }
  });

  it('refuses unsigned commits, other keys and altered commits, naming commit and signer', async () => {
    // Prepare: a good signed revision first.
    const { track, repo, ns } = await fixture.newTrack(
      'refused',
      'verify: {keys: [env:SIGNING_KEYS]}',
    );
    const good = await pushFiles(repo, { 'settings.yaml': configMap('good') }, ssh.ed25519);
    assert.equal((await syncTrack(track, { trigger: 'manual' }, deps)).result, 'applied');

    const cases: { name: string; push: () => Promise<string>; error: (sha: string) => RegExp }[] = [
      {
        name: 'unsigned',
        push: () => pushFiles(repo, { 'settings.yaml': configMap('unsigned') }),
        error: (sha) => new RegExp(`^commit ${sha} is not signed$`),
      },
      {
        name: 'another OpenPGP key',
        push: () => pushFiles(repo, { 'settings.yaml': configMap('stranger') }, stranger),
        error: (sha) =>
          new RegExp(
            `^commit ${sha} is signed by OpenPGP key ${stranger.signer}, which is not one of verify.keys$`,
          ),
      },
      {
        name: 'another SSH key',
        push: () => pushFiles(repo, { 'settings.yaml': configMap('stranger-ssh') }, strangerSsh),
        error: (sha) =>
          new RegExp(
            `^commit ${sha} is signed by SSH key ${strangerSsh.signer.replace(/[+/]/g, '\\$&')}, which is not one of verify.keys$`,
          ),
      },
      {
        name: 'altered after signing (a signature copied onto another commit)',
        push: async () => {
          // A commit whose gpgsig header is taken from a commit with other content.
          const signed = await pushFiles(
            repo,
            { 'settings.yaml': configMap('original') },
            ssh.ed25519,
          );
          const raw = await runGit(['cat-file', 'commit', signed], { cwd: repo.bareDir });
          const forged = raw.replace(/\n\n[\s\S]*$/, '\n\nforged message\n');
          const sha = (
            await runGitInput(
              ['hash-object', '-t', 'commit', '-w', '--stdin'],
              repo.bareDir,
              forged,
            )
          ).trim();
          await runGit(['update-ref', 'refs/heads/main', sha], { cwd: repo.bareDir });
          return sha;
        },
        error: (sha) =>
          new RegExp(
            `^commit ${sha}: the SSH signature by ${ssh.ed25519.signer.replace(/[+/]/g, '\\$&')} does not match the commit`,
          ),
      },
    ];

    for (const bad of cases) {
      // Act
      const sha = await bad.push();
      const result = await syncTrack(track, { trigger: 'manual' }, deps);

      // Assess
      assert.equal(result.result, 'failed', bad.name);
      assert.match(result.error ?? '', bad.error(sha), bad.name);
      const state = await readTrackState(deps.state, track.name);
      assert.equal(conditionOf(state, 'Ready')?.reason, 'VerificationFailed', bad.name);
      assert.equal(state.appliedRevision, good, `${bad.name}: the last good revision stays`);
      assert.equal(await deps.artifacts.has(track.name, sha), false, `${bad.name}: nothing stored`);
      assert.equal(await fixture.configMapValue(ns, 'settings'), 'good', bad.name);
    }
  });

  it('verifies OpenPGP and SSH signatures with the Git source as the fetch function bundles it', async (t) => {
    // Prepare: the source built the way serverless package builds the fetch function (openpgp
    // and the SSH signature check as an ES module).
    const source = await trackSourceAsBundled(t, readSecret);
    const { track, repo } = await fixture.newTrack('bundled', 'verify: {keys: [env:SIGNING_KEYS]}');

    for (const [label, key, signer] of [
      ['gpg', gpg, gpg.signer],
      ['ssh ed25519', ssh.ed25519, ssh.ed25519.signer],
      ['another OpenPGP key', stranger, undefined],
    ] as const) {
      const sha = await pushFiles(repo, { 'settings.yaml': configMap(label) }, key);

      // Act
      const verified = source.verifyCommit!(track, sha);

      // Assess
      if (signer === undefined) {
        await assert.rejects(verified, /which is not one of verify.keys$/, label);
      } else {
        assert.match((await verified) ?? '', new RegExp(signer.replace(/[+/]/g, '\\$&')), label);
      }
    }
  });

  it('reads the signature as git writes it: the payload is the commit without gpgsig', async () => {
    const { repo } = await fixture.newTrack('payload');
    const sha = await pushFiles(repo, { 'a.yaml': configMap('a') }, ssh.ed25519);
    const raw = Buffer.from(await runGit(['cat-file', 'commit', sha], { cwd: repo.bareDir }));
    const { payload, signature } = splitSignedCommit(raw);
    assert.match(
      signature ?? '',
      /^-----BEGIN SSH SIGNATURE-----\n[\s\S]+-----END SSH SIGNATURE-----$/,
    );
    assert.ok(!payload.toString().includes('gpgsig'));
    const verified = await verifyCommitSignature(
      raw,
      parseTrustedKeys([ssh.ed25519.publicKey]),
      sha,
    );
    assert.deepEqual(verified, { format: 'ssh', signer: ssh.ed25519.signer });
  });
});

/** git with `input` on stdin. */
async function runGitInput(args: string[], cwd: string, input: string): Promise<string> {
  const { spawn } = await import('node:child_process');
  return new Promise((resolve, reject) => {
    const child = spawn('git', args, { cwd });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(stdout) : reject(new Error(`git ${args[0]} exit ${code}`)),
    );
    child.stdin.end(input);
  });
}
