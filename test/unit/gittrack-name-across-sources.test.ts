/**
 * A track's name stays with its first holder across `tracksFrom` sources (discover-git-tracks.ts):
 * a GitTrack whose name another source publishes, live or being collected, is refused — never
 * published, its `.status` Ready False saying who holds the name — even when its source comes
 * first in `tracksFrom` and knownTracks would give it the name: it would sync in the holder's
 * state, and its first sync prune the holder's objects. Once the holder's GitTrack is deleted and
 * collected, the name is free. A repository source's GitTrack documents (discover-tracks.ts) are
 * held to the same rule. Two clusters, each with a GitTrack source, or a repository source and a
 * cluster's; the real fs store and sync use-cases; a small Git source and the in-memory cluster,
 * taught a GitTrack's finalizer.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { KubeObject } from '../../src/cluster/kube-object.ts';
import { parseConfig } from '../../src/config/index.ts';
import { GIT_TRACK_API_VERSION } from '../../src/config/git-track.ts';
import type { GitTracksFromCluster, TracksFromRepository } from '../../src/config/types.ts';
import type { GitSource } from '../../src/source/ports.ts';
import { objectKey } from '../../src/cluster/kube-object.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import { COLLECTION_RETRY_MAX_MS, discoverGitTracks } from '../../src/sync/discover-git-tracks.ts';
import { discoverTrackDocuments, type DiscoverResult } from '../../src/sync/discover-tracks.ts';
import { knownTracks, type PublishedTracks } from '../../src/sync/published-tracks.ts';
import { syncTrack } from '../../src/sync/sync-track.ts';
import { GitTrackCluster, configMapRef, gitTrack, gitTrackRef } from './fakes/gittrack-cluster.ts';

const REVISION = '1'.repeat(40);
const START = Date.parse('2026-01-01T12:00:00Z');
/** The repositories the two GitTracks named web deploy: two different apps. */
const FIRST_APP = 'https://git.example.com/first-web.git';
const SECOND_APP = 'https://git.example.com/second-web.git';

/** A Git source whose head is REVISION: one ConfigMap named after the track, its value the repository's URL. */
const git: GitSource = {
  resolve: async () => ({ revision: REVISION, ref: 'refs/heads/main' }),
  readFiles: async (track) => [
    {
      path: 'settings.yaml',
      content: new TextEncoder().encode(
        `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${track.name}\ndata:\n  value: "${track.repository}"\n`,
      ),
    },
  ],
};

const config = parseConfig(
  [
    'clusters:',
    '  - {name: first, kubeconfig: /k/first}',
    '  - {name: second, kubeconfig: /k/second}',
    'tracksFrom:',
    '  - {cluster: first, gitTracks: true}',
    '  - {cluster: second, gitTracks: true}',
    '',
  ].join('\n'),
  'driftless.yaml',
);
/** S1: first in tracksFrom, its GitTrack web comes last. */
const firstSource = config.tracksFrom[0] as GitTracksFromCluster;
/** S2: later in tracksFrom, its GitTrack web holds the name first. */
const secondSource = config.tracksFrom[1] as GitTracksFromCluster;

/** The Ready condition of a GitTrack's `.status`. */
/** A GitTrack in namespace `team`, as a repository source's file holds one. */
function gitTrackDocument(name: string, repository: string): string {
  return `apiVersion: ${GIT_TRACK_API_VERSION}\nkind: GitTrack\nmetadata: {name: ${name}, namespace: team}\nspec: {repository: "${repository}", reference: main}\n`;
}

function ready(object: KubeObject | undefined): Record<string, unknown> | undefined {
  const status = object?.['status'] as { conditions?: Record<string, unknown>[] } | undefined;
  return status?.conditions?.find((c) => c['type'] === 'Ready');
}

