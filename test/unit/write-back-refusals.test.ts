/**
 * Write-backs the drift check refuses (a Secret in plain text, an object kustomize or Helm
 * renders) travel with the write-back job and are recorded in its history entry beside the
 * refusals of editing the files, as docs/cli.md says history entries of write-backs carry
 * them. Real fs store, a Git source double.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { parseJob } from '../../src/aws/parse-job.ts';
import { parseConfig } from '../../src/config/index.ts';
import type { CommitResult, GitSource } from '../../src/source/ports.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import type { WriteBackJob } from '../../src/sync/jobs.ts';
import { writeBackTrack } from '../../src/sync/write-back.ts';

const REVISION = '3'.repeat(40);

const track = parseConfig(
  [
    'tracks:',
    '  - name: ops',
    '    repository: https://git.example.com/ops.git',
    '    reference: main',
    '    rules: [{apiGroups: [""], resources: [configmaps, secrets], syncTo: git}]',
  ].join('\n'),
  'driftless.yaml',
).tracks[0]!;

const SECRET_REFUSED = {
  subject: 'Secret/apps/token',
  error: 'Secret/apps/token: Secrets are never written back in plain text',
};

const job: WriteBackJob = {
  type: 'writeBack',
  track: 'ops',
  revision: REVISION,
  trigger: 'schedule',
  refused: [SECRET_REFUSED],
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

/** A source whose push ends as `push` says, without editing any file. */
function sourcePushing(push: () => Promise<CommitResult>): GitSource {
  return {
    resolve: async () => ({ revision: REVISION, ref: 'refs/heads/main' }),
    readFiles: async () => [],
    commit: async () => push(),
  };
}

describe("the drift check's write-back refusals", () => {
  let dir: string;
  let store: FsStore;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-write-back-refused-'));
    store = new FsStore({ path: dir });
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('are recorded in the history entry of the write-back, pushed or failed', async () => {
    // Act
    const pushed = await writeBackTrack(track, job, {
      source: sourcePushing(async () => ({ commit: '4'.repeat(40), attempts: 1 })),
      state: store,
    });
    const failed = await writeBackTrack(track, job, {
      source: sourcePushing(async () => {
        throw new Error('the host refused the push');
      }),
      state: store,
    });

    // Assess
    assert.deepEqual(pushed.refused, [SECRET_REFUSED]);
    assert.deepEqual(failed.refused, [SECRET_REFUSED]);
    const history = await store.listHistory('ops');
    assert.deepEqual(history.map((entry) => [entry.result, entry.refused]).sort(), [
      ['failed', [SECRET_REFUSED]],
      ['written-back', [SECRET_REFUSED]],
    ]);
  });

  it('survive the queue between the apply and fetch functions', () => {
    // Act
    const parsed = parseJob(JSON.stringify(job));

    // Assess
    assert.deepEqual(parsed, job);
  });
});
