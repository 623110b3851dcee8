/**
 * `npm run build`: bundles the `driftless` command with esbuild into
 * `dist/cli/` — ESM with code splitting, so each command loads only the
 * chunks it reaches (src/cli/main.ts imports every command lazily, and the
 * AWS SDK, isomorphic-git and serve code sit behind dynamic imports of
 * their own). One bundle instead of tsc's file per module: Node no longer
 * resolves and compiles hundreds of files of dist/ and node_modules at
 * every start.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Metafile } from 'esbuild';
import esbuildPlugins from '../infra/esbuild/plugins.cjs';

const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));

/** Where `npm run build` writes the bundle; bin/driftless.js imports its entry. */
export const CLI_DIST_DIR = join(REPO_ROOT, 'dist', 'cli');

/** The bundle's entry file, relative to its directory. */
export const CLI_ENTRY_FILE = 'run.js';

/**
 * Bundles src/cli/run.ts into `outDir` (emptied first) and returns esbuild's
 * metafile, which says what each chunk holds and imports.
 */
export async function buildCli(outDir: string = CLI_DIST_DIR): Promise<Metafile> {
  // Chunk names carry a content hash: chunks of an earlier build would linger.
  await rm(outDir, { recursive: true, force: true });
  const result = await build({
    absWorkingDir: REPO_ROOT,
    entryPoints: { run: 'src/cli/run.ts' },
    outdir: outDir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    // package.json's engines.
    target: 'node20.19',
    // The ESM builds of dependencies that ship both, as the Lambda bundles take them.
    mainFields: ['module', 'main'],
    // Whitespace and syntax only: identifiers stay, so class names (DriftlessError
    // subclasses name themselves after their class) and DRIFTLESS_DEBUG stacks read as in src/.
    minifyWhitespace: true,
    minifySyntax: true,
    chunkNames: 'chunks/[name]-[hash]',
    // CommonJS dependencies bundled into ESM call require() for Node's built-ins.
    banner: {
      js: "import { createRequire as __driftlessRequire } from 'node:module'; const require = __driftlessRequire(import.meta.url);",
    },
    // ssh2's optional native addons: the JavaScript fallback, the same in every bundle.
    plugins: esbuildPlugins,
    metafile: true,
    logLevel: 'warning',
  });
  return result.metafile;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await buildCli();
}
