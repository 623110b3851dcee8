/**
 * A track's `timeout` bounds what else a track's cluster is asked besides a sync, rollback
 * or drift check (track-deadline.test.ts): `driftless delete`, `diff` and `status --objects`,
 * a discovery of GitTracks and the GitTrack `.status` written after a job. A cluster port that
 * never answers the calls a test picks stands in for a hung API server (each request's own 60 s
 * idle timeout never ends them here: only the deadline can). The real fs store, CLI and
 * use-cases; a Git source and the in-memory cluster fake for what answers.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, beforeEach, describe, it, mock } from 'node:test';
import { runCli } from '../../src/cli/main.ts';
import type { KubeObject } from '../../src/cluster/kube-object.ts';
import type { KubernetesPort } from '../../src/cluster/kubernetes-port.ts';
import { GIT_TRACK_API_VERSION } from '../../src/config/git-track.ts';
import { parseConfig } from '../../src/config/index.ts';
import type { Config, GitTracksFromCluster, Track } from '../../src/config/types.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import {
  DISCOVERY_TIMEOUT_MS,
  GC_FINALIZER,
  discoverGitTracks,
} from '../../src/sync/discover-git-tracks.ts';
import { executeApplyJob } from '../../src/sync/execute-job.ts';
import type { LocalContext } from '../../src/sync/local-context.ts';
import type { PublishedTracks } from '../../src/sync/published-tracks.ts';
import { syncTrack } from '../../src/sync/sync-track.ts';
import { TrackTimeoutError } from '../../src/sync/track-cluster.ts';
import { conditionOf, readTrackState } from '../../src/sync/track-state.ts';
import { FIXED_REVISION, gitAt } from './fakes/git-sources.ts';
import { hangingOn, settled } from './fakes/hanging-cluster.ts';
import { InMemoryCluster } from './fakes/in-memory-cluster.ts';

const gaveUp = (job: string): string =>
  `track "web": the ${job} did not finish within the track's timeout (2000 ms)`;

/**
 * At the track's 2 s, not never; the upper bound leaves room for a loaded machine (CI), not a
 * measure of speed.
 */
function assertAboutTwoSeconds(seconds: number): void {
  assert.ok(seconds >= 1.9 && seconds < 15, `took ${seconds} s`);
}

