/**
 * What an apply job that dies mid-apply leaves for the next one (issue 18,
 * found by test/integration/faults.test.ts): the objects it may have created
 * are written down before it applies anything, so the next sync prunes those
 * Git no longer has; they never count as owned. Real fs store and sync
 * use-cases, the in-memory cluster fake.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { KubernetesPort } from '../../src/cluster/kubernetes-port.ts';
import { parseConfig } from '../../src/config/index.ts';
import type { Track } from '../../src/config/types.ts';
import type { GitSource } from '../../src/source/ports.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import { applyRevision } from '../../src/sync/apply-revision.ts';
import { fetchTrack } from '../../src/sync/fetch-track.ts';
import type { SyncJob } from '../../src/sync/jobs.ts';
import { readTrackState } from '../../src/sync/track-state.ts';
import { InMemoryCluster } from './fakes/in-memory-cluster.ts';

const configMap = (name: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  value: "v"\n`;

/** A Git source whose head is the revision `head()` names, holding `files[revision]`. */
function gitOf(head: () => string, files: Record<string, string[]>): GitSource {
  return {
    resolve: async () => ({ revision: head(), ref: 'refs/heads/main' }),
    readFiles: async (_track, revision) =>
      (files[revision] ?? []).map((name) => ({
        path: `${name}.yaml`,
        content: new TextEncoder().encode(configMap(name)),
      })),
  };
}

/** The cluster, with every apply of `name` hanging for ever (a dry run answers): the job dies there. */
function dyingAt(cluster: KubernetesPort, name: string): KubernetesPort {
  return {
    discover: (refresh) => cluster.discover(refresh),
    serverVersion: () => cluster.serverVersion(),
    apply: (object, options) =>
      object.metadata.name === name && options.dryRun !== true
        ? new Promise(() => undefined)
        : cluster.apply(object, options),
    get: (ref) => cluster.get(ref),
    list: (query) => cluster.list(query),
    delete: (ref, options) => cluster.delete(ref, options),
  };
}

const REV = ['1', '2', '3'].map((digit) => digit.repeat(40)) as [string, string, string];

describe('an apply job that dies mid-apply', () => {
  let dir: string;
  let store: FsStore;
  let track: Track;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-pending-'));
    store = new FsStore({ path: dir });
    track = parseConfig(
      'tracks: [{name: web, repository: https://git.example.com/web.git, namespace: apps}]',
      'driftless.yaml',
    ).tracks[0]!;
  });

  after(() => rm(dir, { recursive: true, force: true }));

  /** Fetches `revision` (the head) and returns its sync job. */
  async function fetched(
    revision: string,
    files: Record<string, string[]>,
    now: () => Date,
  ): Promise<SyncJob> {
    const { next } = await fetchTrack(
      track,
      { type: 'fetch', track: track.name, trigger: 'webhook' },
      { source: gitOf(() => revision, files), artifacts: store, state: store, now },
    );
    assert.ok(next, 'the fetch queued a sync');
    return next;
  }

  it('leaves what it created to the next sync, which prunes what left Git', async () => {
    // Prepare: revision 1 (a) applied; revision 2 (a, x, z) dies while applying z, after x.
    const cluster = new InMemoryCluster();
    const files = { [REV[0]]: ['a'], [REV[1]]: ['a', 'x', 'z'], [REV[2]]: ['a'] };
    const start = Date.parse('2026-01-01T12:00:00Z');
    const at = (ms: number) => () => new Date(start + ms);
    await applyRevision(track, await fetched(REV[0], files, at(0)), {
      cluster,
      artifacts: store,
      state: store,
      now: at(0),
    });
    const job2 = await fetched(REV[1], files, at(1_000));
    void applyRevision(track, job2, {
      cluster: dyingAt(cluster, 'z'),
      artifacts: store,
      state: store,
      now: at(1_000),
    });
    while (![...cluster.objects.values()].some((o) => o.metadata.name === 'x')) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    const job3 = await fetched(REV[2], files, at(2_000));

    // Act: the next job, once the dead job's lease expired.
    const result = await applyRevision(track, job3, {
      cluster,
      artifacts: store,
      state: store,
      now: at(1_000 + track.timeout * 2 + 61_000),
    });

    // Assess
    assert.equal(result.result, 'applied', result.error);
    const names = [...cluster.objects.values()].map((o) => o.metadata.name).sort();
    assert.deepEqual(names, ['a']);
    assert.ok(result.changeset.some((e) => e.subject.endsWith('/x') && e.action === 'deleted'));
    const state = await readTrackState(store, track.name);
    assert.equal(state.applying, null, 'nothing is pending once a sync completed');
    assert.deepEqual(
      state.inventory.map((e) => e.subject),
      ['ConfigMap/apps/a'],
    );
  });

  it('never counts what is pending as owned: an unlabelled object stays untouched', async () => {
    // Prepare: someone else's unlabelled ConfigMap "theirs"; a job of a revision naming it
    // dies before it applies anything; the next revision names it too.
    const cluster = new InMemoryCluster();
    await cluster.apply(
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'theirs', namespace: 'apps' },
        data: { value: 'theirs' },
      },
      { fieldManager: 'someone', force: true },
    );
    const other = { ...track, name: 'api' };
    track = other;
    const files = { [REV[0]]: ['b', 'theirs'], [REV[1]]: ['b', 'theirs'] };
    const start = Date.parse('2026-02-01T12:00:00Z');
    const at = (ms: number) => () => new Date(start + ms);
    const job1 = await fetched(REV[0], files, at(0));
    void applyRevision(track, job1, {
      cluster: dyingAt(cluster, 'b'),
      artifacts: store,
      state: store,
      now: at(0),
    });
    while ((await readTrackState(store, track.name)).applying == null) {
      await new Promise((resolve) => setImmediate(resolve));
    }

    // Act
    const result = await applyRevision(track, job1, {
      cluster,
      artifacts: store,
      state: store,
      now: at(track.timeout * 2 + 61_000),
    });

    // Assess
    assert.equal(result.result, 'failed');
    assert.match(result.error ?? '', /theirs \(theirs\.yaml\): ownership conflict/);
    const theirs = [...cluster.objects.values()].find((o) => o.metadata.name === 'theirs');
    assert.equal((theirs as { data?: { value?: string } }).data?.value, 'theirs');
  });
});
