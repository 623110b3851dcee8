/**
 * The bundled CLI (`npm run build`) runs only what a command uses: the entry
 * initialises no command and no dependency, no command reaches the AWS SDK
 * or isomorphic-git through static imports (those load behind dynamic
 * imports when a store, secret or fetch needs them), and the Git source
 * needs neither for a local repository's refs. In the CommonJS bundle a
 * module behind a dynamic import runs on first import, so what a module runs
 * when it is imported is its closure over static imports in esbuild's input
 * graph. Large dependencies are files of their own under vendor/; the
 * bundle the code cache covers holds our code and the small libraries only.
 * Then the bundle runs as processes: `--help`, a usage error, and the code
 * cache written, used, replaced and refused as src/cli/compile-cache.ts says.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import {
  buildCli,
  CLI_LAUNCHER_FILE,
  CLI_VENDOR_DIR,
  INLINED_PACKAGES,
  packageOf,
  vendorFileOf,
  type CliBuild,
} from '../../scripts/build-cli.ts';

const execFileAsync = promisify(execFile);

/**
 * What importing `input` runs: the source files of its static-import closure,
 * the import specifiers of the vendor bundles it requires, and the Node
 * built-ins it imports.
 */
function staticClosure(built: CliBuild, input: string): string[] {
  const vendorOfFile = new Map(
    built.vendored.map((specifier) => [
      `./${CLI_VENDOR_DIR}/${vendorFileOf(specifier)}`,
      specifier,
    ]),
  );
  const inputs = built.bundle.inputs;
  const seen = new Set<string>();
  const reached: string[] = [];
  const pending = [input];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    if (seen.has(next)) continue;
    seen.add(next);
    const file = inputs[next];
    assert.ok(file, `no input ${next}`);
    reached.push(next);
    for (const imported of file.imports) {
      if (imported.kind !== 'import-statement') continue;
      const vendored = vendorOfFile.get(imported.path);
      if (vendored !== undefined) reached.push(`vendor:${vendored}`);
      else if (imported.path.startsWith('node:')) reached.push(imported.path);
      else if (!imported.external) pending.push(imported.path);
    }
  }
  return reached;
}

const COMMANDS = ['sync', 'diff', 'drift', 'rollback', 'unpin', 'status', 'history', 'render'];
const SDK_OR_GIT = /(node_modules\/|vendor:)(@aws-sdk|@smithy|isomorphic-git)/;
const SERVE_CODE = /^src\/serve\/|(node_modules\/|vendor:)@octokit\//;

/** Runs the built launcher as bin/driftless.cjs does, with `env` added to this process's. */
function runLauncher(dir: string, args: readonly string[], env: NodeJS.ProcessEnv = {}) {
  return execFileAsync(process.execPath, [join(dir, CLI_LAUNCHER_FILE), ...args], {
    env: { ...process.env, ...env },
  });
}

