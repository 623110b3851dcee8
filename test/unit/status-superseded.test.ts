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
import { commitStatusOf, type CommitStatus } from '../../src/notify/commit-status.ts';
import type { NotificationEvent } from '../../src/notify/events.ts';
import type { GitSource } from '../../src/source/ports.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import type { SyncResult } from '../../src/sync/apply-revision.ts';
import { executeJob } from '../../src/sync/execute-job.ts';
import type { FetchResult } from '../../src/sync/fetch-track.ts';
import type { Job } from '../../src/sync/jobs.ts';
import { runJob, type JobDeps, type JobResult } from '../../src/sync/run-job.ts';
import { updateTrackState } from '../../src/sync/track-state.ts';
import { InMemoryCluster } from './fakes/in-memory-cluster.ts';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const C = 'c'.repeat(40);
const NOW = new Date('2026-12-01T10:00:00.000Z');

const configMap = (value: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  value: "${value}"\n`;

/** A Git source whose head can move, with one file per commit. */
class MovingGit implements GitSource {
  head = A;
  readonly files = new Map<string, string>([
    [A, configMap('a')],
    [B, configMap('b')],
    [C, configMap('c')],
  ]);

  async resolve() {
    return { revision: this.head, ref: 'refs/heads/main' };
  }

  async readFiles(_track: unknown, revision: string) {
    const content = this.files.get(revision);
    if (content === undefined) throw new Error(`no commit ${revision}`);
    return [{ path: 'app.yaml', content: new TextEncoder().encode(content) }];
  }
}

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
    const git = new MovingGit();
    const told: NotificationEvent[] = [];
    const queued: Job[] = [];
    const deps: JobDeps = {
      tracks: [track],
      artifacts: store,
      state: store,
      queue: { enqueue: async (job) => void queued.push(job) },
      source: async () => git,
      cluster: async () => new InMemoryCluster(),
      notify: async (_track, events) => void told.push(...events),
    };
    const fetchJob: Job = { type: 'fetch', track: name, trigger: 'schedule' };
    const run = (job: Job): Promise<JobResult> => runJob(job, deps, executeJob);
    await run(fetchJob);
    await run(queued.shift()!);
    return {
      name,
      git,
      told,
      run,
      /** Fetches the head; the sync job it queued is returned, not run. */
      fetch: async (head: string): Promise<Job> => {
        git.head = head;
        await run(fetchJob);
        const [sync] = queued.splice(0);
        assert.equal(sync?.type, 'sync');
        return sync!;
      },
      /** The commit statuses the events told so far set on `sha`, in order. */
      statusesOf: (sha: string): Pick<CommitStatus, 'state' | 'description'>[] =>
        told
          .map((event) => commitStatusOf(event, track))
          .filter((status) => status?.sha === sha)
          .map((status) => ({ state: status!.state, description: status!.description })),
    };
  }

  const resultOf = (done: JobResult): string =>
    done.type === 'fetch'
      ? (done.result as FetchResult).outcome
      : (done.result as SyncResult).result;

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
    assert.equal(resultOf(supersededB), 'superseded');
    assert.equal(resultOf(again), 'superseded');
    assert.equal(resultOf(appliedC), 'applied');
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
    await updateTrackState(store, t.name, (state) => {
      state.conditions.push({
        type: 'Healthy',
        status: 'False',
        reason: 'HealthCheckFailed',
        message: 'Deployment/apps/web: 0/2 ready',
        lastTransitionTime: NOW.toISOString(),
      });
    });

    // Act
    const done = await t.run(syncB);

    // Assess
    assert.equal(resultOf(done), 'superseded');
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
