/**
 * Each Lambda function as serverless.yml's esbuild settings bundle it
 * (read from the file: bundle, minify, ESM, node22, module-first main
 * fields, the banner, the shared plugins): its size, and its module init time — importing the bundle in a
 * fresh `node` process, which is what a Lambda cold start's init phase runs.
 * And the size of fetch's `renderers` layer (kustomize and helm).
 */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { deflateRawSync } from 'node:zlib';
import { build, type Metafile } from 'esbuild';
import { lambdaBuildOptions, lambdaEntryPoints } from '../test/harness/lambda-build.ts';
import { REPO_ROOT, runBuildScript } from '../test/harness/testbin.ts';
import { runCommand } from './lib/command.ts';
import type { BenchContext } from './lib/context.ts';
import type { Benchmark, Measurement } from './lib/types.ts';

/** Prints how long importing the module at argv[1] took, in ms. */
const IMPORT_PROBE =
  'const start = performance.now(); await import(process.argv[1]); console.log(performance.now() - start);';

/** The packages (or `src/`) contributing most to a bundle: why a bundle is as big as it is. */
function largestInputs(metafile: Metafile, top = 4): string {
  const bytes = new Map<string, number>();
  for (const output of Object.values(metafile.outputs)) {
    for (const [path, input] of Object.entries(output.inputs)) {
      const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
      const owner = match?.[1] ?? path.split('/')[0] ?? path;
      bytes.set(owner, (bytes.get(owner) ?? 0) + input.bytesInOutput);
    }
  }
  return [...bytes.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([owner, n]) => `${owner} ${(n / 1024).toFixed(0)} KB`)
    .join(', ');
}

const MB = 1024 * 1024;

/**
 * A tool layer's size: the binaries infra/renderers/build.sh builds for
 * linux/arm64 (what infra/serverless/renderers-layer.js stages), and their
 * deflated size, which is what the packager's zip holds of them. `renderers`
 * (kustomize, helm) goes to fetch, `decryption` (sops) to apply.
 */
async function toolLayer(layer: string, tools: readonly string[]): Promise<Measurement[]> {
  const built = await runBuildScript(join(REPO_ROOT, 'infra/renderers/build.sh'), [
    '--target',
    'linux/arm64',
    ...tools,
  ]);
  let zipped = 0;
  let unpacked = 0;
  for (const path of built.values()) {
    const binary = await readFile(path);
    unpacked += binary.length;
    zipped += deflateRawSync(binary).length;
  }
  return [
    {
      metric: `${layer} layer: zip size`,
      unit: 'MB',
      runs: [zipped / MB],
      notes: [`${[...built.keys()].join(' + ')}, deflated as the packager zips them`],
    },
    {
      metric: `${layer} layer: unpacked size`,
      unit: 'MB',
      runs: [unpacked / MB],
      // Lambda's limit for a function and all its layers, unzipped.
      goal: { max: 250 },
    },
  ];
}

export const lambdaBundles: Benchmark = {
  name: 'lambda-bundles',
  title: "Each Lambda function's bundle size and module init time",
  async run(ctx: BenchContext): Promise<Measurement[]> {
    const entries = await lambdaEntryPoints();
    const outDir = await ctx.scratch('lambda-bundles');
    const options = await lambdaBuildOptions();
    const rows: Measurement[] = [];
    for (const [name, entry] of entries) {
      const outfile = join(outDir, `${name}.mjs`);
      const result = await build({
        ...options,
        entryPoints: [entry],
        outfile,
        metafile: true,
        logLevel: 'silent',
      });
      const kb = (await stat(outfile)).size / 1024;
      const initRuns: number[] = [];
      for (let run = 0; run < ctx.runs; run++) {
        // Environment a deployed function has; handlers must not need more to load.
        const { stdout } = await runCommand(
          process.execPath,
          ['--input-type=module', '-e', IMPORT_PROBE, pathToFileURL(outfile).href],
          { env: { ...process.env, AWS_REGION: 'eu-west-1', DRIFTLESS_CONFIG: 'driftless.yaml' } },
        );
        initRuns.push(Number(stdout.trim()));
      }
      rows.push({
        metric: `${name}: bundle size`,
        unit: 'KB',
        runs: [kb],
        goal: { max: 2048 },
        notes: [`largest parts: ${largestInputs(result.metafile)}`],
      });
      rows.push({
        metric: `${name}: module init`,
        unit: 'ms',
        runs: initRuns,
        goal: { max: 200 },
      });
    }
    rows[rows.length - 1] = {
      ...(rows[rows.length - 1] as Measurement),
      notes: [
        `init = import() of the bundle in a fresh node ${process.version} process (Lambda runs node22; the host runs this version); work a handler defers to its first invocation (clients, config) is not in it`,
      ],
    };
    return [
      ...rows,
      ...(await toolLayer('renderers', ['kustomize', 'helm'])),
      ...(await toolLayer('decryption', ['sops'])),
    ];
  },
};
