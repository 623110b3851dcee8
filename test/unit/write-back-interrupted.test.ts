/**
 * A write-back asked to stop (Ctrl-C during `driftless drift`, a fetch
 * function's deadline, `serve` stopping): the job's signal reaches the Git
 * source's push (which cancels its request: test/integration/source.test.ts),
 * and the write-back ends with the InterruptedError, recording nothing, where
 * a push that fails is recorded as `failed`. Real fs store, a Git source double.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { parseConfig } from '../../src/config/index.ts';
import { InterruptedError } from '../../src/errors.ts';
import type { GitSource, SourceCall } from '../../src/source/ports.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import type { WriteBackJob } from '../../src/sync/jobs.ts';
import { executeFetchJob } from '../../src/sync/execute-job.ts';
import { writeBackTrack } from '../../src/sync/write-back.ts';
import { assertInterrupted } from '../harness/interrupted.ts';

const REVISION = '2'.repeat(40);

const track = parseConfig(
  [
    'tracks:',
    '  - name: ops',
    '    repository: https://git.example.com/ops.git',
    '    reference: main',
    '    rules: [{apiGroups: [""], resources: [configmaps], syncTo: git}]',
  ].join('\n'),
  'driftless.yaml',
).tracks[0]!;

const job: WriteBackJob = {
  type: 'writeBack',
  track: 'ops',
  revision: REVISION,
  trigger: 'manual',
  changes: [
    {
      subject: 'ConfigMap/apps/settings',
      apiVersion: 'v1',
      kind: 'ConfigMap',
      name: 'settings',
      namespace: 'apps',
      file: 'settings.yaml',
      line: 1,
      fields: [{ path: '/data/level', value: 'debug', base: 'info' }],
    },
  ],
};

/** A source whose push fails with `failure(call)` once it has been asked to push. */
function pushingSource(failure: (call: SourceCall | undefined) => Error): {
  source: GitSource;
  calls: (SourceCall | undefined)[];
} {
  const calls: (SourceCall | undefined)[] = [];
  const source: GitSource = {
    resolve: async () => ({ revision: REVISION, ref: 'refs/heads/main' }),
    readFiles: async () => [],
    commit: async (_track, _request, call) => {
      calls.push(call);
      throw failure(call);
    },
  };
  return { source, calls };
}

describe('a write-back asked to stop', () => {
  let dir: string;
  let store: FsStore;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-write-back-'));
    store = new FsStore({ path: dir });
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('hands the job signal to the push and ends with its InterruptedError, recording nothing', async () => {
    // Prepare: the signal comes while the push is under way, as Ctrl-C would.
    const controller = new AbortController();
    const { source, calls } = pushingSource((call) => {
      controller.abort(new InterruptedError('interrupted by SIGINT'));
      // What the source does then (push-commit.ts): fails with the signal's reason.
      return call?.signal?.reason as Error;
    });

    // Act
    const attempt = writeBackTrack(track, job, { source, state: store, signal: controller.signal });

    // Assess
    await assertInterrupted(attempt);
    assert.equal(calls[0]?.signal, controller.signal);
    assert.deepEqual(await store.listHistory('ops'), []);
  });

  it('is handed the signal of the job runner (the fetch function, serve) as well', async () => {
    // Prepare: the runner's signal aborted, as serve does when it stops.
    const controller = new AbortController();
    controller.abort(new InterruptedError('driftless serve is stopping'));
    const { source, calls } = pushingSource((call) => call?.signal?.reason as Error);

    // Act
    const attempt = executeFetchJob(track, job, {
      tracks: [track],
      artifacts: store,
      state: store,
      queue: { enqueue: async () => assert.fail('a write-back asks for no further job') },
      source: async () => source,
      signal: controller.signal,
    });

    // Assess
    await assert.rejects(attempt, InterruptedError);
    assert.equal(calls[0]?.signal, controller.signal);
    assert.deepEqual(await store.listHistory('ops'), []);
  });

  it('records a push that fails for any other reason as a failed write-back', async () => {
    // Prepare
    const { source } = pushingSource(() => new Error('the host refused the push'));

    // Act
    const result = await writeBackTrack(track, job, { source, state: store });

    // Assess
    assert.equal(result.result, 'failed');
    assert.equal(result.error, 'the host refused the push');
    const history = await store.listHistory('ops');
    assert.equal(history.length, 1);
    assert.equal(history[0]?.result, 'failed');
    assert.equal(history[0]?.trigger, 'write-back');
  });
});
