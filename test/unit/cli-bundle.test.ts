/**
 * The bundled CLI (`npm run build`) loads only what a command uses: the
 * entry chunk carries no command and no dependency, and no command carries
 * the AWS SDK or isomorphic-git in the chunks it imports statically (those
 * load behind dynamic imports when a store, secret or fetch needs them),
 * and the Git source loads neither for a local repository's refs.
 * Then the bundle runs: `--help` and a usage error, as processes.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import type { Metafile } from 'esbuild';
import { buildCli, CLI_ENTRY_FILE } from '../../scripts/build-cli.ts';

const execFileAsync = promisify(execFile);

/** The source files a chunk loads when imported: its own and its static imports', transitively. */
function staticInputs(metafile: Metafile, output: string): string[] {
  const seen = new Set<string>();
  const pending = [output];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    if (seen.has(next)) continue;
    seen.add(next);
    const chunk = metafile.outputs[next];
    assert.ok(chunk, `no output ${next}`);
    for (const imported of chunk.imports) {
      if (imported.kind === 'import-statement' && !imported.external) pending.push(imported.path);
    }
  }
  return [...seen].flatMap((chunk) => Object.keys(metafile.outputs[chunk]?.inputs ?? {}));
}

/** The output whose entry point is `source` (a dynamically imported module has its own). */
function outputOf(metafile: Metafile, source: string): string {
  const found = Object.entries(metafile.outputs).find(([, out]) => out.entryPoint === source);
  assert.ok(found, `no chunk has the entry point ${source}`);
  return found[0];
}

const COMMANDS = ['sync', 'diff', 'drift', 'rollback', 'unpin', 'status', 'history', 'render'];
const SDK_OR_GIT = /node_modules\/(@aws-sdk|@smithy|isomorphic-git)\//;
const SERVE_CODE = /^src\/serve\/|node_modules\/@octokit\//;

describe('the bundled CLI', () => {
  let dir: string;
  let metafile: Metafile;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-cli-bundle-'));
    metafile = await buildCli(dir);
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('loads no command, context or dependency for --help', () => {
    const inputs = staticInputs(metafile, outputOf(metafile, 'src/cli/run.ts'));
    assert.deepEqual(
      inputs.filter((input) => /-command\.ts$|context\.ts$|node_modules\//.test(input)),
      [],
    );
    assert.ok(inputs.includes('src/cli/main.ts'));
  });

  it('keeps the AWS SDK, isomorphic-git and serve code out of the other commands', () => {
    for (const command of COMMANDS) {
      const inputs = staticInputs(metafile, outputOf(metafile, `src/cli/${command}-command.ts`));
      assert.deepEqual(
        inputs.filter((input) => SDK_OR_GIT.test(input) || SERVE_CODE.test(input)),
        [],
        `driftless ${command}`,
      );
    }
    const context = staticInputs(metafile, outputOf(metafile, 'src/sync/local-context.ts'));
    assert.deepEqual(
      context.filter((input) => SDK_OR_GIT.test(input)),
      [],
    );
  });

  it('keeps the renderers out of the commands that apply stored revisions', () => {
    // A sync of a revision stored already, a drift check or a rollback parses the stored
    // bundle; helm, kustomize, SOPS and the source filters load only when something renders.
    const RENDERERS =
      /^src\/render\/(helm|kustomize|sops|sops-sources|decrypt-bundle|render-revision|source-ignore)\.ts$|node_modules\/ignore\//;
    for (const command of ['sync', 'drift', 'rollback']) {
      const inputs = staticInputs(metafile, outputOf(metafile, `src/cli/${command}-command.ts`));
      assert.deepEqual(
        inputs.filter((input) => RENDERERS.test(input)),
        [],
        `driftless ${command}`,
      );
    }
  });

  it('keeps isomorphic-git and the remote-repository code out of the Git source itself', () => {
    // A sync of a local repository whose revision is stored already only resolves a
    // ref (refs-on-disk.ts): remote repositories, fetches and signatures load on use.
    const source = staticInputs(metafile, outputOf(metafile, 'src/source/track-source.ts'));
    assert.ok(source.includes('src/source/git/local-repository.ts'));
    assert.deepEqual(
      source.filter(
        (input) =>
          SDK_OR_GIT.test(input) ||
          /src\/source\/(git\/(remote-repository|upload-pack|push-commit)|verify-signature)\.ts$/.test(
            input,
          ),
      ),
      [],
    );
  });

  it('runs: --help exits 0, an unknown command 2', async () => {
    const bundle = join(dir, CLI_ENTRY_FILE);
    const help = await execFileAsync(process.execPath, [bundle, '--help']);
    assert.match(help.stdout, /^driftless: serverless GitOps for Kubernetes/);
    await assert.rejects(execFileAsync(process.execPath, [bundle, 'frobnicate']), (error) => {
      const failure = error as { code: number; stderr: string };
      assert.equal(failure.code, 2);
      assert.match(failure.stderr, /unknown command "frobnicate"/);
      return true;
    });
  });
});
