/**
 * A track refused because its dependency was not Ready is synced again as
 * soon as the dependency becomes Ready (through the apply function's job
 * runner), not at its next poll. Real fs store, in-memory cluster fake.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runApplyJob, type RunApplyJobDeps } from '../../src/aws/run-apply-job.ts';
import type { LocalContext } from '../../src/sync/local-context.ts';
import { parseConfig } from '../../src/config/index.ts';
import type { Config } from '../../src/config/types.ts';
import type { GitSource } from '../../src/source/ports.ts';
import { useCaseHandlers } from '../../src/serve/use-case-handlers.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import type { SyncResult } from '../../src/sync/apply-revision.ts';
import { fetchTrack } from '../../src/sync/fetch-track.ts';
import type { Job, SyncJob } from '../../src/sync/jobs.ts';
import { conditionOf, updateTrackState } from '../../src/sync/track-state.ts';
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
  let deps: RunApplyJobDeps;

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
      clusters: config.clusters,
      connect: async () => cluster,
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
    const refused = (await runApplyJob(appSync, deps)) as SyncResult;
    await runApplyJob(pinnedSync, deps);
    await updateTrackState(store, 'pinned', (state) => {
      state.pinned = SHA.pinned; // someone rolled it back meanwhile: it stays where it is
    });
    const queuedWhileRefused = queued.length;

    // Act
    const base = (await runApplyJob(await fetched('base', SHA.base), deps)) as SyncResult;
    const resumed = queued.filter((job): job is SyncJob => job.type === 'sync');
    const app = resumed[0] ? ((await runApplyJob(resumed[0], deps)) as SyncResult) : undefined;

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
    await runApplyJob(await fetched('base', SHA.base), deps);

    // Assess
    assert.deepEqual(queued, []);
  });

  it("serve: a sync's outcome names the waiting dependent's sync as its next job", async () => {
    // Prepare: a fresh store where app waits for base.
    const serveStore = new FsStore({ path: join(dir, 'serve') });
    const ctx: LocalContext = {
      config,
      artifacts: serveStore,
      state: serveStore,
      source: async () => gitWith(SHA.base, 'x'),
      cluster: async () => new InMemoryCluster(),
      close: () => undefined,
    };
    const handlers = useCaseHandlers(ctx);
    const trackOf = (name: string) => config.tracks.find((t) => t.name === name)!;
    const appFetch = await handlers.fetch(trackOf('app'), {
      type: 'fetch',
      track: 'app',
      trigger: 'webhook',
    });
    await handlers.sync(trackOf('app'), appFetch.next![0]!);
    const baseFetch = await handlers.fetch(trackOf('base'), {
      type: 'fetch',
      track: 'base',
      trigger: 'webhook',
    });

    // Act
    const outcome = await handlers.sync(trackOf('base'), baseFetch.next![0]!);

    // Assess
    assert.equal(outcome.result, 'applied');
    assert.deepEqual(
      outcome.next?.map((job) => [job.track, job.revision]),
      [['app', SHA.base]],
    );
  });
});
