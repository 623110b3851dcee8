/**
 * Entry of the installed `driftless` command (bin/driftless.cjs requires its
 * bundle, dist/cli/launch.cjs): runs the CLI's bundle, dist/cli/driftless.cjs,
 * with the command's code cache (compile-cache.ts says why and how).
 */
import { join } from 'node:path';
import { runBundle } from './compile-cache.ts';

/** The bundle's digest, which scripts/build-cli.ts writes into this file's bundle. */
declare const DRIFTLESS_BUNDLE_DIGEST: string;

runBundle({
  // This file runs as dist/cli/launch.cjs, beside the bundle.
  bundle: join(__dirname, 'driftless.cjs'),
  digest: DRIFTLESS_BUNDLE_DIGEST,
  args: process.argv.slice(2),
  env: process.env,
});
