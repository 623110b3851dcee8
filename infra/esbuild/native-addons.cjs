/**
 * esbuild plugin shared by `npm run build` (scripts/build-cli.ts) and the
 * Lambda bundles (serverless.yml custom.esbuild.plugins): leaves native
 * addons out of the bundles.
 *
 * ssh2 (SSH Git sources) tries `cpu-features` and its own `sshcrypto.node`
 * inside try/catch and falls back to Node's crypto when they are missing.
 * A bundle cannot carry a compiled `.node` file, and whether npm compiled
 * one depends on the machine that installed the packages; replacing each
 * with a module that throws makes every bundle take the same, portable
 * JavaScript path (`bench/git-fetch.ts` measures SSH fetches on it).
 */
/* global module */
'use strict';

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

module.exports = [leaveOutNativeAddons];
