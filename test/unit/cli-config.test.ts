import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { localRepository } from '../harness/git-server.ts';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const CLI = fileURLToPath(new URL('../../src/cli/run.ts', import.meta.url));
// Resolved here: the child runs in a temp directory, where `--import tsx` would not be found.
const TSX = import.meta.resolve('tsx');

/** Runs the CLI from source in a child process in `cwd`, as a user would. */
function driftless(
  cwd: string,
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', TSX, CLI, ...args],
      { cwd, env: { ...process.env, NO_COLOR: '1' } },
      (error, stdout, stderr) => {
        resolve({
          code: error ? (typeof error.code === 'number' ? error.code : -1) : 0,
          stdout,
          stderr,
        });
      },
    );
  });
}

describe('driftless with an invalid driftless.yaml', () => {
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-cli-config-'));
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('exits 2 naming the file and the field, and touches nothing', async () => {
    // Prepare
    await writeFile(
      join(dir, 'driftless.yaml'),
      'tracks:\n  - name: web\n    repository: https://git.example.com/org/web.git\n    interval: soon\n',
    );

    // Act
    const result = await driftless(dir, 'status');

    // Assess
    assert.equal(result.code, 2);
    assert.match(
      result.stderr,
      /^driftless: \.\/driftless\.yaml(:\d+:\d+)?: tracks\[0\]\.interval: /m,
    );
    assert.equal(result.stdout, '');
  });

  it('reports every problem on its own line', async () => {
    // Prepare
    await writeFile(
      join(dir, 'two-problems.yaml'),
      'tracks:\n  - name: Web_App\n    repository: https://git.example.com/org/web.git\n    prune: maybe\n',
    );

    // Act
    const result = await driftless(dir, 'sync', '-c', 'two-problems.yaml', '-o', 'json');

    // Assess
    assert.equal(result.code, 2);
    assert.match(result.stderr, /^driftless: two-problems\.yaml(:\d+:\d+)?: tracks\[0\]\.name: /m);
    assert.match(result.stderr, /^driftless: two-problems\.yaml(:\d+:\d+)?: tracks\[0\]\.prune: /m);
    // -o json: the one document on stdout is the error, every problem in it
    const { error } = JSON.parse(result.stdout) as { error: string };
    assert.match(error, /tracks\[0\]\.name: .*\n.*tracks\[0\]\.prune: /);
  });

  it('exits 2 when the file does not exist', async () => {
    // Act
    const result = await driftless(dir, 'history', '--track', 'web', '-c', 'missing.yaml');

    // Assess
    assert.equal(result.code, 2);
    assert.match(result.stderr, /^driftless: missing\.yaml: file does not exist$/m);
  });

  it('exits 2 naming the tracks when --track names none of them', async () => {
    // Prepare
    await writeFile(
      join(dir, 'driftless.yaml'),
      'tracks:\n  - name: web\n    repository: https://git.example.com/org/web.git\n',
    );

    // Act
    const result = await driftless(dir, 'status', '--track', 'wab');

    // Assess
    assert.equal(result.code, 2);
    assert.match(result.stderr, /has no track "wab"; did you mean "web"\?/);
  });
});

describe('driftless sync with a kubeconfig that cannot be read', () => {
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-cli-kubeconfig-'));
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('fails the track and records why in its status and history', async () => {
    // Prepare: a local repository with one ConfigMap, and a kubeconfig that is not YAML
    const repo = join(dir, 'repo');
    await localRepository(repo, {
      'a.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n',
    });
    await writeFile(join(dir, 'broken-kubeconfig'), 'clusters: [unclosed\n');
    await writeFile(
      join(dir, 'driftless.yaml'),
      [
        'store: {type: fs, path: store}',
        'clusters: [{name: prod, kubeconfig: ./broken-kubeconfig}]',
        `tracks: [{name: web, repository: ${repo}, namespace: apps}]`,
      ].join('\n'),
    );

    // Act
    const sync = await driftless(dir, 'sync', '--track', 'web', '-o', 'json');
    const status = await driftless(dir, 'status', '--track', 'web', '-o', 'json');
    const history = await driftless(dir, 'history', '--track', 'web', '-o', 'json');

    // Assess
    assert.equal(sync.code, 3, sync.stderr);
    assert.match(JSON.parse(sync.stdout).error, /broken-kubeconfig/);
    const ready = (
      JSON.parse(status.stdout) as {
        conditions: { type: string; status: string; message: string }[];
      }
    ).conditions.find((condition) => condition.type === 'Ready');
    assert.equal(ready?.status, 'False');
    assert.match(ready?.message ?? '', /broken-kubeconfig/);
    const [last] = JSON.parse(history.stdout) as { result: string; error?: string }[];
    assert.equal(last?.result, 'failed');
    assert.match(last?.error ?? '', /broken-kubeconfig/);
  });
});
