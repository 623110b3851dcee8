/**
 * A module bundled as the bundles carry it: esbuild with the shared plugins
 * (infra/esbuild/plugins.cjs), one CommonJS file written to `dir` and
 * required from there (bundled libraries may read `__dirname`).
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { build } from 'esbuild';
import esbuildPlugins from '../../infra/esbuild/plugins.cjs';

export interface PluginBundle {
  /** What the bundle exports. */
  readonly exports: unknown;
  /** The files esbuild put into it, relative to the repository. */
  readonly inputs: string[];
}

/** Bundles `require(specifier)` into `dir` and requires the bundle. */
export async function bundleWithPlugins(specifier: string, dir: string): Promise<PluginBundle> {
  const outfile = join(dir, `${specifier.replace(/[^A-Za-z0-9]/g, '_')}.cjs`);
  const result = await build({
    stdin: {
      contents: `module.exports = require(${JSON.stringify(specifier)});`,
      resolveDir: process.cwd(),
    },
    outfile,
    bundle: true,
    format: 'cjs',
    platform: 'node',
    metafile: true,
    plugins: esbuildPlugins,
    logLevel: 'silent',
  });
  return {
    exports: createRequire(import.meta.url)(outfile) as unknown,
    inputs: Object.keys(result.metafile.inputs),
  };
}