describe("a track's timeout against a cluster that stops answering", () => {
  let dir: string;
  let store: FsStore;
  let config: Config;
  let track: Track;
  let answering: InMemoryCluster;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-deadline-commands-'));
  });

  beforeEach(async () => {
    store = new FsStore({ path: await mkdtemp(join(dir, 'store-')) });
    config = parseConfig(
      'tracks: [{name: web, repository: https://git.example.com/web.git, namespace: apps, timeout: 2s}]',
      'driftless.yaml',
    );
    track = config.tracks[0]!;
    answering = new InMemoryCluster();
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** Applies `names` to the answering cluster: the track's state, inventory and stored revision. */
  async function synced(names: readonly string[]): Promise<void> {
    const result = await syncTrack(
      track,
      { trigger: 'manual' },
      { cluster: answering, source: gitAt(names), artifacts: store, state: store },
    );
    assert.equal(result.result, 'applied', result.error);
  }

  /** Runs the CLI on the store, with `cluster` as the track's; timed, its output captured. */
  async function cli(cluster: KubernetesPort, names: readonly string[], ...args: string[]) {
    const context: LocalContext = {
      config,
      artifacts: store,
      state: store,
      source: async () => gitAt(names),
      cluster: async () => cluster,
      close: () => undefined,
    };
    let stdout = '';
    let stderr = '';
    const started = performance.now();
    const code = await runCli(args, {
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: (text: string) => (stderr += text) },
      env: {},
      openLocalContext: async () => context,
    });
    return { code, stdout, stderr, seconds: (performance.now() - started) / 1000 };
  }

  it(
    'stops a delete at the timeout, saying which objects it deleted, and keeps the rest',
    { timeout: 20_000 },
    async () => {
      // Prepare: 12 objects; the server answers for a and b, then no more. Eight are read at
      // once: c to j wait at the deadline, k and l are not sent.
      const names = 'abcdefghijkl'.split('');
      await synced(names);
      const cluster = hangingOn(
        answering,
        (call) => call.name !== undefined && !['a', 'b'].includes(call.name),
      );

      // Act
      const run = await cli(cluster, names, 'delete', '--track', 'web', '-o', 'json');
      const result = JSON.parse(run.stdout) as {
        result: string;
        error: string;
        changeset: { subject: string; action: string; error?: string }[];
      };
      const state = await readTrackState(store, 'web');
      const [last] = await store.listHistory('web');

      // Assess: reported as a failed delete is, naming the track and the timeout once, then
      // how many objects it left (the 8 cancelled and the 2 not sent), the first few by name.
      assertAboutTwoSeconds(run.seconds);
      assert.equal(run.code, 3);
      assert.equal(result.result, 'failed');
      assert.equal(
        result.error,
        `${gaveUp('delete')}: 10 of 12 objects not deleted (ConfigMap/apps/c, ConfigMap/apps/d, ConfigMap/apps/e and 7 more)`,
      );
      const subjects = (action: string) =>
        result.changeset.filter((e) => e.action === action).map((e) => e.subject);
      assert.deepEqual(subjects('deleted'), ['ConfigMap/apps/a', 'ConfigMap/apps/b']);
      assert.equal(
        result.changeset.find((e) => e.subject === 'ConfigMap/apps/c')?.error,
        `ConfigMap/apps/c: ${gaveUp('delete')}`,
      );
      // Nothing was sent after the deadline, and what was deleted stays deleted; the rest stays
      // the track's, to delete again.
      assert.equal(cluster.hung(), 8);
      assert.deepEqual(
        [...answering.objects.values()].map((object) => object.metadata.name),
        names.slice(2),
      );
      assert.deepEqual(
        state.inventory.map((entry) => entry.subject),
        names.slice(2).map((name) => `ConfigMap/apps/${name}`),
      );
      assert.equal(state.applyLease, null);
      assert.equal(conditionOf(state, 'Ready')?.reason, 'DeletionFailed');
      assert.equal(conditionOf(state, 'Ready')?.message, result.error);
      assert.equal(last?.result, 'failed');
      assert.equal(last?.['error'], result.error);
      assert.deepEqual(last?.['collected'], ['ConfigMap/apps/a', 'ConfigMap/apps/b']);
    },
  );

  it(
    'prints a delete stopped at the timeout with each object, then the timeout once',
    { timeout: 20_000 },
    async () => {
      // Prepare: six objects, and a server that answers none of their reads.
      const names = 'abcdef'.split('');
      await synced(names);
      const cluster = hangingOn(answering, (call) => call.name !== undefined);

      // Act
      const run = await cli(cluster, names, 'delete', '--track', 'web');

      // Assess: a line per object, each with its own error, and the summary says it once.
      assert.equal(run.code, 3);
      const lines = run.stdout.trimEnd().split('\n');
      assert.deepEqual(
        lines.slice(0, -1),
        names.map((name) => `  failed    ConfigMap/apps/${name}: ${gaveUp('delete')}`),
      );
      assert.equal(
        lines.at(-1),
        `web: not deleted: ${gaveUp('delete')}: 6 of 6 objects not deleted (ConfigMap/apps/a, ConfigMap/apps/b, ConfigMap/apps/c and 3 more)`,
      );
    },
  );

  it('fails a diff at the timeout when discovery gets no answer', { timeout: 20_000 }, async () => {
    // Prepare
    await synced(['a']);
    const cluster = hangingOn(answering, (call) => call.method === 'discover');

    // Act
    const run = await cli(cluster, ['a', 'b'], 'diff', '--track', 'web', '-o', 'json');

    // Assess: as a failed command reports -o json, on stdout and stderr, with exit code 3
    assertAboutTwoSeconds(run.seconds);
    assert.equal(run.code, 3);
    assert.deepEqual(JSON.parse(run.stdout), { track: 'web', error: gaveUp('diff') });
    assert.equal(run.stderr, `driftless: ${gaveUp('diff')}\n`);
  });

  it(
    'fails a diff at the timeout rather than showing the dry-runs it cut short as failures',
    { timeout: 20_000 },
    async () => {
      // Prepare: discovery and reads answer; the dry-run of b is never answered.
      await synced(['a', 'b']);
      const cluster = hangingOn(answering, (call) => call.dryRun === true && call.name === 'b');

      // Act
      const run = await cli(cluster, ['a', 'b'], 'diff', '--track', 'web', '-o', 'json');

      // Assess: not `ConfigMap/apps/b` "would fail": the diff did not finish.
      assertAboutTwoSeconds(run.seconds);
      assert.equal(cluster.hung(), 1);
      assert.equal(run.code, 3);
      assert.deepEqual(JSON.parse(run.stdout), { track: 'web', error: gaveUp('diff') });
    },
  );

  it(
    'fails status --objects at the timeout when the store gets no answer for the artifact',
    { timeout: 20_000 },
    async () => {
      // Prepare: synced; then the store's artifact reads get no answer (the cluster answers).
      await synced(['a', 'b']);
      class SilentArtifacts extends FsStore {
        override get(): Promise<Uint8Array> {
          return new Promise(() => undefined);
        }
      }
      store = new SilentArtifacts({ path: store.root });

      // Act
      const run = await cli(answering, ['a', 'b'], 'status', '--track', 'web', '--objects');

      // Assess
      assertAboutTwoSeconds(run.seconds);
      assert.equal(run.code, 3);
      assert.equal(run.stderr, `driftless: ${gaveUp('status check')}\n`);
    },
  );

  it(
    'fails a drift check at the timeout when the store stops answering before a write-back',
    { timeout: 20_000 },
    async () => {
      // Prepare: a track whose ConfigMaps Git takes back from the cluster (syncTo: git), synced;
      // a ConfigMap changed in the cluster; then the store answers one more artifact read only.
      config = parseConfig(
        'tracks: [{name: web, repository: https://git.example.com/web.git, namespace: apps, timeout: 2s, rules: [{apiGroups: [""], resources: [configmaps], syncTo: git}]}]',
        'driftless.yaml',
      );
      track = config.tracks[0]!;
      await synced(['a']);
      const live = await answering.get({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        namespace: 'apps',
        name: 'a',
      });
      await answering.apply(
        { ...live!, data: { value: 'changed by hand' } },
        { fieldManager: 'kubectl', force: true },
      );
      let reads = 0;
      class ArtifactsStopping extends FsStore {
        override get(track: string, revision: string): Promise<Uint8Array> {
          reads += 1;
          return reads === 1 ? super.get(track, revision) : new Promise(() => undefined);
        }
      }
      store = new ArtifactsStopping({ path: store.root });

      // Act
      const run = await cli(answering, ['a'], 'drift', '--track', 'web');

      // Assess: the check read the artifact again for the write-back, then ended at its deadline
      assertAboutTwoSeconds(run.seconds);
      assert.equal(reads, 2);
      assert.equal(run.code, 3, run.stdout + run.stderr);
      assert.match(
        run.stdout + run.stderr,
        /the drift check did not finish within the track's timeout/,
      );
    },
  );

  it(
    'fails status --objects at the timeout rather than showing objects it could not read',
    { timeout: 20_000 },
    async () => {
      // Prepare: discovery answers; reading the objects gets no answer.
      await synced(['a', 'b']);
      const cluster = hangingOn(
        answering,
        (call) => (call.method === 'get' || call.method === 'list') && call.kind === 'ConfigMap',
      );

      // Act
      const json = await cli(
        cluster,
        ['a', 'b'],
        'status',
        '--track',
        'web',
        '--objects',
        '-o',
        'json',
      );
      const text = await cli(cluster, ['a', 'b'], 'status', '--track', 'web', '--objects');

      // Assess
      assertAboutTwoSeconds(json.seconds);
      assert.ok(cluster.hung() > 0);
      assert.equal(json.code, 3);
      assert.deepEqual(JSON.parse(json.stdout), { track: 'web', error: gaveUp('status check') });
      assert.equal(text.code, 3);
      assert.equal(text.stdout, '');
      assert.equal(text.stderr, `driftless: ${gaveUp('status check')}\n`);
    },
  );

  it(
    "ends the GitTrack .status write after a job at the track's timeout",
    { timeout: 20_000 },
    async () => {
      // Prepare: a track read from a GitTrack, applied; the job's sync is answered, the status
      // write after it is not.
      await synced(['a']);
      const fromGitTrack: Track = {
        ...track,
        origin: { source: 'cluster-default', gitTrack: { namespace: 'apps', name: 'web' } },
      };
      const cluster = hangingOn(answering, (call) => call.subresource === 'status');

      // Act
      const started = performance.now();
      const done = await executeApplyJob(
        fromGitTrack,
        {
          type: 'sync',
          track: 'web',
          revision: FIXED_REVISION,
          resolvedAt: new Date().toISOString(),
          trigger: 'manual',
        },
        {
          tracks: [fromGitTrack],
          artifacts: store,
          state: store,
          queue: { enqueue: async () => undefined },
          cluster: async () => cluster,
        },
      );
      const seconds = (performance.now() - started) / 1000;

      // Assess: the job's own outcome stands; the write was given up at the timeout.
      assertAboutTwoSeconds(seconds);
      assert.equal(done.type, 'sync');
      assert.equal(done.type === 'sync' && done.result.result, 'unchanged');
      assert.equal(cluster.hung(), 1);
    },
  );
});

