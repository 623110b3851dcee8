/**
 * `npm run build`: bundles the `driftless` command with esbuild into
 * `dist/cli/`, in three parts:
 *
 * - `driftless.cjs`: our code (src/cli/run.ts and everything it reaches)
 *   with the few small libraries most commands use (INLINED_PACKAGES), as
 *   one CommonJS file. A dynamically imported module (each command, the
 *   context, Git, renderers, AWS adapters) becomes a function that runs on
 *   first import, so a command still runs only its own code.
 * - `vendor/<package>.cjs`: every other dependency, one bundle per import
 *   specifier, required from the module that imports it, so only a command
 *   that reaches that module ever reads or compiles it.
 * - `launch.cjs`: what bin/driftless.cjs requires; it runs driftless.cjs
 *   with V8's code cache (src/cli/compile-cache.ts says why CommonJS and
 *   why the large libraries stay out of the cached file).
 */
import { createHash } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { isBuiltin } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type BuildOptions, type Metafile, type Plugin } from 'esbuild';
import esbuildPlugins from '../infra/esbuild/plugins.cjs';

const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));

/** Where `npm run build` writes the bundle; bin/driftless.cjs requires its launcher. */
export const CLI_DIST_DIR = join(REPO_ROOT, 'dist', 'cli');

/** The launcher, relative to the output folder. */
export const CLI_LAUNCHER_FILE = 'launch.cjs';

/** The bundle of our code the launcher runs, relative to the output folder. */
const CLI_BUNDLE_FILE = 'driftless.cjs';

/** The folder of the dependencies' bundles, relative to the output folder. */
export const CLI_VENDOR_DIR = 'vendor';

/**
 * Dependencies bundled into driftless.cjs: small, and used by the commands
 * that run often (config, manifests, the apply path). Every other package
 * goes to vendor/.
 */
export const INLINED_PACKAGES: ReadonlySet<string> = new Set([
  'js-yaml',
  'zod',
  'fast-json-patch',
  'semver',
  'diff',
  'ignore',
]);

/** `@scope/name` or `name` of a bare import specifier. */
export function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? specifier);
}

/** vendor/ file name of an import specifier: `@aws-sdk/client-s3` → `aws-sdk__client-s3.cjs`. */
export function vendorFileOf(specifier: string): string {
  return `${specifier
    .replace(/^@/, '')
    .replace(/\//g, '__')
    .replace(/[^A-Za-z0-9._-]/g, '_')}.cjs`;
}

/**
 * Resolves every bare import of a package outside INLINED_PACKAGES to
 * `./vendor/<file>` (left external) and records the specifier.
 */
function vendorPlugin(specifiers: Set<string>): Plugin {
  return {
    name: 'driftless-vendor',
    setup(pluginBuild) {
      pluginBuild.onResolve({ filter: /^[^./]/ }, (args) => {
        if (isBuiltin(args.path) || INLINED_PACKAGES.has(packageOf(args.path))) return undefined;
        specifiers.add(args.path);
        return { path: `./${CLI_VENDOR_DIR}/${vendorFileOf(args.path)}`, external: true };
      });
    },
  };
}

/** What every part shares: Node 20.19 (package.json's engines), CommonJS, whitespace and syntax minified. */
const COMMON: BuildOptions = {
  absWorkingDir: REPO_ROOT,
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20.19',
  // The ESM builds of dependencies that ship both, as the Lambda bundles take them.
  mainFields: ['module', 'main'],
  // Whitespace and syntax only: identifiers stay, so class names (DriftlessError
  // subclasses name themselves after their class) and DRIFTLESS_DEBUG stacks read as in src/.
  minifyWhitespace: true,
  minifySyntax: true,
  // `import()` as `require()`: the launcher's vm.Script has no ES module loader.
  supported: { 'dynamic-import': false },
  metafile: true,
  logLevel: 'warning',
};

/** The metafile of a build made with COMMON's `metafile: true`. */
function metafileOf(result: { metafile?: Metafile | undefined }): Metafile {
  if (result.metafile === undefined) throw new Error('esbuild returned no metafile');
  return result.metafile;
}

/** What a build wrote: the metafile of driftless.cjs, and what vendor/ holds. */
export interface CliBuild {
  readonly bundle: Metafile;
  /** The import specifiers that have a vendor/ bundle. */
  readonly vendored: readonly string[];
}

/** Bundles the CLI into `outDir` (emptied first). */
export async function buildCli(outDir: string = CLI_DIST_DIR): Promise<CliBuild> {
  await rm(outDir, { recursive: true, force: true });
  const specifiers = new Set<string>();
  const bundle = await build({
    ...COMMON,
    entryPoints: { [CLI_BUNDLE_FILE.replace(/\.cjs$/, '')]: 'src/cli/run.ts' },
    outdir: outDir,
    outExtension: { '.js': '.cjs' },
    // web-assets.ts finds dist/web from its own file: the bundle's, in CommonJS.
    define: { 'import.meta.url': '__driftlessModuleUrl' },
    banner: {
      js: "const __driftlessModuleUrl = require('node:url').pathToFileURL(__filename).href;",
    },
    // ssh2's optional native addons: the JavaScript fallback, the same in every bundle.
    plugins: [...esbuildPlugins, vendorPlugin(specifiers)],
  });
  const vendored = [...specifiers].sort();
  // Each vendor bundle is its package as `require` returns it, so the bundle's
  // interop sees what it would see from node_modules.
  await build({
    ...COMMON,
    entryPoints: vendored.map((specifier) => ({
      in: `driftless-vendor:${specifier}`,
      out: vendorFileOf(specifier).replace(/\.cjs$/, ''),
    })),
    outdir: join(outDir, CLI_VENDOR_DIR),
    outExtension: { '.js': '.cjs' },
    plugins: [
      ...esbuildPlugins,
      {
        name: 'driftless-vendor-entry',
        setup(pluginBuild) {
          pluginBuild.onResolve({ filter: /^driftless-vendor:/ }, (args) => ({
            path: args.path.slice('driftless-vendor:'.length),
            namespace: 'driftless-vendor',
          }));
          pluginBuild.onLoad({ filter: /.*/, namespace: 'driftless-vendor' }, (args) => ({
            contents: `module.exports = require(${JSON.stringify(args.path)});`,
            resolveDir: REPO_ROOT,
            loader: 'js',
          }));
        },
      },
    ],
  });
  const digest = createHash('sha256')
    .update(await readFile(join(outDir, CLI_BUNDLE_FILE)))
    .digest('hex')
    .slice(0, 16);
  await build({
    ...COMMON,
    entryPoints: { [CLI_LAUNCHER_FILE.replace(/\.cjs$/, '')]: 'src/cli/launch.ts' },
    outdir: outDir,
    outExtension: { '.js': '.cjs' },
    define: { DRIFTLESS_BUNDLE_DIGEST: JSON.stringify(digest) },
    metafile: false,
  });
  return { bundle: metafileOf(bundle), vendored };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await buildCli();
}
