/**
 * The one thing bcrypt-pbkdf takes from tweetnacl, for the bundles:
 * `lowlevel.crypto_hash(out, m, n)`, the SHA-512 of the first `n` bytes of
 * `m` written into `out`. bcrypt-pbkdf is how ssh2 opens a passphrase-
 * protected OpenSSH deploy key; for that one hash it brings all of
 * tweetnacl, 35 KB of the fetch function's bundle (`npm run bench --
 * lambda-bundles`), which Node's crypto computes natively. tweetnacl stays
 * the oracle: test/unit/esbuild-plugins.test.ts compares the two, and
 * bcrypt-pbkdf bundled with this against bcrypt-pbkdf as installed;
 * test/integration/bundled-ssh-keys.test.ts opens keys ssh-keygen wrote
 * with a passphrase through ssh2 bundled so.
 */
/* global require, module */
'use strict';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- CommonJS, as serverless.yml loads it
const { createHash } = require('node:crypto');

/** tweetnacl's signature: returns 0, as tweetnacl does. */
function crypto_hash(out, m, n) {
  out.set(createHash('sha512').update(m.subarray(0, n)).digest());
  return 0;
}

module.exports = { lowlevel: { crypto_hash } };