describe('a GitTrack discovery against a cluster that stops answering', () => {
  let dir: string;
  let store: FsStore;
  const config = parseConfig(
    'tracksFrom:\n  - {cluster: default, gitTracks: true}\n',
    'driftless.yaml',
  );
  const source = config.tracksFrom[0] as GitTracksFromCluster;
  // A source has no timeout setting: the message names it and the discovery's own limit.
  const gaveUpDiscovery = `tracksFrom source "${source.id}": the discovery did not finish within the discovery's fixed limit (${DISCOVERY_TIMEOUT_MS} ms)`;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-discovery-z-'));
  });

  beforeEach(async () => {
    store = new FsStore({ path: await mkdtemp(join(dir, 'store-')) });
    // The discovery's timeout is a track's default, 2 minutes: its timer is the test's to move.
    mock.timers.enable({ apis: ['setTimeout'] });
  });

  afterEach(() => {
    mock.timers.reset();
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** A valid GitTrack named `name` in namespace apps. */
  function gitTrack(name: string): KubeObject {
    return {
      apiVersion: GIT_TRACK_API_VERSION,
      kind: 'GitTrack',
      metadata: { name, namespace: 'apps' },
      spec: { repository: `https://git.example.com/${name}.git`, reference: 'main' },
    };
  }

  it('fails at the timeout, naming the source, when the GitTracks cannot be listed', async () => {
    // Prepare
    const cluster = hangingOn(new InMemoryCluster(), (call) => call.method === 'list');

    // Act
    const discovery = discoverGitTracks(source, {
      config,
      published: store,
      state: store,
      cluster,
    });
    mock.timers.tick(DISCOVERY_TIMEOUT_MS - 1);
    const before = await settled(discovery);
    mock.timers.tick(1);

    // Assess: not a moment before its time, and then at once, with nothing published
    assert.equal(before, false);
    await assert.rejects(discovery, (error: unknown) => {
      assert.ok(error instanceof TrackTimeoutError, String(error));
      assert.equal(error.message, gaveUpDiscovery);
      return true;
    });
    assert.equal(await store.readPublished(source.id), undefined);
  });

  it('keeps what it did, sends nothing more and says so once, when a write gets no answer', async () => {
    // Prepare: two GitTracks; holding the finalizer on the first is never answered.
    const answering = new InMemoryCluster();
    for (const name of ['one', 'two']) {
      await answering.apply(gitTrack(name), { fieldManager: 'kubectl', force: false });
    }
    const cluster = hangingOn(answering, (call) => call.method === 'apply');

    // Act
    const discovery = discoverGitTracks(source, {
      config,
      published: store,
      state: store,
      cluster,
    });
    await cluster.firstHang;
    mock.timers.tick(DISCOVERY_TIMEOUT_MS);
    const result = await discovery;
    const published = await store.readPublished<PublishedTracks>(source.id);

    // Assess: both tracks published, one error for the whole discovery, no request after it
    assert.deepEqual(result.tracks, ['one', 'two']);
    assert.deepEqual(result.added, ['one', 'two']);
    assert.deepEqual(result.errors, [gaveUpDiscovery]);
    assert.deepEqual(
      published?.tracks.map((t) => t.name),
      ['one', 'two'],
    );
    assert.equal(cluster.hung(), 1);
    const two = await answering.get({
      apiVersion: GIT_TRACK_API_VERSION,
      kind: 'GitTrack',
      namespace: 'apps',
      name: 'two',
    });
    assert.equal(two?.metadata['finalizers'], undefined, `no ${GC_FINALIZER} sent`);
  });
});
