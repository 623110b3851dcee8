/**
 * A track whose GitTrack is edited into one the discovery refuses is held by its source
 * (published-tracks.ts `held`): it keeps its name, state and objects, and nothing syncs it until
 * the GitTrack is mended. It is not removed from the config, so nothing says so or sends the user
 * to `driftless delete`: `status` (text and JSON), the dashboard, the schedule's split and the
 * metrics report it as held, with the refused document and why. The real discovery, sync, CLI,
 * dashboard routes and fs store; the in-memory cluster taught GitTracks stands in for Kubernetes.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { handleDashboard } from '../../src/dashboard/dashboard-routes.ts';
import { parseConfig } from '../../src/config/index.ts';
import type { GitTracksFromCluster } from '../../src/config/types.ts';
import { ServeMetrics } from '../../src/serve/serve-metrics.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import { discoverGitTracks } from '../../src/sync/discover-git-tracks.ts';
import { keptTracks, knownTracks } from '../../src/sync/published-tracks.ts';
import { tracksOffConfig } from '../../src/sync/schedule.ts';
import { syncTrack } from '../../src/sync/sync-track.ts';
import { cliOver, statusJsonOf } from '../harness/run-cli.ts';
import { GitTrackCluster, configMapRef, gitTrack } from './fakes/gittrack-cluster.ts';
import { dashboardDeps, getRequest, postRequest } from './fakes/dashboard-requests.ts';
import { gitAt } from './fakes/git-sources.ts';

const CONFIG_YAML = 'tracksFrom:\n  - {cluster: default, gitTracks: true}\n';
const config = parseConfig(CONFIG_YAML, 'driftless.yaml');
const source = config.tracksFrom[0] as GitTracksFromCluster;

/** Why the discovery refuses GitTrack apps/web once it names a local repository. */
const REFUSED = /local repository/;

/** The repository of GitTrack apps/web: one ConfigMap, named web. */
const git = gitAt(['web']);

describe('a track held while its GitTrack is refused', () => {
  let dir: string;
  let store: FsStore;
  const cluster = new GitTrackCluster();
  const driftless = cliOver(() => ({
    config,
    artifacts: store,
    state: store,
    published: store,
    source: async () => git,
    cluster: async () => cluster,
    close: () => undefined,
  }));

  before(async () => {
    // GitTrack apps/web published and synced, then edited into one the discovery refuses.
    dir = await mkdtemp(join(tmpdir(), 'driftless-held-track-'));
    store = new FsStore({ path: dir });
    const discover = () =>
      discoverGitTracks(source, { config, published: store, state: store, cluster });
    await cluster.apply(gitTrack('web'), { fieldManager: 'kubectl', force: false });
    await discover();
    const [track] = await knownTracks(config, store);
    const synced = await syncTrack(
      track!,
      { trigger: 'schedule' },
      { source: git, cluster, artifacts: store, state: store },
    );
    assert.equal(synced.result, 'applied', synced.error);
    cluster.editGitTrack('web', { repository: '/srv/git/web', reference: 'main' });
    const refused = await discover();
    assert.deepEqual(refused.tracks, []);
  });

  after(() => rm(dir, { recursive: true, force: true }));

  it('is held, not removed, in the split the schedule, serve and the dashboard use', async () => {
    // Act
    const off = await tracksOffConfig(config.tracks, store, () => keptTracks(config, store));

    // Assess
    assert.deepEqual(off.removed, []);
    assert.deepEqual(off.collecting, []);
    assert.deepEqual(
      off.held.map(({ name, source: from, document }) => ({ name, from, document })),
      [{ name: 'web', from: source.id, document: 'GitTrack apps/web' }],
    );
    assert.match(off.held[0]?.problem ?? '', REFUSED);
    assert.ok(await cluster.get(configMapRef('web')), 'its ConfigMap stays');
  });

  it('is shown by status as held, naming the document and why, never as one to delete', async () => {
    // Act
    const list = await driftless('status');
    const detail = await driftless('status', '--track', 'web');
    const json = (await statusJsonOf(driftless)) as Record<string, unknown>[];

    // Assess
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /web .*GitTrack apps\/web refused: kept, not synced/);
    assert.match(
      detail.stdout,
      /web: tracksFrom source "[^"]+" refuses GitTrack apps\/web for now \(.*local repository.*\); the track keeps its name, state and objects/,
    );
    for (const text of [list.stdout, detail.stdout]) {
      assert.doesNotMatch(text, /removed from|driftless delete/);
    }
    const [web] = json;
    assert.equal(web?.['track'], 'web');
    assert.equal(web?.['removedFromConfig'], true);
    const held = web?.['held'] as Record<string, string>;
    assert.deepEqual(
      { source: held.source, document: held.document },
      {
        source: source.id,
        document: 'GitTrack apps/web',
      },
    );
    assert.match(held.problem ?? '', REFUSED);
  });

  it('is listed by the dashboard as status lists it, and refuses its actions 409', async () => {
    // Prepare
    const { deps, queued } = dashboardDeps(store, {
      tracks: () => knownTracks(config, store),
      kept: () => keptTracks(config, store),
    });
    const status = (await statusJsonOf(driftless)) as Record<string, unknown>[];

    // Act
    const listed = await handleDashboard(getRequest('/api/tracks'), deps);
    const page = await handleDashboard(getRequest('/api/tracks/web'), deps);
    const sync = await handleDashboard(postRequest('/api/tracks/web/sync', {}), deps);

    // Assess
    assert.equal(listed.status, 200, listed.body);
    const entries = JSON.parse(listed.body) as Record<string, unknown>[];
    // The same entry but `busy`-free fields read at another moment: compare the held parts.
    assert.deepEqual(
      entries.map((entry) => [entry['track'], entry['held']]),
      status.map((entry) => [entry['track'], entry['held']]),
    );
    assert.equal(page.status, 200, page.body);
    assert.deepEqual(
      (JSON.parse(page.body) as Record<string, unknown>)['held'],
      entries[0]?.['held'],
    );
    assert.equal(sync.status, 409, sync.body);
    assert.match(
      (JSON.parse(sync.body) as { error: string }).error,
      /^track "web" is held: tracksFrom source "[^"]+" refuses GitTrack apps\/web for now, and nothing syncs the track until it is mended: it takes no sync$/,
    );
    assert.deepEqual(queued, []);
  });

  it("is a gauge of serve's /metrics of its own, not counted as removed from the config", () => {
    // Act
    const text = new ServeMetrics().render({
      tracks: [],
      states: new Map(),
      removed: [],
      held: ['web'],
      queueLength: 0,
      jobsRunning: 0,
    });

    // Assess
    assert.match(text, /^# TYPE driftless_track_held gauge$/m);
    assert.match(text, /^driftless_track_held\{track="web"\} 1$/m);
    assert.doesNotMatch(text, /^driftless_track_removed_from_config\{/m);
  });
});