describe('a track name across tracksFrom sources', () => {
  let dir: string;
  let store: FsStore;
  let firstCluster: GitTrackCluster;
  let secondCluster: GitTrackCluster;
  let clock: number;
  const now = (): Date => new Date(clock);

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-gittrack-names-'));
  });

  beforeEach(async () => {
    store = new FsStore({ path: await mkdtemp(join(dir, 'store-')) });
    firstCluster = new GitTrackCluster();
    secondCluster = new GitTrackCluster();
    clock = START;
  });

  after(() => rm(dir, { recursive: true, force: true }));

  const deps = () => ({ config, published: store, state: store, now });
  const discoverFirst = (): Promise<DiscoverResult> =>
    discoverGitTracks(firstSource, { ...deps(), cluster: firstCluster });
  const discoverSecond = (): Promise<DiscoverResult> =>
    discoverGitTracks(secondSource, { ...deps(), cluster: secondCluster });

  async function knownWeb() {
    return (await knownTracks(config, store)).find((t) => t.name === 'web');
  }

  /** S2's GitTrack web discovered, and its track synced: its state lists S2's ConfigMap web. */
  async function secondHoldsWeb(): Promise<void> {
    await secondCluster.apply(gitTrack('web', SECOND_APP), {
      fieldManager: 'kubectl',
      force: false,
    });
    assert.deepEqual((await discoverSecond()).tracks, ['web']);
    const web = await knownWeb();
    assert.equal(web?.origin?.source, secondSource.id);
    const synced = await syncTrack(
      web,
      { trigger: 'schedule' },
      { source: git, cluster: secondCluster, artifacts: store, state: store, now },
    );
    assert.equal(synced.result, 'applied', synced.error);
    assert.ok(await secondCluster.get(configMapRef('web')), "S2's ConfigMap applied");
  }

  it('refuses a GitTrack of an earlier source whose name a later source holds: the holder keeps it', async () => {
    // Prepare: S2's web syncs; then a GitTrack web is created under S1.
    await secondHoldsWeb();
    await firstCluster.apply(gitTrack('web', FIRST_APP), { fieldManager: 'kubectl', force: false });

    // Act
    const refused = await discoverFirst();

    // Assess: refused, saying who holds the name; S2's web keeps it, with its objects and state.
    const message = `metadata.name: track "web" already exists (tracksFrom source "${secondSource.id}", GitTrack apps/web)`;
    assert.deepEqual(refused.tracks, []);
    assert.deepEqual(refused.errors, []);
    assert.deepEqual(
      refused.problems.map((p) => `${p.where}: ${p.message}`),
      [`GitTrack apps/web: ${message}`],
    );
    const list = await store.readPublished<PublishedTracks>(firstSource.id);
    assert.deepEqual(list?.tracks, [], 'not published');
    assert.deepEqual(
      list?.problems.map((p) => p.message),
      [message],
    );
    const web = await knownWeb();
    assert.equal(web?.origin?.source, secondSource.id, 'the holder keeps the name');
    assert.equal(web?.repository, SECOND_APP);
    const status = ready(await firstCluster.get(gitTrackRef('web')));
    assert.equal(status?.['status'], 'False');
    assert.equal(status?.['reason'], 'InvalidGitTrack');
    assert.equal(status?.['message'], message);
    assert.ok(await store.read('web'), "S2's state stays");
    const configMap = await secondCluster.get(configMapRef('web'));
    assert.deepEqual(configMap?.['data'], { value: SECOND_APP }, "S2's ConfigMap stays");
  });

  it("keeps the name with its holder while the holder's GitTrack is invalid for a while", async () => {
    // Prepare: S2 holds web; S1's GitTrack web is refused. Then S2's GitTrack gets a bad edit.
    await secondHoldsWeb();
    await firstCluster.apply(gitTrack('web', FIRST_APP), { fieldManager: 'kubectl', force: false });
    assert.deepEqual((await discoverFirst()).tracks, []);
    const editSpec = (spec: Record<string, unknown>): void => {
      // `kubectl edit gittrack web`: the spec changes, the finalizer Driftless holds stays.
      const live = secondCluster.objects.get(objectKey(gitTrackRef('web')))!;
      secondCluster.objects.set(objectKey(gitTrackRef('web')), { ...live, spec });
    };
    editSpec({ repository: SECOND_APP, reference: 42 });
    assert.deepEqual((await discoverSecond()).tracks, [], "S2's GitTrack is refused now");

    // Act: S1 discovers while S2's GitTrack is invalid, then S2's is mended.
    const meanwhile = await discoverFirst();
    const whileBroken = await knownWeb();
    editSpec({ repository: SECOND_APP, reference: 'main' });
    const mended = await discoverSecond();

    // Assess: S1 never got the name (nothing synced web in S2's state meanwhile); S2 has it back.
    assert.deepEqual(meanwhile.tracks, []);
    assert.match(
      meanwhile.problems[0]?.message ?? '',
      /track "web" already exists \(tracksFrom source "cluster-second"/,
    );
    assert.equal(whileBroken, undefined, 'no track syncs web while its holder is refused');
    assert.deepEqual(mended.tracks, ['web']);
    assert.equal((await knownWeb())?.origin?.source, secondSource.id);
    assert.deepEqual((await discoverFirst()).tracks, []);
  });

  it("publishes the GitTrack once the holder's GitTrack is deleted and its objects collected", async () => {
    // Prepare: S2's web syncs; S1 gets a GitTrack web (refused); S2's GitTrack is deleted and
    // its collection refused once.
    await secondHoldsWeb();
    await firstCluster.apply(gitTrack('web', FIRST_APP), { fieldManager: 'kubectl', force: false });
    assert.deepEqual((await discoverFirst()).tracks, []);
    secondCluster.deleteGitTrack('web');
    secondCluster.refuseDeletes = true;
    assert.equal((await discoverSecond()).errors.length, 1, 'the collection failed');

    // Act
    const whileCollecting = await discoverFirst();
    secondCluster.refuseDeletes = false;
    clock += COLLECTION_RETRY_MAX_MS;
    const collected = await discoverSecond();
    const published = await discoverFirst();

    // Assess: refused while S2's web is collected; published once the name is free.
    assert.deepEqual(whileCollecting.tracks, []);
    assert.deepEqual(
      whileCollecting.problems.map((p) => p.message),
      [
        `metadata.name: track "web" already exists (tracksFrom source "${secondSource.id}", GitTrack apps/web, its objects being collected)`,
      ],
    );
    assert.deepEqual(collected.collected, ['web']);
    assert.equal(await secondCluster.get(configMapRef('web')), undefined, "S2's object collected");
    assert.deepEqual(published.tracks, ['web']);
    assert.deepEqual(published.added, ['web']);
    assert.deepEqual(published.problems, []);
    const web = await knownWeb();
    assert.equal(web?.origin?.source, firstSource.id, 'the name is S1s now');
    assert.equal(web?.repository, FIRST_APP);
    assert.notEqual(
      ready(await firstCluster.get(gitTrackRef('web')))?.['reason'],
      'InvalidGitTrack',
    );
  });

  it('keeps a track its GitTrack already published while another source publishes the name too: knownTracks decides', async () => {
    // Prepare: both sources publish web (lists from before the rule): S1's, first in
    // tracksFrom, is the one known; S2's waits.
    await firstCluster.apply(gitTrack('web', FIRST_APP), { fieldManager: 'kubectl', force: false });
    assert.deepEqual((await discoverFirst()).tracks, ['web']);
    await secondCluster.apply(gitTrack('web', SECOND_APP), {
      fieldManager: 'kubectl',
      force: false,
    });
    const firstList = await store.readPublished<PublishedTracks>(firstSource.id);
    await store.publish(firstSource.id, { ...firstList, tracks: [] });
    assert.deepEqual(
      (await discoverSecond()).tracks,
      ['web'],
      'S2 publishes web while S1 does not',
    );
    await store.publish(firstSource.id, firstList);

    // Act
    const first = await discoverFirst();
    const second = await discoverSecond();

    // Assess: neither running publication is dropped; the name goes by tracksFrom order.
    assert.deepEqual(first.tracks, ['web']);
    assert.deepEqual(first.problems, []);
    assert.deepEqual(second.tracks, ['web']);
    assert.equal((await knownWeb())?.origin?.source, firstSource.id);
  });
});

