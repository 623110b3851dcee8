/**
 * Two more reads of a track's cluster held to a bound (track-deadline-commands.test.ts has the
 * commands): the objects on `driftless serve`'s dashboard, within the track's `timeout`, and the
 * GitTrack `.status` written after a job, within a short bound of its own. A cluster port that
 * never answers the calls a test picks stands in for a hung API server (each request's own 60 s
 * idle timeout never ends them here: only the bound can). The real fs store, serve's HTTP server
 * and use-cases; a Git source and the in-memory cluster fake for what answers.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, beforeEach, describe, it, mock } from 'node:test';
import type { KubernetesPort } from '../../src/cluster/kubernetes-port.ts';
import { parseConfig } from '../../src/config/index.ts';
import type { SecretRef } from '../../src/config/secret-ref.ts';
import type { Track } from '../../src/config/types.ts';
import type { ObservedObjects, TrackDetail } from '../../src/dashboard/types.ts';
import { startServe, type RunningServe } from '../../src/serve/start-serve.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import { JOB_STATUS_WRITE_TIMEOUT_MS, writeJobStatus } from '../../src/sync/discover-git-tracks.ts';
import { executeApplyJob } from '../../src/sync/execute-job.ts';
import type { LocalContext } from '../../src/sync/local-context.ts';
import type { ObservedObject } from '../../src/sync/observed-object.ts';
import { syncTrack } from '../../src/sync/sync-track.ts';
import { readTrackState, updateTrackState } from '../../src/sync/track-state.ts';
import { FIXED_REVISION, gitAt } from './fakes/git-sources.ts';
import { hangingOn, settled } from './fakes/hanging-cluster.ts';
import { InMemoryCluster } from './fakes/in-memory-cluster.ts';

const TOKEN = 'dashboard-token-never-logged';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("serve's dashboard against a cluster that stops answering", () => {
  let dir: string;
  let store: FsStore;
  let serve: RunningServe | undefined;
  let answering: InMemoryCluster;
  /** As the last drift check recorded it. */
  const stored: ObservedObject = {
    subject: 'ConfigMap/apps/a',
    apiVersion: 'v1',
    kind: 'ConfigMap',
    sync: 'InSync',
    health: 'Healthy',
    message: '',
  };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-deadline-reads-'));
  });

  beforeEach(async () => {
    store = new FsStore({ path: await mkdtemp(join(dir, 'store-')) });
    answering = new InMemoryCluster();
  });

  afterEach(async () => {
    await serve?.close();
    serve = undefined;
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /**
   * Serve with the track `web` (its `timeout` as given, and `more` of its fields) applied to the
   * answering cluster, a stored observation of it, and `cluster` as its cluster from now on;
   * `readSecret` reads the secrets it names.
   */
  async function serving(
    timeout: string,
    cluster: KubernetesPort,
    {
      more = '',
      readSecret,
    }: { more?: string; readSecret?: (ref: SecretRef) => Promise<string> } = {},
  ): Promise<RunningServe> {
    const config = parseConfig(
      `dashboard: {tokens: [env:DASH_TOKEN]}\ntracks: [{name: web, repository: https://git.example.com/web.git, namespace: apps, timeout: ${timeout}${more}}]`,
      'driftless.yaml',
    );
    const track = config.tracks[0]!;
    const deps = {
      cluster: answering,
      source: gitAt(['a']),
      artifacts: store,
      state: store,
      ...(readSecret === undefined ? {} : { readSecret }),
    };
    const result = await syncTrack(track, { trigger: 'manual' }, deps);
    assert.equal(result.result, 'applied', result.error);
    await updateTrackState(store, 'web', (state) => {
      state.observed = { at: '2026-11-28T12:00:00.000Z', objects: [stored] };
    });
    const ctx: LocalContext = {
      config,
      artifacts: store,
      state: store,
      ...(readSecret === undefined ? {} : { readSecret }),
      source: async () => gitAt(['a']),
      cluster: async () => cluster,
      close: () => undefined,
    };
    serve = await startServe(ctx, {
      port: 0,
      host: '127.0.0.1',
      env: { DASH_TOKEN: TOKEN },
      runAtStart: false,
    });
    return serve;
  }

  /** GET /api/tracks/web: its status, its objects, and how long it took. */
  async function trackPage(running: RunningServe) {
    const started = performance.now();
    // A bound of the test's own: without the fix the answer never comes.
    const response = await fetch(`${running.url}/api/tracks/web`, {
      headers: { authorization: `Bearer ${TOKEN}` },
      signal: AbortSignal.timeout(12_000),
    });
    const body = (await response.json()) as TrackDetail;
    return {
      status: response.status,
      objects: body.objects,
      seconds: (performance.now() - started) / 1000,
    };
  }

  it(
    "answers the track's page at the track's timeout with the stored objects and why",
    { timeout: 20_000 },
    async () => {
      // Prepare: discovery answers; reading the objects gets no answer.
      const cluster = hangingOn(answering, (call) => ['get', 'list'].includes(call.method));
      const running = await serving('2s', cluster);

      // Act
      const page = await trackPage(running);

      // Assess: not a hang; the page as a failed live reading answers it, naming track and timeout
      assert.ok(page.seconds >= 1.9 && page.seconds < 10, `took ${page.seconds} s`);
      assert.ok(cluster.hung() > 0);
      assert.equal(page.status, 200);
      assert.deepEqual(page.objects, {
        observedAt: '2026-11-28T12:00:00.000Z',
        source: 'stored',
        objects: [stored],
        error:
          'the cluster could not be read: track "web": the dashboard read did not finish within the track\'s timeout (2000 ms)',
      } satisfies ObservedObjects);
    },
  );

  it(
    "answers the track's page at the track's timeout when a secret of its revision is never read",
    { timeout: 20_000 },
    async () => {
      // Prepare: the cluster answers; the substituteFrom secret answers the sync, then goes silent.
      let secretAnswers = true;
      const asked: SecretRef[] = [];
      const readSecret = (ref: SecretRef): Promise<string> => {
        // The dashboard's token is read from the environment as ever.
        if (ref.scheme === 'env' && ref.name === 'DASH_TOKEN') return Promise.resolve(TOKEN);
        asked.push(ref);
        return secretAnswers
          ? Promise.resolve('{"LEVEL": "info"}')
          : new Promise<string>(() => undefined);
      };
      const running = await serving('2s', answering, {
        more: ', substituteFrom: [{secret: env:WEB_VARS}]',
        readSecret,
      });
      secretAnswers = false;

      // Act
      const page = await trackPage(running);

      // Assess: not a hang; the stored objects and why answer it
      assert.ok(page.seconds >= 1.9 && page.seconds < 10, `took ${page.seconds} s`);
      assert.equal(asked.length, 2, 'the secret was asked for by the reading');
      assert.equal(page.status, 200);
      assert.equal(page.objects.source, 'stored');
      assert.match(
        page.objects.error ?? '',
        /track "web": the dashboard read did not finish within the track's timeout \(2000 ms\)/,
      );
    },
  );

  it(
    'has a poll that comes while a reading still waits share it rather than send its own',
    { timeout: 20_000 },
    async () => {
      // Prepare: a 4 s timeout; the second poll comes after the 3 s a finished reading is kept.
      const cluster = hangingOn(answering, (call) => ['get', 'list'].includes(call.method));
      const running = await serving('4s', cluster);
      const first = trackPage(running);
      await cluster.firstHang;
      const hungByOne = cluster.hung();
      await sleep(3_200);

      // Act
      const second = await trackPage(running);
      await first;

      // Assess: answered when the first reading gave up, and nothing more was sent to the cluster
      assert.ok(second.seconds < 2, `the second poll took ${second.seconds} s`);
      assert.equal(cluster.hung(), hungByOne);
      assert.match(second.objects.error ?? '', /the dashboard read did not finish/);
    },
  );
});

