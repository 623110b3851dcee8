/**
 * What keeps a deleted GitTrack's collection (discover-git-tracks.ts) from doing harm: a track
 * of an earlier `tracksFrom` source that holds the name of the track being collected is never
 * collected in its place, a later source's track of that name waits until the collection is done, and a collection that keeps failing is tried again less and less often
 * (from a minute to an hour) rather than sending its deletes to the API server at every
 * discovery. The real fs store and sync use-cases; a small Git source and the in-memory cluster,
 * taught a GitTrack's finalizer, stand in for Git and Kubernetes; a clock of the test's own.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { GIT_TRACK_API_VERSION } from '../../src/config/git-track.ts';
import { parseConfig } from '../../src/config/index.ts';
import type { GitTracksFromCluster, TracksFromRepository } from '../../src/config/types.ts';
import type { GitSource } from '../../src/source/ports.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import { discoverGitTracks } from '../../src/sync/discover-git-tracks.ts';
import { discoverTrackDocuments, type DiscoverResult } from '../../src/sync/discover-tracks.ts';
import { deleteTrack } from '../../src/sync/lifecycle.ts';
import { knownTracks, type PublishedTracks } from '../../src/sync/published-tracks.ts';
import { syncTrack } from '../../src/sync/sync-track.ts';
import { GitTrackCluster, configMapRef, gitTrack, gitTrackRef } from './fakes/gittrack-cluster.ts';

const REVISION = '1'.repeat(40);
/** The head of the repository the GitTrack document in Git deploys. */
const REVISION_IN_GIT = '2'.repeat(40);
const START = Date.parse('2026-01-01T12:00:00Z');
const MINUTE = 60_000;

const config = parseConfig(
  [
    'tracksFrom:',
    '  - {cluster: default, gitTracks: true}',
    '  - {repository: https://git.example.com/tracks.git}',
    '',
  ].join('\n'),
  'driftless.yaml',
);
const clusterSource = config.tracksFrom[0] as GitTracksFromCluster;
const repositorySource = config.tracksFrom[1] as TracksFromRepository;

/**
 * A Git source whose head is REVISION (REVISION_IN_GIT for web-in-git.git): the repository of track documents holds a GitTrack
 * document `apps/web` (of another repository than the GitTrack in the cluster); every other
 * repository one ConfigMap named after the track, its value the repository's URL.
 */
const git: GitSource = {
  resolve: async (track) => ({
    revision: track.repository.endsWith('/web-in-git.git') ? REVISION_IN_GIT : REVISION,
    ref: 'refs/heads/main',
  }),
  readFiles: async (track) => [
    track.name === repositorySource.id
      ? {
          path: 'web.yaml',
          content: new TextEncoder().encode(
            `apiVersion: ${GIT_TRACK_API_VERSION}\nkind: GitTrack\nmetadata: {name: web, namespace: apps}\nspec: {repository: https://git.example.com/web-in-git.git, reference: main}\n`,
          ),
        }
      : {
          path: 'settings.yaml',
          content: new TextEncoder().encode(
            `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${track.name}\ndata:\n  value: "${track.repository}"\n`,
          ),
        },
  ],
};

