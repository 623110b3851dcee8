/**
 * esbuild plugins shared by `npm run build` (scripts/build-cli.ts), the
 * Lambda bundles (serverless.yml custom.esbuild.plugins) and
 * bench/lambda-bundles.ts.
 *
 * Native addons are left out of the bundles:
 * ssh2 (SSH Git sources) tries `cpu-features` and its own `sshcrypto.node`
 * inside try/catch and falls back to Node's crypto when they are missing.
 * A bundle cannot carry a compiled `.node` file, and whether npm compiled
 * one depends on the machine that installed the packages; replacing each
 * with a module that throws makes every bundle take the same, portable
 * JavaScript path (`bench/git-fetch.ts` measures SSH fetches on it).
 */
/* global module, require, __dirname */
'use strict';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- CommonJS, as serverless.yml loads it
const path = require('node:path');

const NATIVE_ADDON_NAMESPACE = 'driftless-native-addon';

/** @type {import('esbuild').Plugin} */
const leaveOutNativeAddons = {
  name: 'leave-out-native-addons',
  setup(build) {
    build.onResolve({ filter: /(^cpu-features$)|(\.node$)/ }, (args) => ({
      path: args.path,
      namespace: NATIVE_ADDON_NAMESPACE,
    }));
    build.onLoad({ filter: /.*/, namespace: NATIVE_ADDON_NAMESPACE }, (args) => ({
      contents: `throw new Error(${JSON.stringify(`native addon ${args.path} is not bundled`)});`,
      loader: 'js',
    }));
  },
};

/**
 * Libraries whose modules do nothing when imported, declared so: a bundle
 * that imports one without calling it (the CEL parser reaches the fetch
 * function's bundle through the shared job layer, though only apply judges
 * health; the comment-keeping YAML library reaches apply's, though only
 * fetch writes back) then drops it. esbuild cannot prove it of their
 * top-level class code.
 */
const SIDE_EFFECT_FREE = ['@marcbachmann/cel-js', 'yaml'];

/** @type {import('esbuild').Plugin} */
const sideEffectFreeLibraries = {
  name: 'side-effect-free-libraries',
  setup(build) {
    const filter = new RegExp(
      `^(${SIDE_EFFECT_FREE.map((n) => n.replace(/[/.@-]/g, '\\$&')).join('|')})$`,
    );
    build.onResolve({ filter }, async (args) => {
      if (args.pluginData === 'side-effect-free') return undefined;
      const resolved = await build.resolve(args.path, {
        kind: args.kind,
        resolveDir: args.resolveDir,
        importer: args.importer,
        pluginData: 'side-effect-free',
      });
      return { ...resolved, sideEffects: false };
    });
  },
};

/**
 * bcrypt-pbkdf gets Node's SHA-512 instead of tweetnacl, which it needs for
 * nothing else (bcrypt-pbkdf-sha512.cjs says why). Only its import is
 * replaced; any other importer of tweetnacl gets tweetnacl.
 *
 * @type {import('esbuild').Plugin}
 */
const sha512ForBcryptPbkdf = {
  name: 'sha512-for-bcrypt-pbkdf',
  setup(build) {
    build.onResolve({ filter: /^tweetnacl$/ }, (args) =>
      /[\\/]node_modules[\\/]bcrypt-pbkdf[\\/]/.test(args.importer)
        ? { path: path.join(__dirname, 'bcrypt-pbkdf-sha512.cjs') }
        : undefined,
    );
  },
};

module.exports = [leaveOutNativeAddons, sideEffectFreeLibraries, sha512ForBcryptPbkdf];