describe('the GitTrack .status write after a job against a cluster that stops answering', () => {
  let dir: string;
  let store: FsStore;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-status-write-'));
  });

  beforeEach(async () => {
    store = new FsStore({ path: await mkdtemp(join(dir, 'store-')) });
  });

  afterEach(() => {
    mock.timers.reset();
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** `web`, read from a GitTrack, with the `timeout` given, applied to `answering`. */
  async function syncedFromGitTrack(timeout: string, answering: InMemoryCluster): Promise<Track> {
    const config = parseConfig(
      `tracks: [{name: web, repository: https://git.example.com/web.git, namespace: apps, timeout: ${timeout}}]`,
      'driftless.yaml',
    );
    const track: Track = {
      ...config.tracks[0]!,
      origin: { source: 'cluster-default', gitTrack: { namespace: 'apps', name: 'web' } },
    };
    const deps = { cluster: answering, source: gitAt(['a']), artifacts: store, state: store };
    const result = await syncTrack(track, { trigger: 'manual' }, deps);
    assert.equal(result.result, 'applied', result.error);
    return track;
  }

  /** A sync job of `track` whose `.status` write is never answered; its job promise and port. */
  function syncJob(track: Track, answering: InMemoryCluster) {
    const cluster = hangingOn(answering, (call) => call.subresource === 'status');
    const job = executeApplyJob(
      track,
      {
        type: 'sync',
        track: 'web',
        revision: FIXED_REVISION,
        resolvedAt: new Date().toISOString(),
        trigger: 'manual',
      },
      {
        tracks: [track],
        artifacts: store,
        state: store,
        queue: { enqueue: async () => undefined },
        cluster: async () => cluster,
      },
    );
    return { job, cluster };
  }

  for (const [timeout, bound] of [
    ['2m', JOB_STATUS_WRITE_TIMEOUT_MS],
    ['3s', 3_000],
  ] as const) {
    it(
      `gives up the write after ${bound} ms with a track timeout of ${timeout}, the job's outcome standing`,
      { timeout: 20_000 },
      async () => {
        // Prepare: the job's sync is answered, the status write after it is not. The timers are
        // the test's from here: the sync's own deadline never fires, the write's is moved by hand.
        const answering = new InMemoryCluster();
        const track = await syncedFromGitTrack(timeout, answering);
        mock.timers.enable({ apis: ['setTimeout'] });
        const { job, cluster } = syncJob(track, answering);

        // Act
        await cluster.firstHang;
        mock.timers.tick(bound - 1);
        const before = await settled(job);
        mock.timers.tick(1);
        const atBound = await settled(job);

        // Assess: not a moment before the bound, and then at once
        assert.equal(before, false);
        assert.equal(atBound, true, `the job still waited on the write after ${bound} ms`);
        const done = await job;
        assert.equal(done.type, 'sync');
        assert.equal(done.type === 'sync' && done.result.result, 'unchanged');
        assert.equal(cluster.hung(), 1);
      },
    );
  }

  it("names the write's own limit, not the track's timeout, when that limit ended it", async () => {
    // Prepare
    const answering = new InMemoryCluster();
    const track = await syncedFromGitTrack('2m', answering);
    const state = await readTrackState(store, 'web');
    mock.timers.enable({ apis: ['setTimeout'] });
    const cluster = hangingOn(answering, (call) => call.subresource === 'status');

    // Act
    const write = writeJobStatus(track, { namespace: 'apps', name: 'web' }, cluster, state);
    const outcome = assert.rejects(write, (error: Error) => {
      assert.equal(
        error.message,
        `track "web": the GitTrack status write did not finish within the status write's own limit (${JOB_STATUS_WRITE_TIMEOUT_MS} ms)`,
      );
      return true;
    });
    await cluster.firstHang;
    mock.timers.tick(JOB_STATUS_WRITE_TIMEOUT_MS);

    // Assess
    await outcome;
  });
});