describe("a deleted GitTrack's collection, guarded", () => {
  let dir: string;
  let store: FsStore;
  let cluster: GitTrackCluster;
  /** The test's clock, which the discoveries read. */
  let clock: number;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-gittrack-guards-'));
  });

  beforeEach(async () => {
    store = new FsStore({ path: await mkdtemp(join(dir, 'store-')) });
    cluster = new GitTrackCluster();
    clock = START;
  });

  after(() => rm(dir, { recursive: true, force: true }));

  const now = (): Date => new Date(clock);

  const discover = (): Promise<DiscoverResult> =>
    discoverGitTracks(clusterSource, {
      config,
      published: store,
      state: store,
      cluster,
      now,
    });

  const published = (): Promise<PublishedTracks | undefined> =>
    store.readPublished<PublishedTracks>(clusterSource.id);

  async function syncKnown(name: string): Promise<void> {
    const track = (await knownTracks(config, store)).find((t) => t.name === name);
    assert.ok(track, `${name} is known`);
    const synced = await syncTrack(
      track,
      { trigger: 'schedule' },
      { source: git, cluster, artifacts: store, state: store, now },
    );
    assert.equal(synced.result, 'applied', synced.error);
  }

  /**
   * Runs the repository source's discovery as if the cluster source's list `id` were not published
   * yet (a discovery at the same time, or lists from before a name stayed with its first
   * holder): both sources then publish web, the case these guards are for. A source never takes
   * a name another source publishes (published-tracks.ts leaveNamesOfOtherSources).
   */
  async function withClusterListHidden(
    id: string,
    discovery: () => Promise<DiscoverResult>,
  ): Promise<DiscoverResult> {
    const list = await store.readPublished<PublishedTracks>(id);
    assert.ok(list, 'the cluster source published');
    await store.publish(id, { ...list, tracks: [], collecting: [] });
    try {
      return await discovery();
    } finally {
      await store.publish(id, list);
    }
  }

  /**
   * The repository source first in `tracksFrom`. The cluster's GitTrack web is published, then
   * the repository source publishes a web of its own, its discovery not seeing the cluster's list
   * (a source whose name another holds is refused): its web is known and synced, the GitTrack's
   * never known.
   */
  async function repositoryFirstWebSynced() {
    const repositoryFirst = parseConfig(
      [
        'tracksFrom:',
        '  - {repository: https://git.example.com/tracks.git}',
        '  - {cluster: default, gitTracks: true}',
        '',
      ].join('\n'),
      'driftless.yaml',
    );
    const first = repositoryFirst.tracksFrom[0] as TracksFromRepository;
    const second = repositoryFirst.tracksFrom[1] as GitTracksFromCluster;
    const deps = { config: repositoryFirst, published: store, state: store, now };
    await cluster.apply(gitTrack('web'), { fieldManager: 'kubectl', force: false });
    assert.deepEqual((await discoverGitTracks(second, { ...deps, cluster })).tracks, ['web']);
    const fromGit = await withClusterListHidden(second.id, () =>
      discoverTrackDocuments(first, { ...deps, source: git }),
    );
    assert.deepEqual(fromGit.tracks, ['web']);
    const known = (await knownTracks(repositoryFirst, store)).find((t) => t.name === 'web');
    assert.ok(known);
    assert.equal(known.origin?.source, first.id);
    const synced = await syncTrack(
      known,
      { trigger: 'schedule' },
      { source: git, cluster, artifacts: store, state: store, now },
    );
    assert.equal(synced.result, 'applied', synced.error);
    return { repositoryFirst, first, second, deps, known };
  }

  /** GitTrack apps/web discovered, its track synced, then deleted; its collection refused once. */
  async function collectionFailedOnce(): Promise<void> {
    await cluster.apply(gitTrack('web'), { fieldManager: 'kubectl', force: false });
    assert.deepEqual((await discover()).tracks, ['web']);
    await syncKnown('web');
    cluster.deleteGitTrack('web');
    cluster.refuseDeletes = true;
    const failed = await discover();
    assert.equal(failed.errors.length, 1, 'the collection failed');
    assert.equal(cluster.refusedDeletes, 1);
  }

  it("collects a track whose name a later source's track wants, which waits unknown until the collection is done", async () => {
    // Prepare: web's collection failed; then the repository source (after the cluster's in
    // tracksFrom) published a web of its own, its discovery not seeing the cluster's list.
    await collectionFailedOnce();
    const fromGit = await withClusterListHidden(clusterSource.id, () =>
      discoverTrackDocuments(repositorySource, {
        config,
        published: store,
        state: store,
        source: git,
        now,
      }),
    );
    assert.deepEqual(fromGit.tracks, ['web'], 'the later source publishes its web');
    const whileCollecting = (await knownTracks(config, store)).map((t) => t.name);
    cluster.refuseDeletes = false;
    clock += 2 * 60 * MINUTE;

    // Act
    const next = await discover();

    // Assess: the later web never synced in the deleted track's state; the collection ran under
    // the GitTrack's policy, then the name went to the later source's web, with no state.
    assert.deepEqual(whileCollecting, [], 'the name stays taken while web is collected');
    assert.deepEqual(next.collected, ['web']);
    assert.deepEqual(next.errors, []);
    assert.equal(await cluster.get(configMapRef('web')), undefined, "the deleted track's object");
    assert.equal(await store.read('web'), undefined, 'its state removed');
    assert.equal(await cluster.get(gitTrackRef('web')), undefined, 'the GitTrack released');
    assert.equal((await published())?.collecting, undefined, 'nothing left to collect');
    const web = (await knownTracks(config, store)).find((t) => t.name === 'web');
    assert.equal(web?.origin?.source, repositorySource.id, 'the later source has the name now');
  });

  it("does not collect a track whose name an earlier source's track holds: its objects and state are that track's", async () => {
    // Prepare: the repository source first, its web known and synced; the GitTrack deleted.
    const { repositoryFirst, first, second, deps } = await repositoryFirstWebSynced();
    cluster.deleteGitTrack('web');

    // Act
    const next = await discoverGitTracks(second, { ...deps, cluster });

    // Assess: released without collecting; the earlier source's track keeps its object and state.
    assert.deepEqual(next.collected, []);
    assert.deepEqual(next.errors, []);
    assert.deepEqual(cluster.events, ['released GitTrack web'], 'nothing deleted');
    const configMap = await cluster.get(configMapRef('web'));
    assert.deepEqual(
      configMap?.['data'],
      { value: 'https://git.example.com/web-in-git.git' },
      "the earlier track's ConfigMap stays",
    );
    assert.ok(await store.read('web'), 'its state stays');
    assert.equal(await cluster.get(gitTrackRef('web')), undefined, 'the GitTrack released');
    const web = (await knownTracks(repositoryFirst, store)).find((t) => t.name === 'web');
    assert.equal(web?.origin?.source, first.id);
  });

  it('does not collect a track whose name an earlier source holds while its document is refused', async () => {
    // Prepare: as above, the repository source first, its web known and synced; then its file is
    // refused for a while (web held, off its tracks), and the GitTrack web is deleted.
    const { first, second, deps, known } = await repositoryFirstWebSynced();
    const list = await store.readPublished<PublishedTracks>(first.id);
    await store.publish(first.id, {
      ...list!,
      tracks: [],
      problems: [{ where: 'web.yaml', origin: known.origin!, message: 'not valid YAML' }],
      held: [known],
    });
    cluster.deleteGitTrack('web');

    // Act
    const next = await discoverGitTracks(second, { ...deps, cluster });

    // Assess: released without collecting; the held track keeps its object and state.
    assert.deepEqual(next.collected, []);
    assert.deepEqual(next.errors, []);
    assert.deepEqual(cluster.events, ['released GitTrack web'], 'nothing deleted');
    assert.ok(await cluster.get(configMapRef('web')), "the held track's ConfigMap stays");
    assert.ok(await store.read('web'), 'its state stays');
    assert.equal(await cluster.get(gitTrackRef('web')), undefined, 'the GitTrack released');
  });

  it('tries a collection that keeps failing again after 1, 2, 4 ... minutes, an hour at most, then collects at the next try', async () => {
    // Prepare: web's collection refused at minute 0.
    await collectionFailedOnce();
    const tried: number[] = [0];
    const waiting: DiscoverResult[] = [];

    // Act: a discovery each minute for more than two hours; the odd minutes' start 10 s early.
    for (let minute = 1; minute <= 130; minute += 1) {
      clock = START + minute * MINUTE - (minute % 2) * 10_000;
      const before = cluster.refusedDeletes;
      const result = await discover();
      if (cluster.refusedDeletes > before) tried.push(minute);
      else waiting.push(result);
    }
    const history = (await store.listHistory('web')).filter((e) => e['action'] === 'delete');
    cluster.refuseDeletes = false;
    clock = START + 131 * MINUTE;
    const stillWaiting = await discover();
    const held = await cluster.get(gitTrackRef('web'));
    clock = START + 183 * MINUTE;
    const next = await discover();

    // Assess: the waits doubled from a minute to an hour, deletes sent at those tries alone.
    assert.deepEqual(tried, [0, 1, 3, 7, 15, 31, 63, 123]);
    assert.equal(history.length, 1, 'the same failure recorded once');
    assert.equal(stillWaiting.collected.length, 0, 'not tried before its time');
    assert.ok(held, 'held while waiting');
    assert.match(
      waiting.at(-1)!.errors.join('\n'),
      /^GitTrack apps\/web: the collection failed 8 times in a row; tried again from 2026-01-01T15:02:50\.000Z$/m,
    );
    assert.deepEqual(next.collected, ['web'], 'tried again after the wait, and collected');
    assert.deepEqual(next.errors, []);
    assert.equal(await cluster.get(configMapRef('web')), undefined);
    assert.equal(await cluster.get(gitTrackRef('web')), undefined, 'the GitTrack released');
    assert.equal(await store.read('web'), undefined, 'its state removed');
  });

  it('releases at the next discovery, without waiting, a GitTrack whose track was deleted by hand meanwhile', async () => {
    // Prepare: web's collection refused; then `driftless delete --track web` collected it.
    await collectionFailedOnce();
    cluster.refuseDeletes = false;
    const web = (await published())?.collecting?.[0];
    assert.ok(web);
    assert.equal(
      (await deleteTrack(web, 'Delete', { cluster, state: store, now })).result,
      'deleted',
    );
    clock += 10_000;

    // Act
    const next = await discover();

    // Assess
    assert.deepEqual(next.errors, []);
    assert.equal(await cluster.get(gitTrackRef('web')), undefined, 'the GitTrack released');
  });
});