describe('a track name a repository source offers while another source holds it', () => {
  /** R: a repository source, first in tracksFrom; S2: a cluster's GitTrack source after it. */
  const mixed = parseConfig(
    [
      'clusters:',
      '  - {name: second, kubeconfig: /k/second}',
      'tracksFrom:',
      '  - {repository: https://git.example.com/tracks.git}',
      '  - {cluster: second, gitTracks: true}',
      '',
    ].join('\n'),
    'driftless.yaml',
  );
  const repositorySource = mixed.tracksFrom[0] as TracksFromRepository;
  const clusterSource = mixed.tracksFrom[1] as GitTracksFromCluster;
  /** Where the repository keeps its track documents (a test renames it). */
  let trackFile = 'tracks/web.yaml';
  /** A second file of the repository, listed before the first, when a test adds it. */
  let addedFile: { path: string; content: Uint8Array } | undefined;
  /** The repository's file of track documents: GitTracks api (document 1) and web (document 2). */
  const documents: GitSource = {
    ...git,
    readFiles: async (track) =>
      track.name === repositorySource.id
        ? [
            ...(addedFile === undefined ? [] : [addedFile]),
            {
              path: trackFile,
              content: new TextEncoder().encode(
                [
                  `apiVersion: ${GIT_TRACK_API_VERSION}`,
                  'kind: GitTrack',
                  'metadata: {name: api, namespace: apps}',
                  'spec: {repository: https://git.example.com/api.git, reference: main}',
                  '---',
                  `apiVersion: ${GIT_TRACK_API_VERSION}`,
                  'kind: GitTrack',
                  'metadata: {name: web, namespace: apps}',
                  `spec: {repository: "${FIRST_APP}", reference: main}`,
                  '',
                ].join('\n'),
              ),
            },
          ]
        : git.readFiles(track, REVISION, 'manifests'),
  };

  let dir: string;
  let store: FsStore;
  let cluster: GitTrackCluster;
  const now = (): Date => new Date(START);

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-gittrack-names-repository-'));
  });

  beforeEach(async () => {
    store = new FsStore({ path: await mkdtemp(join(dir, 'store-')) });
    cluster = new GitTrackCluster();
    trackFile = 'tracks/web.yaml';
    addedFile = undefined;
  });

  after(() => rm(dir, { recursive: true, force: true }));

  const deps = () => ({ config: mixed, published: store, state: store, now });
  const discoverRepository = (): Promise<DiscoverResult> =>
    discoverTrackDocuments(repositorySource, { ...deps(), source: documents });

  async function knownWeb() {
    return (await knownTracks(mixed, store)).find((t) => t.name === 'web');
  }

  /** The cluster's GitTrack web discovered, and its track synced: its state lists its ConfigMap. */
  async function clusterHoldsWeb(): Promise<void> {
    await cluster.apply(gitTrack('web', SECOND_APP), { fieldManager: 'kubectl', force: false });
    assert.deepEqual((await discoverGitTracks(clusterSource, { ...deps(), cluster })).tracks, [
      'web',
    ]);
    const web = await knownWeb();
    assert.equal(web?.origin?.source, clusterSource.id);
    const synced = await syncTrack(
      web,
      { trigger: 'schedule' },
      { source: git, cluster, artifacts: store, state: store, now },
    );
    assert.equal(synced.result, 'applied', synced.error);
  }

  it('refuses a document of an earlier repository source whose name a cluster source holds: the holder keeps it', async () => {
    // Prepare: the cluster's web syncs; then the repository gets a GitTrack document web.
    await clusterHoldsWeb();

    // Act
    const refused = await discoverRepository();

    // Assess: web refused, naming its document and the holder; api published; the cluster's web
    // keeps the name, its state and its ConfigMap.
    const message = `metadata.name: track "web" already exists (tracksFrom source "${clusterSource.id}", GitTrack apps/web)`;
    assert.deepEqual(refused.tracks, ['api']);
    assert.deepEqual(
      refused.problems.map((p) => `${p.where}: ${p.message}`),
      [`tracks/web.yaml (document 2): ${message}`],
    );
    assert.deepEqual(refused.problems[0]?.origin, {
      source: repositorySource.id,
      file: 'tracks/web.yaml',
    });
    const list = await store.readPublished<PublishedTracks>(repositorySource.id);
    assert.deepEqual(
      list?.tracks.map((t) => t.name),
      ['api'],
      'web not published',
    );
    assert.deepEqual(
      list?.problems.map((p) => p.message),
      [message],
    );
    const web = await knownWeb();
    assert.equal(web?.origin?.source, clusterSource.id, 'the holder keeps the name');
    assert.equal(web?.repository, SECOND_APP);
    assert.ok(await store.read('web'), "the holder's state stays");
    const configMap = await cluster.get(configMapRef('web'));
    assert.deepEqual(configMap?.['data'], { value: SECOND_APP }, "the holder's ConfigMap stays");
  });

  it('keeps a track its file already published while a cluster source publishes the name too', async () => {
    // Prepare: both sources publish web (the repository's discovery did not see the cluster's
    // list: discoveries at the same time); the repository source, first, has the name.
    await clusterHoldsWeb();
    const clusterList = await store.readPublished<PublishedTracks>(clusterSource.id);
    assert.ok(clusterList);
    await store.publish(clusterSource.id, { ...clusterList, tracks: [] });
    assert.deepEqual((await discoverRepository()).tracks, ['api', 'web']);
    await store.publish(clusterSource.id, clusterList);

    // Act
    const again = await discoverRepository();

    // Assess: the running track is not dropped; the name goes by tracksFrom order.
    assert.deepEqual(again.tracks, ['api', 'web']);
    assert.deepEqual(again.problems, []);
    assert.equal((await knownWeb())?.origin?.source, repositorySource.id);

    // And a name the source published stays its own when another of its files gives it.
    trackFile = 'apps/web.yaml';
    const moved = await discoverRepository();
    assert.deepEqual(moved.tracks, ['api', 'web'], JSON.stringify(moved.problems));
    assert.equal((await knownWeb())?.origin?.file, 'apps/web.yaml');
  });

  it('keeps a running track its name when a file added since offers it too, listed first', async () => {
    // Prepare: the repository's tracks/web.yaml gives web; then a.yaml, listed first, gives web too
    assert.deepEqual((await discoverRepository()).tracks, ['api', 'web']);
    addedFile = {
      path: 'a.yaml',
      content: new TextEncoder().encode(gitTrackDocument('web', SECOND_APP)),
    };

    // Act
    const next = await discoverRepository();

    // Assess: a.yaml refused; web still tracks/web.yaml's
    assert.deepEqual(next.tracks, ['api', 'web']);
    assert.deepEqual(
      next.problems.map((p) => p.where),
      ['a.yaml (document 1)'],
    );
    assert.match(next.problems[0]?.message ?? '', /track "web" already exists/);
    assert.equal((await knownWeb())?.origin?.file, 'tracks/web.yaml');
  });

  it('keeps a running track its name when a file that gives another track offers it too', async () => {
    // Prepare: a.yaml gives other, tracks/web.yaml gives api and web; then a.yaml gains a web
    addedFile = {
      path: 'a.yaml',
      content: new TextEncoder().encode(gitTrackDocument('other', SECOND_APP)),
    };
    assert.deepEqual((await discoverRepository()).tracks, ['other', 'api', 'web']);
    addedFile = {
      path: 'a.yaml',
      content: new TextEncoder().encode(
        `${gitTrackDocument('other', SECOND_APP)}---\n${gitTrackDocument('web', SECOND_APP)}`,
      ),
    };

    // Act
    const next = await discoverRepository();

    // Assess: a.yaml's web refused; web still tracks/web.yaml's
    assert.deepEqual(next.tracks, ['other', 'api', 'web']);
    assert.deepEqual(
      next.problems.map((p) => p.where),
      ['a.yaml (document 2)'],
    );
    assert.equal((await knownWeb())?.origin?.file, 'tracks/web.yaml');
  });

  it('refuses a document whose name is no string, even one an alias makes circular, and goes on', async () => {
    // Prepare: web published; then a.yaml, listed first, with a GitTrack whose name is its own
    // metadata through an alias
    assert.deepEqual((await discoverRepository()).tracks, ['api', 'web']);
    addedFile = {
      path: 'a.yaml',
      content: new TextEncoder().encode(
        `apiVersion: ${GIT_TRACK_API_VERSION}\nkind: GitTrack\nmetadata: &m {name: *m, namespace: team}\nspec: {repository: "${SECOND_APP}", reference: main}\n`,
      ),
    };

    // Act
    const next = await discoverRepository();

    // Assess: the document refused, the others published as before
    assert.deepEqual(next.tracks, ['api', 'web']);
    assert.deepEqual(
      next.problems.map((p) => p.where),
      ['a.yaml (document 1)'],
    );
    assert.equal((await knownWeb())?.origin?.file, 'tracks/web.yaml');
  });
});
