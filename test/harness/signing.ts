/**
 * Keys that sign commits the way developers do, with Debian's tools: gnupg
 * (`gpg`) for OpenPGP and OpenSSH's `ssh-keygen` for `gpg.format=ssh`. Each
 * key lives in its own throwaway directory; {@link SigningKey.commitConfig}
 * is what `git commit` needs to sign with it (see pushFiles' options).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface SigningKey {
  /** What `verify.keys` holds for it: an armored public key block, or an `ssh-...` line. */
  readonly publicKey: string;
  /** `git -c` settings that sign a commit with it. */
  readonly commitConfig: readonly string[];
  /** Environment `git commit` needs (GNUPGHOME for gpg). */
  readonly commitEnv: Readonly<Record<string, string>>;
  /** How the verifier names the signer: an OpenPGP key id suffix, or the SSH fingerprint. */
  readonly signer: string;
  /**
   * Stops what the key started and removes its directory. gpg starts a
   * `gpg-agent` per GNUPGHOME that outlives the test process; killing it
   * first matters, since an agent whose socket is deleted under it keeps
   * running.
   */
  dispose(): Promise<void>;
}

/** A fresh OpenPGP key (Ed25519, no passphrase) in its own GNUPGHOME. */
export async function gpgSigningKey(name = 'Driftless Test'): Promise<SigningKey> {
  const home = await mkdtemp(join(tmpdir(), 'driftless-gpg-'));
  const env = { ...process.env, GNUPGHOME: home };
  const email = `${name.toLowerCase().replace(/\W+/g, '.')}@driftless.test`;
  await run(
    'gpg',
    [
      '--batch',
      '--passphrase',
      '',
      '--quick-generate-key',
      `${name} <${email}>`,
      'ed25519',
      'sign',
      'never',
    ],
    { env },
  );
  const { stdout: listing } = await run('gpg', ['--batch', '--with-colons', '--list-keys', email], {
    env,
  });
  const fingerprint = /^fpr:+([0-9A-F]{40}):/m.exec(listing)?.[1];
  if (fingerprint === undefined) throw new Error('gpg printed no fingerprint');
  const { stdout: publicKey } = await run('gpg', ['--batch', '--armor', '--export', fingerprint], {
    env,
  });
  return {
    publicKey,
    commitConfig: ['commit.gpgsign=true', `user.signingkey=${fingerprint}`, 'gpg.program=gpg'],
    commitEnv: { GNUPGHOME: home },
    signer: fingerprint.slice(-16),
    dispose: async () => {
      await run('gpgconf', ['--kill', 'gpg-agent'], { env });
      await rm(home, { recursive: true, force: true });
    },
  };
}

/** A fresh SSH key of `type` (no passphrase), signing with `gpg.format=ssh`. */
export async function sshSigningKey(
  type: 'ed25519' | 'ecdsa' | 'rsa' = 'ed25519',
): Promise<SigningKey> {
  const dir = await mkdtemp(join(tmpdir(), 'driftless-sshsig-'));
  const key = join(dir, 'key');
  await run('ssh-keygen', ['-q', '-t', type, '-N', '', '-C', `driftless-${type}`, '-f', key]);
  const publicKey = (await readFile(`${key}.pub`, 'utf8')).trim();
  const { stdout } = await run('ssh-keygen', ['-l', '-E', 'sha256', '-f', `${key}.pub`]);
  const signer = /(SHA256:\S+)/.exec(stdout)?.[1] ?? '';
  return {
    publicKey,
    commitConfig: ['commit.gpgsign=true', 'gpg.format=ssh', `user.signingkey=${key}`],
    commitEnv: {},
    signer,
    dispose: () => rm(dir, { recursive: true, force: true }),
  };
}
