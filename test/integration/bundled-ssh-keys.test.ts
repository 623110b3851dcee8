/**
 * ssh2 as the bundles carry it — built by esbuild with the shared plugins
 * (infra/esbuild/plugins.cjs), so bcrypt-pbkdf runs on Node's SHA-512 rather
 * than tweetnacl — opens passphrase-protected deploy keys made by the real
 * ssh-keygen (Debian's openssh-client) and refuses a wrong passphrase.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { build } from 'esbuild';
import esbuildPlugins from '../../infra/esbuild/plugins.cjs';
import { sshKey } from '../harness/sshd.ts';

interface ParsedKey {
  readonly type: string;
  getPublicSSH(): Buffer;
}
type ParseKey = (key: string, passphrase?: string) => ParsedKey | Error;

/** ssh2's `utils.parseKey` from a CommonJS bundle of ssh2 built with the shared plugins. */
async function bundledParseKey(dir: string): Promise<{ parseKey: ParseKey; inputs: string[] }> {
  const outfile = join(dir, 'ssh2.cjs');
  const result = await build({
    stdin: { contents: "module.exports = require('ssh2');", resolveDir: process.cwd() },
    outfile,
    bundle: true,
    format: 'cjs',
    platform: 'node',
    metafile: true,
    plugins: esbuildPlugins,
    logLevel: 'silent',
  });
  const ssh2 = createRequire(import.meta.url)(outfile) as { utils: { parseKey: ParseKey } };
  return { parseKey: ssh2.utils.parseKey, inputs: Object.keys(result.metafile.inputs) };
}

describe('bundled ssh2 and passphrase-protected keys', () => {
  it('opens ed25519, ECDSA and RSA keys written with a passphrase, and refuses a wrong one', async (t) => {
    // Prepare
    const dir = await mkdtemp(join(tmpdir(), 'driftless-bundled-ssh2-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const { parseKey, inputs } = await bundledParseKey(dir);
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
