/**
 * Commit statuses of a commit a newer one superseded before it was applied (newest wins): its
 * status ends `pending`, saying it was not applied and which newer commit is applied instead,
 * not "fetched; applying" forever; and its superseded sync tells no health, since the health in
 * the track's state is another revision's.
 *
 * The real job use-cases run as `serve` runs them (runJob with executeJob) on the real fs
 * store, and the events they tell go through the real commit status mapping; a small Git
 * source and the in-memory cluster stand in for Git and Kubernetes.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseConfig } from '../../src/config/index.ts';
import type { Track } from '../../src/config/types.ts';
import { commitStatusOf } from '../../src/notify/commit-status.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import type { Job } from '../../src/sync/jobs.ts';
import { MovingGit } from './fakes/git-sources.ts';
import { InMemoryCluster } from './fakes/in-memory-cluster.ts';
import { outcomeOf, recordUnhealthy, servedJobs } from './fakes/served-jobs.ts';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const C = 'c'.repeat(40);
const NOW = new Date('2026-12-01T10:00:00.000Z');

const configMap = (value: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  value: "${value}"\n`;

describe('commit statuses of a superseded commit', () => {
  let dir: string;
  let store: FsStore;
  let tracks = 0;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-status-superseded-'));
    store = new FsStore({ path: dir });
  });
  after(() => rm(dir, { recursive: true, force: true }));

  /** A track of its own whose jobs run as serve runs them; A applied already. */
  async function appliedAtA() {
    const name = `s${++tracks}`;
    const track: Track = parseConfig(
      `tracks: [{name: ${name}, repository: https://git.example.com/o/s.git, namespace: apps, wait: false}]`,
      'driftless.yaml',
    ).tracks[0]!;
    const git = new MovingGit(A, [
      [A, configMap('a')],
      [B, configMap('b')],
      [C, configMap('c')],
    ]);
    // Each job is given a cluster of its own.
    const jobs = servedJobs({ tracks: [track], store, git, cluster: () => new InMemoryCluster() });
    const fetchJob: Job = { type: 'fetch', track: name, trigger: 'schedule' };
    await jobs.run(fetchJob);
    await jobs.run(jobs.queued.shift()!);
    return {
      name,
      told: jobs.told,
      run: jobs.run,
      /** Fetches the head; the sync job it queued is returned, not run. */
      fetch: async (head: string): Promise<Job> => {
        git.head = head;
        await jobs.run(fetchJob);
        const [sync] = jobs.queued.splice(0);
        assert.equal(sync?.type, 'sync');
        return sync!;
      },
      statusesOf: jobs.statusesOf,
    };
  }

  const SUPERSEDED_BY_C = `fetched; not applied: newer commit ${C.slice(0, 12)} superseded it`;
  const APPLYING = { state: 'pending', description: 'fetched; applying' };
  const APPLIED = { state: 'success', description: 'applied' };

  it('ends pending for a commit a newer one superseded, naming the newer commit', async () => {
    // Prepare: B and then C fetched before B's sync ran.
    const t = await appliedAtA();
    const syncB = await t.fetch(B);
    const syncC = await t.fetch(C);

    // Act
    const supersededB = await t.run(syncB);
    const toldAfterB = t.told.length;
    const again = await t.run(syncB);
    const toldAgain = t.told.length;
    const appliedC = await t.run(syncC);

    // Assess
    assert.equal(outcomeOf(supersededB), 'superseded');
    assert.equal(outcomeOf(again), 'superseded');
    assert.equal(outcomeOf(appliedC), 'applied');
    assert.deepEqual(t.statusesOf(B), [
      APPLYING,
      { state: 'pending', description: SUPERSEDED_BY_C },
    ]);
    assert.ok(SUPERSEDED_BY_C.length <= 140, 'within GitHub’s limit on a description');
    assert.equal(toldAgain, toldAfterB, 'the same supersession is told once');
    assert.deepEqual(
      t.told.filter((e) => e.revision === B).map((e) => [e.event, e.result]),
      [
        ['fetched', 'fetched'],
        ['fetched', 'superseded'],
      ],
    );
    assert.deepEqual(t.statusesOf(C), [APPLYING, APPLIED]);
  });

  it('leaves the applied newer commit at success when the next poll fetches it again', async () => {
    // Prepare: B superseded by C, C applied.
    const t = await appliedAtA();
    const syncB = await t.fetch(B);
    const syncC = await t.fetch(C);
    await t.run(syncB);
    await t.run(syncC);
    const toldBefore = t.told.length;

    // Act: the next poll finds C again and syncs it again.
    const pollSync = await t.fetch(C);
    await t.run(pollSync);

    // Assess: nothing new is told, so C's status stays success.
    assert.deepEqual(t.told.slice(toldBefore), []);
    assert.deepEqual(t.statusesOf(C), [APPLYING, APPLIED]);
  });

  it('tells no health for a superseded sync: the health in the state is another revision’s', async () => {
    // Prepare: B and C fetched; the track's health recorded False (A's, say) since.
    const t = await appliedAtA();
    const syncB = await t.fetch(B);
    await t.fetch(C);
    await recordUnhealthy(store, t.name, NOW);

    // Act
    const done = await t.run(syncB);

    // Assess
    assert.equal(outcomeOf(done), 'superseded');
    assert.deepEqual(
      t.told.filter((e) => e.revision === B).map((e) => e.event),
      ['fetched', 'fetched'],
      'no degraded (nor healthy) event for B',
    );
    assert.deepEqual(t.statusesOf(B), [
      APPLYING,
      { state: 'pending', description: SUPERSEDED_BY_C },
    ]);
  });

  it('names the revision the state desires when the sync ends, the newest one', async () => {
    // Prepare: B, C and then A again fetched before B's sync ran.
    const t = await appliedAtA();
    const syncB = await t.fetch(B);
    await t.fetch(C);
    await t.fetch(A);

    // Act
    await t.run(syncB);

    // Assess
    assert.deepEqual(t.statusesOf(B).at(-1), {
      state: 'pending',
      description: `fetched; not applied: newer commit ${A.slice(0, 12)} superseded it`,
    });
  });

  it('keeps a long reason within the 140 characters GitHub allows', () => {
    // Act
    const status = commitStatusOf(
      {
        track: 'web',
        event: 'fetched',
        result: 'superseded',
        revision: B,
        message: `fetched; not applied: ${'x'.repeat(200)}`,
        subjects: [],
        time: NOW.toISOString(),
      },
      { wait: true },
    );

    // Assess
    assert.equal(status?.state, 'pending');
    assert.equal(status?.description.length, 140);
    assert.ok(status?.description.startsWith('fetched; not applied: xxx'));
  });
});
