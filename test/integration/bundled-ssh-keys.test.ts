/**
 * ssh2 as the bundles carry it — built by esbuild with the shared plugins
 * (infra/esbuild/plugins.cjs), so bcrypt-pbkdf runs on Node's SHA-512 rather
 * than tweetnacl — opens passphrase-protected deploy keys made by the real
 * ssh-keygen (Debian's openssh-client) and refuses a wrong passphrase.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { bundleWithPlugins } from '../harness/plugin-bundle.ts';
import { sshKey } from '../harness/sshd.ts';

interface ParsedKey {
  readonly type: string;
  getPublicSSH(): Buffer;
}
type ParseKey = (key: string, passphrase?: string) => ParsedKey | Error;

describe('bundled ssh2 and passphrase-protected keys', () => {
  it('opens ed25519, ECDSA and RSA keys written with a passphrase, and refuses a wrong one', async (t) => {
    // Prepare
    const dir = await mkdtemp(join(tmpdir(), 'driftless-bundled-ssh2-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const { exports, inputs } = await bundleWithPlugins('ssh2', dir);
    const { parseKey } = (exports as { utils: { parseKey: ParseKey } }).utils;
    assert.ok(!inputs.some((input) => input.includes('node_modules/tweetnacl/')), 'no tweetnacl');

    for (const type of ['ed25519', 'ecdsa', 'rsa'] as const) {
      const key = await sshKey(type, 'correct horse battery staple');

      // Act
      const opened = parseKey(key.privateKey, key.passphrase);
      const refused = parseKey(key.privateKey, 'wrong passphrase');

      // Assess
      assert.ok(!(opened instanceof Error), `${type}: ${String(opened)}`);
      assert.equal(
        `${opened.type} ${opened.getPublicSSH().toString('base64')}`,
        key.publicKey.split(' ').slice(0, 2).join(' '),
        `${type}: the public half ssh-keygen wrote`,
      );
      assert.ok(refused instanceof Error, `${type}: a wrong passphrase is refused`);
      assert.match(refused.message, /bad passphrase|integrity/i);
    }
  });
});
