/**
 * Every module a Lambda function can load, evaluated the way the function
 * evaluates it: each handler bundled with serverless.yml's esbuild settings
 * (ESM for node22, the shared banner and plugins), split at its dynamic
 * imports so that each part loaded on first use (ssh2, openpgp, the AWS
 * SDK's credential providers, …) is a file of its own, and every file
 * imported in a fresh node process. A library that needs what an ES module
 * does not have (`__dirname`, `require`) fails here, not in the first job
 * that reaches it: ssh2 did, and every SSH Git source failed in the fetch
 * function with "ReferenceError: __dirname is not defined in ES module scope".
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { build, type Metafile } from 'esbuild';
import { lambdaBuildOptions, lambdaEntryPoints } from '../harness/lambda-build.ts';

const run = promisify(execFile);

/**
 * Imports each file given (a path) in turn and prints the failures as JSON
 * once nothing is left to run: a module may fail after its import settled
 * (ssh2's poly1305 starts its WebAssembly from a promise).
 */
const IMPORT_EACH = `
import { pathToFileURL } from 'node:url';
const failures = [];
process.on('unhandledRejection', (error) => failures.push({ error: 'later: ' + String(error) }));
process.on('uncaughtException', (error) => failures.push({ error: 'later: ' + String(error) }));
process.once('beforeExit', () => console.log(JSON.stringify(failures)));
for (const file of process.argv.slice(1)) {
  try { await import(pathToFileURL(file).href); }
  catch (error) { failures.push({ file: file.split('/').pop(), error: String(error) }); }
}
`;

/** An output file's name with the package (or src/ folder) that gives it most of its bytes. */
function describeOutput(metafile: Metafile, name: string): string {
  const output = Object.entries(metafile.outputs).find(([file]) => basename(file) === name)?.[1];
  const bytes = new Map<string, number>();
  for (const [input, { bytesInOutput }] of Object.entries(output?.inputs ?? {})) {
    const owner = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input)?.[1] ?? input;
    bytes.set(owner, (bytes.get(owner) ?? 0) + bytesInOutput);
  }
  const largest = [...bytes].sort((a, b) => b[1] - a[1])[0]?.[0];
  return largest === undefined ? name : `${name} (${largest})`;
}

/** The output files holding a package, by the inputs esbuild put into them. */
function outputsHolding(metafile: Metafile, pkg: string): string[] {
  return Object.entries(metafile.outputs)
    .filter(([, output]) =>
      Object.keys(output.inputs).some((input) => input.includes(`node_modules/${pkg}/`)),
    )
    .map(([file]) => basename(file));
}

describe('Lambda bundles, every module loaded', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-lambda-modules-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('evaluates every part of every function as an ES module, ssh2 and openpgp in fetch included', async (t) => {
    // Prepare
    const options = await lambdaBuildOptions();
    const entries = await lambdaEntryPoints();
    const loaded: string[] = [];

    for (const [name, entry] of entries) {
      const outdir = join(dir, name);
      const result = await build({
        ...options,
        entryPoints: [entry],
        outdir,
        splitting: true,
        outExtension: { '.js': '.mjs' },
        metafile: true,
        logLevel: 'silent',
      });
      // The entry point first, as Lambda loads it; then each part in a stable order.
      const files = Object.keys(result.metafile.outputs)
        .map((file) => basename(file))
        .sort(
          (a, b) => Number(b === `${name}.mjs`) - Number(a === `${name}.mjs`) || a.localeCompare(b),
        );

      // Act
      const { stdout } = await run(
        process.execPath,
        ['--input-type=module', '-e', IMPORT_EACH, ...files.map((file) => join(outdir, file))],
        // What a deployed function has when it loads; handlers must not need more.
        { env: { ...process.env, AWS_REGION: 'eu-west-1', DRIFTLESS_CONFIG: 'driftless.yaml' } },
      );

      // Assess
      const failures = (JSON.parse(stdout) as { file?: string; error: string }[]).map(
        ({ file, error }) =>
          file === undefined ? error : `${describeOutput(result.metafile, file)}: ${error}`,
      );
      assert.deepEqual(failures, [], `${name}: parts that failed to load`);
      if (name === 'fetch') {
        for (const pkg of ['ssh2', 'openpgp', 'isomorphic-git']) {
          assert.ok(outputsHolding(result.metafile, pkg).length > 0, `fetch holds ${pkg}`);
        }
      }
      loaded.push(`${name} ${files.length}`);
    }
    assert.deepEqual(
      [...entries.keys()],
      ['apply', 'dashboard', 'drift', 'fetch', 'rollback', 'webhook'],
    );
    t.diagnostic(`files loaded: ${loaded.join(', ')}`);
  });
});
