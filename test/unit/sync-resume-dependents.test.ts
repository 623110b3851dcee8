/**
 * A track refused because its dependency was not Ready is synced again as
 * soon as the dependency becomes Ready (through the one job use-case that
 * serve and the apply function run), not at its next poll. Real fs store,
 * in-memory cluster fake.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseConfig } from '../../src/config/index.ts';
import type { Config } from '../../src/config/types.ts';
import type { GitSource } from '../../src/source/ports.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import type { SyncResult } from '../../src/sync/apply-revision.ts';
import { fetchTrack } from '../../src/sync/fetch-track.ts';
import type { DiscoverJob, Job, SyncJob } from '../../src/sync/jobs.ts';
import { executeJob } from '../../src/sync/execute-job.ts';
import { runJob, type JobDeps } from '../../src/sync/run-job.ts';
import { conditionOf, readTrackState, updateTrackState } from '../../src/sync/track-state.ts';
import { KubeconfigError } from '../../src/cluster/errors.ts';
import { InMemoryCluster } from './fakes/in-memory-cluster.ts';

const SHA = { base: 'a'.repeat(40), app: 'b'.repeat(40), pinned: 'c'.repeat(40) };

/** A Git source at `revision` with one ConfigMap named after the track. */
function gitWith(revision: string, name: string): GitSource {
  return {
    resolve: async () => ({ revision, ref: 'refs/heads/main' }),
    readFiles: async () => [
      {
        path: 'cm.yaml',
        content: new TextEncoder().encode(
          `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n`,
        ),
      },
    ],
  };
}

