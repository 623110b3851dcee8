/**
 * The collection of a deleted GitTrack's objects (discover-git-tracks.ts) goes on from one
 * discovery to the next until it succeeds: a collection that failed, was cut short by the
 * discovery's deadline, or was not reached before it, is tried again by the next discovery, and
 * the finalizer is released only once the objects are collected. A GitTrack that never gave a
 * track is released at once. The real fs store and sync use-cases; a small Git source and the
 * in-memory cluster, taught a GitTrack's finalizer and status subresource, stand in for Git and
 * Kubernetes.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, beforeEach, describe, it, mock } from 'node:test';
import type { KubeObject } from '../../src/cluster/kube-object.ts';
import { parseConfig } from '../../src/config/index.ts';
import type { GitTracksFromCluster } from '../../src/config/types.ts';
import type { GitSource } from '../../src/source/ports.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import {
  COLLECTION_RETRY_MAX_MS,
  DISCOVERY_TIMEOUT_MS,
  GC_FINALIZER,
  discoverGitTracks,
} from '../../src/sync/discover-git-tracks.ts';
import type { DiscoverResult } from '../../src/sync/discover-tracks.ts';
import { knownTracks, type PublishedTracks } from '../../src/sync/published-tracks.ts';
import { syncTrack } from '../../src/sync/sync-track.ts';
import {
  GitTrackCluster,
  configMapRef,
  finalizersOf,
  gitTrack,
  gitTrackRef,
} from './fakes/gittrack-cluster.ts';
import { hangingOn, type HangingPort } from './fakes/hanging-cluster.ts';

const REVISION = '1'.repeat(40);

/** A Git source whose head is REVISION, holding one ConfigMap named after the track. */
const git: GitSource = {
  resolve: async () => ({ revision: REVISION, ref: 'refs/heads/main' }),
  readFiles: async (track) => [
    {
      path: 'settings.yaml',
      content: new TextEncoder().encode(
        `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${track.name}\ndata:\n  value: "v"\n`,
      ),
    },
  ],
};

/** The reason of the Ready condition of a GitTrack's `.status`. */
function readyReason(object: KubeObject | undefined): unknown {
  const status = object?.['status'] as { conditions?: Record<string, unknown>[] } | undefined;
  return status?.conditions?.find((c) => c['type'] === 'Ready')?.['reason'];
}

