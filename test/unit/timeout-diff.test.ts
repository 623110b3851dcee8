/**
 * `driftless diff` of a revision not stored yet fetches and renders it from Git within the
 * track's `timeout`, as it reads the cluster: a Git host that never answers ends the diff at the
 * deadline with the timeout's error, and the fetch under way is cancelled, as a sync's is. The
 * real fs store and CLI; a Git source that never answers the read, the in-memory cluster fake.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli } from '../../src/cli/main.ts';
import { parseConfig } from '../../src/config/index.ts';
import type { GitSource } from '../../src/source/ports.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import type { LocalContext } from '../../src/sync/local-context.ts';
import { gitAt } from './fakes/git-sources.ts';
import { InMemoryCluster } from './fakes/in-memory-cluster.ts';

const gaveUp = `track "web": the diff did not finish within the track's timeout (2000 ms)`;

describe('diff of a revision not stored, against a Git host that stops answering', () => {
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-timeout-diff-'));
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('fails at the timeout and cancels the fetch', { timeout: 20_000 }, async () => {
    // Prepare: the head resolves; reading its files is never answered.
    const config = parseConfig(
      'tracks: [{name: web, repository: https://git.example.com/web.git, namespace: apps, timeout: 2s}]',
      'driftless.yaml',
    );
    const store = new FsStore({ path: await mkdtemp(join(dir, 'store-')) });
    let handed: AbortSignal | undefined;
    const source: GitSource = {
      resolve: gitAt([]).resolve,
      readFiles: (_track, _revision, _scope, call) => {
        handed = call?.signal;
        return new Promise(() => undefined);
      },
    };
    const context: LocalContext = {
      config,
      artifacts: store,
      state: store,
      source: async () => source,
      cluster: async () => new InMemoryCluster(),
      close: () => undefined,
    };
    let stdout = '';
    let stderr = '';

    // Act
    const started = performance.now();
    const code = await runCli(['diff', '--track', 'web', '-o', 'json'], {
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: (text: string) => (stderr += text) },
      env: {},
      openLocalContext: async () => context,
    });
    const seconds = (performance.now() - started) / 1000;

    // Assess: at the track's 2 s (the upper bound leaves room for a loaded machine), as a
    // failed command reports -o json, with exit code 3; the fetch was told to stop.
    assert.ok(seconds >= 1.9 && seconds < 15, `took ${seconds} s`);
    assert.equal(code, 3);
    assert.deepEqual(JSON.parse(stdout), { track: 'web', error: gaveUp });
    assert.equal(stderr, `driftless: ${gaveUp}\n`);
    assert.equal(handed?.aborted, true, 'the Git read was handed a signal that aborted');
  });
});