describe('the bundled CLI', () => {
  let dir: string;
  let built: CliBuild;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-cli-bundle-'));
    built = await buildCli(dir);
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('initialises no command, context or dependency for --help', () => {
    const reached = staticClosure(built, 'src/cli/run.ts');
    assert.deepEqual(
      reached.filter((input) => /-command\.ts$|context\.ts$|node_modules\/|^vendor:/.test(input)),
      [],
    );
    assert.ok(reached.includes('src/cli/main.ts'));
  });

  it('keeps the AWS SDK, isomorphic-git and serve code out of the other commands', () => {
    for (const command of COMMANDS) {
      const reached = staticClosure(built, `src/cli/${command}-command.ts`);
      assert.deepEqual(
        reached.filter((input) => SDK_OR_GIT.test(input) || SERVE_CODE.test(input)),
        [],
        `driftless ${command}`,
      );
    }
    const context = staticClosure(built, 'src/sync/local-context.ts');
    assert.deepEqual(
      context.filter((input) => SDK_OR_GIT.test(input)),
      [],
    );
  });

  it('keeps child_process out of the commands that do not render, for kubeconfigs without an exec plugin', () => {
    // Loading it (with dgram and net's extras) costs ~2.5 ms; diff and render run renderers.
    for (const command of ['sync', 'drift', 'rollback', 'unpin', 'status', 'history']) {
      const reached = staticClosure(built, `src/cli/${command}-command.ts`);
      assert.ok(!reached.includes('node:child_process'), `driftless ${command}`);
    }
    assert.ok(!staticClosure(built, 'src/sync/local-context.ts').includes('node:child_process'));
  });

  it('keeps the renderers out of the commands that apply stored revisions', () => {
    // A sync of a revision stored already, a drift check or a rollback parses the stored
    // bundle; helm, kustomize, SOPS and the source filters run only when something renders.
    const RENDERERS =
      /^src\/render\/(helm|kustomize|sops|sops-sources|decrypt-bundle|render-revision|source-ignore)\.ts$|node_modules\/ignore\//;
    for (const command of ['sync', 'drift', 'rollback']) {
      const reached = staticClosure(built, `src/cli/${command}-command.ts`);
      assert.deepEqual(
        reached.filter((input) => RENDERERS.test(input)),
        [],
        `driftless ${command}`,
      );
    }
  });

  it('keeps isomorphic-git and the remote-repository code out of the Git source itself', () => {
    // A sync of a local repository whose revision is stored already only resolves a
    // ref (refs-on-disk.ts): remote repositories, fetches and signatures load on use.
    const source = staticClosure(built, 'src/source/track-source.ts');
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

  it('carries only our code and the inlined libraries in the cached bundle; the rest in vendor/', async () => {
    const packages = new Set(
      Object.keys(built.bundle.inputs).flatMap((input) => {
        const found = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input);
        return found?.[1] === undefined ? [] : [found[1]];
      }),
    );
    assert.deepEqual(
      [...packages].filter((name) => !INLINED_PACKAGES.has(name)),
      [],
    );
    // The AWS SDK, isomorphic-git, openpgp and ssh2 are each a vendor bundle of their own.
    for (const specifier of ['@aws-sdk/client-s3', 'isomorphic-git', 'openpgp', 'ssh2']) {
      assert.ok(built.vendored.includes(specifier), specifier);
    }
    const files = await readdir(join(dir, CLI_VENDOR_DIR));
    assert.deepEqual(files.sort(), built.vendored.map(vendorFileOf).sort());
    assert.ok(built.vendored.every((specifier) => !INLINED_PACKAGES.has(packageOf(specifier))));
    // The launcher's vm.Script has no ES module loader: no import() may be left in the bundle.
    const output = Object.values(built.bundle.outputs)[0];
    assert.ok(output);
    assert.deepEqual(
      output.imports.filter((imported) => imported.kind === 'dynamic-import'),
      [],
    );
  });

  it('gives each vendor bundle the exports of the package it stands for', async () => {
    // What our code imports from a package, it reads from the vendor bundle's exports
    // (through esbuild's interop): every name the package exports must be there.
    const load = createRequire(join(dir, CLI_LAUNCHER_FILE));
    for (const specifier of built.vendored) {
      const vendored = load(`./${CLI_VENDOR_DIR}/${vendorFileOf(specifier)}`) as Record<
        string,
        unknown
      >;
      const original = (await import(specifier)) as Record<string, unknown>;
      const missing = Object.keys(original).filter(
        (name) => name !== 'default' && name !== 'module.exports' && !(name in vendored),
      );
      assert.deepEqual(missing, [], specifier);
      assert.ok(Object.keys(vendored).length > 0, `${specifier}: no exports`);
    }
  });

  it('runs: --help exits 0, an unknown command 2', async () => {
    const off = { DRIFTLESS_COMPILE_CACHE: 'off' };
    const help = await runLauncher(dir, ['--help'], off);
    assert.match(help.stdout, /^driftless: serverless GitOps for Kubernetes/);
    await assert.rejects(runLauncher(dir, ['frobnicate'], off), (error) => {
      const failure = error as { code: number; stderr: string };
      assert.equal(failure.code, 2);
      assert.match(failure.stderr, /unknown command "frobnicate"/);
      return true;
    });
  });

  it('keeps its exit code and prints no error when the reader of its output goes away', async () => {
    // `driftless history | head -1`: the reader closes the pipe before the output is written.
    const child = spawn(process.execPath, [join(dir, CLI_LAUNCHER_FILE)], {
      env: { ...process.env, DRIFTLESS_COMPILE_CACHE: 'off' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    const [code] = (await once(child, 'close')) as [number | null];
    // No command: the help goes to stdout and the exit code is 2 (usage).
    assert.equal(stderr, '');
    assert.equal(code, 2);
  });

  describe('its code cache', () => {
    let cacheDir: string;
    const cacheFiles = async () =>
      (await readdir(cacheDir)).filter((name) => !name.endsWith('.tmp'));

    before(async () => {
      cacheDir = await mkdtemp(join(tmpdir(), 'driftless-compile-cache-'));
    });
    after(() => rm(cacheDir, { recursive: true, force: true }));

    it('is written by the first run, written again by the second, then only read', async () => {
      const env = { DRIFTLESS_COMPILE_CACHE: cacheDir };
      const first = await runLauncher(dir, ['--help'], env);
      const [written, ...others] = await cacheFiles();
      assert.ok(written, 'no cache file after the first run');
      assert.deepEqual(others, []);
      assert.match(written, new RegExp(`-${process.version}-${process.arch}-other\\.1\\.v8cache$`));
      const generation1 = await stat(join(cacheDir, written));
      assert.ok(generation1.size > 10_000, `cache of ${generation1.size} bytes`);
      assert.equal(generation1.mode & 0o077, 0, 'the cache file is private');

      // The second run starts from the first's data and writes what it holds then.
      const second = await runLauncher(dir, ['--help'], env);
      assert.equal(second.stdout, first.stdout);
      const [rewritten, ...left] = await cacheFiles();
      assert.deepEqual(left, []);
      assert.equal(rewritten, written.replace(/\.1\.v8cache$/, '.2.v8cache'));
      const content = await readFile(join(cacheDir, rewritten));
      const { mtimeMs } = await stat(join(cacheDir, rewritten));

      const third = await runLauncher(dir, ['--help'], env);
      assert.equal(third.stdout, first.stdout);
      assert.deepEqual(await cacheFiles(), [rewritten]);
      assert.deepEqual(
        await readFile(join(cacheDir, rewritten)),
        content,
        'a final cache is not rewritten',
      );
      assert.equal((await stat(join(cacheDir, rewritten))).mtimeMs, mtimeMs);
    });

    it('starts again from a cache V8 rejects, and the command runs as without one', async () => {
      const env = { DRIFTLESS_COMPILE_CACHE: cacheDir };
      const [file] = await cacheFiles();
      assert.ok(file !== undefined && file.endsWith('.2.v8cache'), String(file));
      const damaged = Buffer.alloc(4096, 7);
      await writeFile(join(cacheDir, file), damaged);
      const run = await runLauncher(dir, ['--help'], env);
      assert.match(run.stdout, /^driftless: serverless GitOps for Kubernetes/);
      const [replaced, ...others] = await cacheFiles();
      assert.deepEqual(others, []);
      assert.equal(replaced, file.replace(/\.2\.v8cache$/, '.1.v8cache'));
      assert.notDeepEqual(await readFile(join(cacheDir, file.replace(/\.2\./, '.1.'))), damaged);
    });

    it('keeps one cache per command, and none of another build or Node version', async () => {
      const env = { DRIFTLESS_COMPILE_CACHE: cacheDir };
      const [current] = await cacheFiles();
      assert.ok(current);
      const otherBuild = '0123456789abcdef-v0.0.0-x64-sync.2.v8cache';
      const otherNode = current.replace(`-${process.version}-`, '-v0.0.0-');
      await writeFile(join(cacheDir, otherNode), 'old');
      await writeFile(join(cacheDir, otherBuild), 'old');
      await assert.rejects(runLauncher(dir, ['status', '--frobnicate'], env));
      assert.ok(
        (await cacheFiles()).includes(otherBuild),
        'a failed run writes and removes nothing',
      );
      await runLauncher(dir, ['status', '--help'], env);
      const files = await cacheFiles();
      assert.ok(!files.includes(otherBuild), `${otherBuild} is left`);
      assert.ok(!files.includes(otherNode), `${otherNode} is left`);
      assert.ok(files.includes(current));
      assert.ok(
        files.some((name) => name.endsWith('-status.1.v8cache')),
        files.join(', '),
      );
    });

    it('writes nothing after a run that failed, or when turned off', async () => {
      const failed = await mkdtemp(join(tmpdir(), 'driftless-compile-cache-failed-'));
      try {
        await assert.rejects(
          runLauncher(dir, ['frobnicate'], { DRIFTLESS_COMPILE_CACHE: failed }),
          (error) => (error as { code: number }).code === 2,
        );
        assert.deepEqual(await readdir(failed), []);
        await runLauncher(dir, ['status', '--help'], { DRIFTLESS_COMPILE_CACHE: 'off' });
        assert.deepEqual(await readdir(failed), []);
      } finally {
        await rm(failed, { recursive: true, force: true });
      }
    });

    it('neither reads nor writes a folder others can write to', async () => {
      const shared = join(
        await mkdtemp(join(tmpdir(), 'driftless-compile-cache-shared-')),
        'cache',
      );
      try {
        await mkdir(shared);
        await chmod(shared, 0o777);
        const run = await runLauncher(dir, ['--help'], { DRIFTLESS_COMPILE_CACHE: shared });
        assert.match(run.stdout, /^driftless: serverless GitOps for Kubernetes/);
        assert.deepEqual(await readdir(shared), []);
      } finally {
        await rm(join(shared, '..'), { recursive: true, force: true });
      }
    });
  });
});