describe("a deleted GitTrack's collection", () => {
  let dir: string;
  let store: FsStore;
  let cluster: GitTrackCluster;
  /** While set, deletes of ConfigMaps get no answer (a hung API server). */
  let hangDeletes: boolean;
  /** `cluster` as the discoveries reach it. */
  let port: HangingPort;
  /** The discoveries' clock: a failed collection waits before it is tried again. */
  let clock: number;
  /** Past the wait of a collection that failed. */
  const afterTheWait = (): void => {
    clock += COLLECTION_RETRY_MAX_MS;
  };
  const config = parseConfig(
    'tracksFrom:\n  - {cluster: default, gitTracks: true}\n',
    'driftless.yaml',
  );
  const source = config.tracksFrom[0] as GitTracksFromCluster;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-gittrack-collection-'));
  });

  beforeEach(async () => {
    store = new FsStore({ path: await mkdtemp(join(dir, 'store-')) });
    cluster = new GitTrackCluster();
    hangDeletes = false;
    clock = Date.now();
    port = hangingOn(
      cluster,
      (call) => hangDeletes && call.method === 'delete' && call.kind === 'ConfigMap',
    );
  });

  afterEach(() => mock.timers.reset());

  after(() => rm(dir, { recursive: true, force: true }));

  const discover = (): Promise<DiscoverResult> =>
    discoverGitTracks(source, {
      config,
      published: store,
      state: store,
      cluster: port,
      now: () => new Date(clock),
    });

  const published = (): Promise<PublishedTracks | undefined> =>
    store.readPublished<PublishedTracks>(source.id);

  /** GitTracks `names`, discovered, each track synced (its ConfigMap applied). */
  async function synced(names: readonly string[]): Promise<void> {
    for (const name of names) {
      await cluster.apply(gitTrack(name), { fieldManager: 'kubectl', force: false });
    }
    assert.deepEqual((await discover()).tracks, names);
    for (const track of await knownTracks(config, store)) {
      const synced = await syncTrack(
        track,
        { trigger: 'schedule' },
        { source: git, cluster, artifacts: store, state: store },
      );
      assert.equal(synced.result, 'applied', synced.error);
    }
    for (const name of names) {
      assert.ok(await cluster.get(configMapRef(name)), `${name}'s ConfigMap applied`);
    }
  }

  /** GitTracks `names`, discovered, each track synced (its ConfigMap applied), then deleted. */
  async function syncedThenDeleted(names: readonly string[]): Promise<void> {
    await synced(names);
    for (const name of names) cluster.deleteGitTrack(name);
    // After the syncs, which record their history at the real time: the newest entry is newest.
    clock = Date.now();
  }

  it('tries again, at a discovery after its wait, a collection that failed, and only then releases the finalizer', async () => {
    // Prepare: web synced, then deleted; its ConfigMap's deletes are refused.
    await syncedThenDeleted(['web']);
    assert.equal((await published())?.collecting, undefined, 'a list without `collecting`');
    cluster.refuseDeletes = true;
    const failed = await discover();
    afterTheWait();
    await discover();
    const failedEntries = (await store.listHistory('web')).filter((e) => e['action'] === 'delete');
    const held = await cluster.get(gitTrackRef('web'));
    const between = await published();
    const tracksBetween = await knownTracks(config, store);
    cluster.refuseDeletes = false;
    afterTheWait();

    // Act
    const next = await discover();

    // Assess: the failure reported, the GitTrack held with its objects; then collected, released.
    assert.deepEqual(failed.collected, []);
    assert.equal(failed.errors.length, 1);
    assert.match(failed.errors[0]!, /^GitTrack apps\/web: .*denied the request: keep web/);
    assert.deepEqual(finalizersOf(held!), [GC_FINALIZER], 'the finalizer stayed');
    // Tried again at each discovery, the same failure is recorded once.
    assert.deepEqual(
      failedEntries.map((entry) => entry.result),
      ['failed'],
    );
    assert.equal(readyReason(held), 'DeletionFailed');

    assert.deepEqual(next.collected, ['web']);
    assert.deepEqual(next.errors, []);
    assert.equal(await cluster.get(configMapRef('web')), undefined, 'its ConfigMap collected');
    assert.equal(await cluster.get(gitTrackRef('web')), undefined, 'the GitTrack released');
    assert.deepEqual(cluster.events, ['deleted ConfigMap web', 'released GitTrack web']);
    assert.equal(await store.read('web'), undefined, 'its state removed');
    assert.equal((await store.listHistory('web'))[0]?.result, 'deleted');
    // Meanwhile it was known, under `collecting`, and off the tracks: nothing synced it.
    assert.deepEqual(
      between?.collecting?.map((t) => t.name),
      ['web'],
      'known until collected',
    );
    assert.deepEqual(between?.tracks, [], 'off the tracks: nothing syncs it');
    assert.ok(!tracksBetween.some((t) => t.name === 'web'));
  });

  it("tries again, at the next discovery, collections the discovery's deadline cut short or did not reach", async () => {
    // Prepare: one and two synced, then deleted; deleting one's ConfigMap gets no answer.
    await syncedThenDeleted(['one', 'two']);
    hangDeletes = true;
    mock.timers.enable({ apis: ['setTimeout'] });
    const discovery = discover();
    await port.firstHang;
    mock.timers.tick(DISCOVERY_TIMEOUT_MS);
    const cut = await discovery;
    mock.timers.reset();
    const between = await published();
    const whileCut = [...cluster.events];
    hangDeletes = false;

    // Act
    const next = await discover();

    // Assess: nothing released while cut short; the next discovery collects both, then releases.
    assert.deepEqual(cut.collected, []);
    assert.deepEqual(whileCut, [], 'nothing deleted or released when cut short');

    assert.deepEqual(next.collected, ['one', 'two']);
    assert.deepEqual(next.errors, []);
    for (const name of ['one', 'two']) {
      assert.equal(await cluster.get(configMapRef(name)), undefined, `${name}'s ConfigMap`);
      assert.equal(await cluster.get(gitTrackRef(name)), undefined, `GitTrack ${name}`);
      assert.equal(await store.read(name), undefined, `${name}'s state`);
    }
    for (const name of ['one', 'two']) {
      const [deleted, released] = [`deleted ConfigMap ${name}`, `released GitTrack ${name}`];
      assert.ok(cluster.events.indexOf(deleted) < cluster.events.indexOf(released), name);
    }
    // The deadline said once, naming the source and the discovery's own limit.
    assert.equal(
      cut.errors.at(-1),
      `tracksFrom source "${source.id}": the discovery did not finish within the discovery's fixed limit (${DISCOVERY_TIMEOUT_MS} ms)`,
    );
    assert.deepEqual(
      between?.collecting?.map((t) => t.name),
      ['one', 'two'],
    );
    assert.equal(between?.collectionRetries, undefined, 'cut short, not failed: no wait');
  });

  it("keeps a track's name while it is being collected: another GitTrack cannot take it", async () => {
    // Prepare: web deleted, its collection refused; a GitTrack of the same name elsewhere.
    await syncedThenDeleted(['web']);
    cluster.refuseDeletes = true;
    await discover();
    await cluster.apply(
      { ...gitTrack('web'), metadata: { name: 'web', namespace: 'other' } },
      { fieldManager: 'kubectl', force: false },
    );

    // Act
    const refused = await discover();
    cluster.refuseDeletes = false;
    afterTheWait();
    const collected = await discover();
    const after = await discover();

    // Assess: refused until web is collected, then published
    assert.deepEqual(refused.tracks, []);
    assert.deepEqual(
      refused.problems.map((p) => `${p.where}: ${p.message}`),
      ['GitTrack other/web: metadata.name: track "web" already exists'],
    );
    assert.deepEqual(collected.collected, ['web']);
    assert.deepEqual(after.tracks, ['web']);
    assert.deepEqual((await published())?.collecting, undefined, 'nothing left to collect');
  });

  it("does not collect a track whose name the config has taken meanwhile: its objects are the config track's", async () => {
    // Prepare: web's collection failed; then web moved into driftless.yaml (same name, state).
    await syncedThenDeleted(['web']);
    cluster.refuseDeletes = true;
    await discover();
    cluster.refuseDeletes = false;
    const moved = parseConfig(
      [
        'tracksFrom:\n  - {cluster: default, gitTracks: true}',
        'tracks:\n  - {name: web, repository: https://git.example.com/web.git, namespace: apps}',
        '',
      ].join('\n'),
      'driftless.yaml',
    );

    // Act
    const next = await discoverGitTracks(source, {
      config: moved,
      published: store,
      state: store,
      cluster: port,
    });

    // Assess: released without collecting; the config track's object and state stay.
    assert.deepEqual(next.collected, []);
    assert.ok(await cluster.get(configMapRef('web')), "the config track's ConfigMap stays");
    assert.ok(await store.read('web'), 'its state stays');
    assert.equal(await cluster.get(gitTrackRef('web')), undefined, 'the GitTrack released');
  });

  /** GitTrack web synced, then edited into one the discovery refuses (a local repository): held. */
  async function syncedThenRefused(): Promise<void> {
    await synced(['web']);
    cluster.editGitTrack('web', { repository: '/srv/git/web', reference: 'main' });
    const refused = await discover();
    assert.deepEqual(refused.tracks, []);
    assert.deepEqual(
      (await published())?.held?.map((t) => t.name),
      ['web'],
    );
  }

  it('collects a deleted GitTrack whose last edit was refused: the track it gave before has objects', async () => {
    // Prepare: web synced; then an edit the discovery refuses, so its track is held, not
    // published; then web is deleted.
    await syncedThenRefused();
    cluster.deleteGitTrack('web');

    // Act
    const next = await discover();

    // Assess: its ConfigMap collected by the policy its annotation names, then released
    assert.deepEqual(next.collected, ['web']);
    assert.deepEqual(next.errors, []);
    assert.equal(await cluster.get(configMapRef('web')), undefined, 'its ConfigMap deleted');
    assert.equal(await cluster.get(gitTrackRef('web')), undefined, 'released');
    assert.equal((await published())?.held, undefined, 'nothing held any more');
  });

  /** A GitTrack `aaa/web` of another repository: it lists before `apps/web`. */
  async function anotherWeb(): Promise<void> {
    const other = gitTrack('web', 'https://git.example.com/other.git');
    await cluster.apply(
      { ...other, metadata: { ...other.metadata, namespace: 'aaa' } },
      { fieldManager: 'kubectl', force: false },
    );
  }

  it('refuses another GitTrack the name of one refused for now, which takes it back once mended', async () => {
    // Prepare: web synced, then edited into a GitTrack the discovery refuses (its track held);
    // then another GitTrack of the name, listed before it
    await syncedThenRefused();
    await anotherWeb();

    // Act
    const whileHeld = await discover();
    const knownWhileHeld = await knownTracks(config, store);
    cluster.editGitTrack('web', {
      repository: 'https://git.example.com/web.git',
      reference: 'main',
    });
    const mended = await discover();

    // Assess: aaa/web refused, naming the holder; apps/web's track back under its name
    assert.deepEqual(whileHeld.tracks, []);
    const aaa = whileHeld.problems.find((p) => p.where === 'GitTrack aaa/web');
    assert.equal(
      aaa?.message,
      'metadata.name: track "web" already exists (GitTrack apps/web, refused for now)',
    );
    assert.deepEqual(knownWhileHeld, []);
    assert.deepEqual(mended.tracks, ['web']);
    const [web] = await knownTracks(config, store);
    assert.deepEqual(web?.origin?.gitTrack, { namespace: 'apps', name: 'web' });
    assert.ok(await cluster.get(configMapRef('web')), 'its ConfigMap stays');
    assert.deepEqual(
      mended.problems.map((p) => `${p.where}: ${p.message}`),
      ['GitTrack aaa/web: metadata.name: track "web" already exists'],
    );
  });

  it('keeps a running track its name when another GitTrack of the name appears, listed before it', async () => {
    // Prepare: web synced; then aaa/web
    await synced(['web']);
    await anotherWeb();

    // Act
    const next = await discover();

    // Assess: aaa/web refused; web still apps/web's, its ConfigMap as applied
    assert.deepEqual(next.tracks, ['web']);
    assert.deepEqual(
      next.problems.map((p) => `${p.where}: ${p.message}`),
      ['GitTrack aaa/web: metadata.name: track "web" already exists'],
    );
    const [web] = await knownTracks(config, store);
    assert.deepEqual(web?.origin?.gitTrack, { namespace: 'apps', name: 'web' });
  });

  it('releases at once a deleted GitTrack that never gave a track', async () => {
    // Prepare: a GitTrack refused (a local repository), its finalizer held, then deleted.
    await cluster.apply(gitTrack('local', '/srv/git/local'), {
      fieldManager: 'kubectl',
      force: false,
    });
    const first = await discover();
    cluster.deleteGitTrack('local');

    // Act
    const next = await discover();

    // Assess
    assert.deepEqual(first.tracks, []);
    assert.equal(first.problems.length, 1);
    assert.deepEqual(next.collected, []);
    assert.deepEqual(next.errors, []);
    assert.equal(await cluster.get(gitTrackRef('local')), undefined, 'released');
    assert.deepEqual(cluster.events, ['released GitTrack local']);
  });
});
