/**
 * How the Lambda functions are bundled, read from serverless.yml's
 * `custom.esbuild` (serverless-esbuild's settings), so that benches and tests
 * build what a deployment ships: the esbuild options as the file gives them,
 * without the keys serverless-esbuild keeps for itself, and with the plugins
 * module it names loaded.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { TestContext } from 'node:test';
import { build, type BuildOptions, type Plugin } from 'esbuild';
import type { GitSource } from '../../src/source/ports.ts';
import type { TrackSourceOptions } from '../../src/source/track-source.ts';
import { readServerlessYml } from './serverless-yml.ts';
import { REPO_ROOT } from './testbin.ts';

/** serverless-esbuild's own settings, which it does not hand to esbuild (its bundle.js). */
const PACKAGER_KEYS: ReadonlySet<string> = new Set([
  'concurrency',
  'zipConcurrency',
  'disposeContext',
  'exclude',
  'installExtraArgs',
  'keepOutputDirectory',
  'nativeZip',
  'nodeExternals',
  'outputBuildFolder',
  'outputFileExtension',
  'outputWorkFolder',
  'packager',
  'packagerOptions',
  'packagePath',
  'plugins',
  'skipBuild',
  'skipBuildExcludeFns',
  'skipRebuild',
  'stripEntryResolveExtensions',
  'watch',
]);

interface ServerlessYml {
  custom?: { esbuild?: Record<string, unknown> };
}

/** The esbuild options of the Lambda bundles; an unresolved `${...}` in one of them is refused. */
export async function lambdaBuildOptions(): Promise<BuildOptions> {
  const settings = (await readServerlessYml<ServerlessYml>()).custom?.esbuild;
  if (settings === undefined) throw new Error('serverless.yml has no custom.esbuild');
  const options: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(settings)) {
    if (PACKAGER_KEYS.has(key)) continue;
    if (JSON.stringify(value).includes('${')) {
      throw new Error(
        `serverless.yml custom.esbuild.${key}: a variable this reader cannot resolve`,
      );
    }
    options[key] = value;
  }
  const plugins = settings.plugins;
  if (typeof plugins === 'string') {
    options.plugins = createRequire(import.meta.url)(join(REPO_ROOT, plugins)) as Plugin[];
  }
  return options as BuildOptions;
}

/** The functions' entry points (handlers/*.ts), by function name. */
export async function lambdaEntryPoints(): Promise<Map<string, string>> {
  const dir = join(REPO_ROOT, 'handlers');
  const files = (await readdir(dir)).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));
  return new Map(files.sort().map((file) => [basename(file, '.ts'), join(dir, file)]));
}

/**
 * `entry` (a path in the repository) bundled into `dir` the way the functions
 * are, and imported: a test runs a library as a deployed function runs it
 * (an ES module, with only what the banner gives it of CommonJS).
 */
export async function importAsBundled<T>(entry: string, dir: string): Promise<T> {
  const outfile = join(dir, `${basename(entry).replace(/\.[^.]+$/, '')}.mjs`);
  await build({
    ...(await lambdaBuildOptions()),
    entryPoints: [join(REPO_ROOT, entry)],
    outfile,
    logLevel: 'silent',
  });
  return (await import(pathToFileURL(outfile).href)) as T;
}

/**
 * The source of every track as the fetch function bundles it, built into a
 * folder of the test's own (removed after it), which also holds its Git cache.
 */
export async function trackSourceAsBundled(
  t: TestContext,
  readSecret: TrackSourceOptions['readSecret'],
): Promise<GitSource> {
  const dir = await mkdtemp(join(tmpdir(), 'driftless-bundled-source-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const { createTrackSource } = await importAsBundled<{
    createTrackSource: (options: TrackSourceOptions) => GitSource;
  }>('src/source/track-source.ts', dir);
  return createTrackSource({ cacheDir: join(dir, 'cache'), readSecret });
}
