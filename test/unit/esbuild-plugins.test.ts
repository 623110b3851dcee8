/**
 * infra/esbuild/plugins.cjs, shared by the Lambda bundles and the CLI's:
 * bcrypt-pbkdf (ssh2's key derivation for passphrase-protected OpenSSH keys)
 * gets Node's SHA-512 in place of tweetnacl. tweetnacl, as installed for
 * bcrypt-pbkdf, is the oracle for the hash, and bcrypt-pbkdf as installed is
 * the oracle for the key it derives once bundled.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { bundleWithPlugins } from '../harness/plugin-bundle.ts';

const require = createRequire(import.meta.url);
const requireFromBcryptPbkdf = createRequire(require.resolve('bcrypt-pbkdf'));

type CryptoHash = (out: Uint8Array, m: Uint8Array, n: number) => number;
type Pbkdf = (
  pass: Uint8Array,
  passlen: number,
  salt: Uint8Array,
  saltlen: number,
  key: Uint8Array,
  keylen: number,
  rounds: number,
) => number;

describe('esbuild plugins: SHA-512 for bcrypt-pbkdf', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-plugin-bundle-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('hashes as tweetnacl does, whatever the length and however much of the buffer is used', () => {
    // Prepare
    const tweetnacl = requireFromBcryptPbkdf('tweetnacl') as {
      lowlevel: { crypto_hash: CryptoHash };
    };
    const shim = require('../../infra/esbuild/bcrypt-pbkdf-sha512.cjs') as {
      lowlevel: { crypto_hash: CryptoHash };
    };
    for (const [size, used] of [
      [0, 0],
      [1, 1],
      [64, 64],
      [111, 111],
      [112, 112],
      [128, 128],
      [300, 300],
      [68, 20],
    ] as const) {
      const message = randomBytes(size);
      const expected = new Uint8Array(64);
      const actual = new Uint8Array(64);

      // Act
      const expectedCode = tweetnacl.lowlevel.crypto_hash(expected, message, used);
      const actualCode = shim.lowlevel.crypto_hash(actual, message, used);

      // Assess
      assert.deepEqual(actual, expected, `${used} of ${size} bytes`);
      assert.equal(actualCode, expectedCode);
    }
  });

  it('derives the same key from bcrypt-pbkdf bundled without tweetnacl as from bcrypt-pbkdf installed', async () => {
    // Prepare
    const installed = (require('bcrypt-pbkdf') as { pbkdf: Pbkdf }).pbkdf;
    const { exports, inputs } = await bundleWithPlugins('bcrypt-pbkdf', dir);
    const bundled = (exports as { pbkdf: Pbkdf }).pbkdf;
    const pass = Buffer.from('correct horse battery staple');
    const salt = randomBytes(16);
    const expected = Buffer.alloc(48);
    const actual = Buffer.alloc(48);

    // Act
    installed(pass, pass.length, salt, salt.length, expected, expected.length, 16);
    bundled(pass, pass.length, salt, salt.length, actual, actual.length, 16);

    // Assess
    assert.deepEqual(actual, expected);
    assert.ok(
      !inputs.some((input) => input.includes('node_modules/tweetnacl/')),
      inputs.join(', '),
    );
    assert.ok(inputs.includes('infra/esbuild/bcrypt-pbkdf-sha512.cjs'), inputs.join(', '));
  });

  it('leaves tweetnacl to any other importer', async () => {
    // Act
    const { exports, inputs } = await bundleWithPlugins('tweetnacl', dir);

    // Assess
    assert.ok(
      inputs.some((input) => input.includes('node_modules/tweetnacl/')),
      inputs.join(', '),
    );
    assert.equal(typeof (exports as { sign?: unknown }).sign, 'function');
  });
});