describe('resuming dependents', () => {
  let dir: string;
  let store: FsStore;
  let config: Config;
  let cluster: InMemoryCluster;
  let queued: Job[];
  let deps: JobDeps;

  const apply = async (job: SyncJob): Promise<SyncResult> =>
    (await runJob(job, deps, executeJob)).result as SyncResult;

  /** Fetches `track` at `revision` and returns the sync job the fetch asks for. */
  async function fetched(track: string, revision: string): Promise<SyncJob> {
    const { next } = await fetchTrack(
      config.tracks.find((t) => t.name === track)!,
      { type: 'fetch', track, trigger: 'webhook' },
      { source: gitWith(revision, track), artifacts: store, state: store },
    );
    assert.ok(next, `fetch of ${track} asked for a sync`);
    return next;
  }

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-resume-'));
    store = new FsStore({ path: dir });
    config = parseConfig(
      [
        'clusters: [{name: local, kubeconfig: /dev/null}]',
        'tracks:',
        '  - {name: base, repository: https://git.example.com/b.git, namespace: infra}',
        '  - {name: app, repository: https://git.example.com/a.git, namespace: apps, dependsOn: [base]}',
        '  - {name: pinned, repository: https://git.example.com/p.git, namespace: p, dependsOn: [base]}',
      ].join('\n'),
      'driftless.yaml',
    );
    cluster = new InMemoryCluster();
    queued = [];
    deps = {
      tracks: config.tracks,
      cluster: async () => cluster,
      artifacts: store,
      state: store,
      queue: { enqueue: async (job) => void queued.push(job) },
    };
  });

  after(() => rm(dir, { recursive: true, force: true }));

  it('queues the waiting dependent once its dependency is Ready, and that sync applies', async () => {
    // Prepare: the dependents' pushes arrive first and are refused.
    const appSync = await fetched('app', SHA.app);
    const pinnedSync = await fetched('pinned', SHA.pinned);
    const refused = await apply(appSync);
    await apply(pinnedSync);
    await updateTrackState(store, 'pinned', (state) => {
      state.pinned = SHA.pinned; // someone rolled it back meanwhile: it stays where it is
    });
    const queuedWhileRefused = queued.length;

    // Act
    const base = await apply(await fetched('base', SHA.base));
    const resumed = queued.filter((job): job is SyncJob => job.type === 'sync');
    const app = resumed[0] ? await apply(resumed[0]) : undefined;

    // Assess
    assert.equal(refused.result, 'failed');
    assert.equal(conditionOf(refused.state, 'Ready')?.reason, 'DependencyNotReady');
    assert.equal(queuedWhileRefused, 0, 'a refused sync resumes nobody');
    assert.equal(base.result, 'applied');
    assert.deepEqual(resumed, [
      {
        type: 'sync',
        track: 'app',
        revision: SHA.app,
        resolvedAt: appSync.resolvedAt,
        trigger: 'webhook',
      },
    ]);
    assert.equal(app?.result, 'applied', app?.error);
    assert.ok(cluster.objects.size >= 2);
  });

  it('queues nothing when the dependency sync changes nothing for waiting tracks', async () => {
    // Prepare: app is applied now (previous test); base syncs again.
    queued.length = 0;

    // Act
    await apply(await fetched('base', SHA.base));

    // Assess
    assert.deepEqual(queued, []);
  });

  it("a sync's typed result names the waiting dependent's sync as its next job", async () => {
    // Prepare: a fresh store where app waits for base.
    const fresh = new FsStore({ path: join(dir, 'fresh') });
    const jobDeps: JobDeps = {
      tracks: config.tracks,
      artifacts: fresh,
      state: fresh,
      queue: { enqueue: async () => undefined },
      source: async () => gitWith(SHA.base, 'x'),
      cluster: async () => new InMemoryCluster(),
    };
    const trackOf = (name: string) => config.tracks.find((t) => t.name === name)!;
    const run = (job: Exclude<Job, DiscoverJob>) => executeJob(trackOf(job.track), job, jobDeps);
    const appFetch = await run({ type: 'fetch', track: 'app', trigger: 'webhook' });
    await run(appFetch.next[0]!);
    const baseFetch = await run({ type: 'fetch', track: 'base', trigger: 'webhook' });

    // Act
    const done = await run(baseFetch.next[0]!);

    // Assess
    assert.equal(done.type, 'sync');
    assert.equal(done.type === 'sync' ? done.result.result : undefined, 'applied');
    assert.deepEqual(
      done.next.map((job) => [job.track, job.revision]),
      [['app', SHA.base]],
    );
  });

  it('rolls a dependent back while its dependency is not Ready, and pins it', async () => {
    // Prepare: a fresh store; app applied once while base stood, then base fails
    const fresh = new FsStore({ path: join(dir, 'rollback') });
    const jobDeps: JobDeps = {
      ...deps,
      artifacts: fresh,
      state: fresh,
      source: async () => gitWith(SHA.app, 'app'),
    };
    const trackOf = (name: string) => config.tracks.find((t) => t.name === name)!;
    const run = (job: Exclude<Job, DiscoverJob>) => executeJob(trackOf(job.track), job, jobDeps);
    await run((await run({ type: 'fetch', track: 'base', trigger: 'webhook' })).next[0]!);
    await run((await run({ type: 'fetch', track: 'app', trigger: 'webhook' })).next[0]!);
    await updateTrackState(fresh, 'base', (state) => {
      state.desiredRevision = SHA.base.replace(/a/g, 'd'); // a newer revision that did not apply
    });

    // Act
    const done = await run({ type: 'rollback', track: 'app', revision: SHA.app });

    // Assess
    const result = done.result as SyncResult;
    assert.equal(result.result, 'unchanged', result.error); // as applied before, now pinned
    assert.equal(result.state.pinned, SHA.app);
  });

  it('lets a dependent sync while its dependency is suspended after a good sync, and names a suspension that blocks', async () => {
    // Prepare: base applied and healthy, then suspended
    const fresh = new FsStore({ path: join(dir, 'suspended') });
    const jobDeps: JobDeps = {
      ...deps,
      artifacts: fresh,
      state: fresh,
      source: async () => gitWith(SHA.base, 'x'),
    };
    const trackOf = (name: string) => config.tracks.find((t) => t.name === name)!;
    const run = (job: Exclude<Job, DiscoverJob>) => executeJob(trackOf(job.track), job, jobDeps);
    await run((await run({ type: 'fetch', track: 'base', trigger: 'webhook' })).next[0]!);
    await run({ type: 'lifecycle', track: 'base', action: 'suspend' });

    // Act
    const stands = (
      await run((await run({ type: 'fetch', track: 'app', trigger: 'webhook' })).next[0]!)
    ).result as SyncResult;
    await updateTrackState(fresh, 'base', (state) => {
      state.desiredRevision = SHA.pinned; // fetched while suspended, never applied
    });
    const waits = (
      await run((await run({ type: 'fetch', track: 'pinned', trigger: 'webhook' })).next[0]!)
    ).result as SyncResult;

    // Assess
    assert.equal(stands.result, 'applied', stands.error);
    assert.equal(waits.result, 'failed');
    assert.match(
      waits.error ?? '',
      /dependency "base" is not Ready at its current revision \(it is suspended\)/,
    );
  });

  it("records a cluster connection that cannot be made in the track's status, as the job's failure", async () => {
    // Prepare: base's sync job, and a process whose kubeconfig cannot be read
    const job = await fetched('base', SHA.base);
    const broken: JobDeps = {
      ...deps,
      cluster: async () => {
        throw new KubeconfigError('kubeconfig /dev/null: holds no cluster');
      },
    };

    // Act
    const done = await runJob(job, broken, executeJob);

    // Assess: failed and recorded, not thrown for the queue to retry as it is
    assert.equal((done.result as SyncResult).result, 'failed');
    const state = await readTrackState(store, 'base');
    assert.equal(conditionOf(state, 'Ready')?.status, 'False');
    assert.match(conditionOf(state, 'Ready')?.message ?? '', /holds no cluster/);
  });
});
