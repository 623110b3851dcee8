/**
 * Which tracks a schedule tick polls: not those suspended in the config or
 * in stored state, each after its interval — or its retryInterval while its
 * last sync failed.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseConfig } from '../../src/config/index.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import type { Job } from '../../src/sync/jobs.ts';
import { knownTracks, type PublishedTracks } from '../../src/sync/published-tracks.ts';
import { dueTracks, scheduleDueTracks } from '../../src/sync/schedule.ts';
import { setCondition, updateTrackState } from '../../src/sync/track-state.ts';

const NOW = new Date('2026-11-24T12:00:00Z');
const minutesAgo = (minutes: number) => new Date(NOW.getTime() - minutes * 60_000).toISOString();

describe('dueTracks', () => {
  let dir: string;
  let store: FsStore;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-schedule-'));
    store = new FsStore({ path: dir });
  });
  after(() => rm(dir, { recursive: true, force: true }));

  const tracks = parseConfig(
    `tracks:
  - {name: healthy, repository: https://h/a.git, interval: 5m, retryInterval: 1m}
  - {name: failing, repository: https://h/b.git, interval: 5m, retryInterval: 1m}
  - {name: failing-no-retry, repository: https://h/c.git, interval: 5m}
  - {name: frozen, repository: https://h/d.git, suspend: true}
  - {name: paused, repository: https://h/e.git}
`,
    'driftless.yaml',
  ).tracks;

  it('skips suspended tracks and retries failed ones after retryInterval', async () => {
    // Prepare: every track checked two minutes ago; two failed; one suspended by state.
    for (const track of tracks) {
      await updateTrackState(store, track.name, (state) => {
        state.driftCheckedAt = minutesAgo(2);
        if (track.name.startsWith('failing')) {
          setCondition(state, 'Ready', 'False', 'SyncFailed', 'boom', NOW);
        }
        if (track.name === 'paused') state.suspended = true;
      });
    }

    // Act
    const due = await dueTracks(tracks, store, NOW);
    const all = await dueTracks(tracks, store, NOW, { all: true });

    // Assess
    assert.deepEqual(
      due.map((t) => t.name),
      ['failing'],
    );
    assert.deepEqual(
      all.map((t) => t.name),
      ['healthy', 'failing', 'failing-no-retry'],
    );
  });
});

describe('tracksFrom on the schedule', () => {
  let dir: string;
  let store: FsStore;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-schedule-from-'));
    store = new FsStore({ path: dir });
  });
  after(() => rm(dir, { recursive: true, force: true }));

  const config = parseConfig(
    `clusters:
  - {name: prod, kubeconfig: /k/prod}
  - {name: staging, kubeconfig: /k/staging}
tracks:
  - {name: web, repository: https://h/web.git, cluster: prod}
tracksFrom:
  - {cluster: prod, gitTracks: true}
  - {repository: https://h/tracks.git, cluster: staging}
`,
    'driftless.yaml',
  );

  it('queues one discovery per source on every tick, each to the step that can read it', async () => {
    // Prepare
    const queued: Job[] = [];

    // Act
    await scheduleDueTracks(NOW, {
      tracks: config.tracks,
      tracksFrom: config.tracksFrom,
      state: store,
      queue: { enqueue: async (job) => void queued.push(job) },
    });

    // Assess
    const discoveries = queued.filter((job) => job.type === 'discover');
    assert.deepEqual(
      discoveries.map((job) => [job.track, job.type === 'discover' && job.runsIn]),
      [
        ['cluster-prod', 'apply'],
        [config.tracksFrom[1]!.id, 'fetch'],
      ],
    );
  });

  it('adds published tracks after the config, the config winning every name', async () => {
    // Prepare: the cluster source published "api" and a "web" that the config already has;
    // the repository source published a track for another cluster than its own.
    const base = config.tracks[0]!;
    const publish = (source: string, tracks: PublishedTracks['tracks']) =>
      store.publish(source, { source, publishedAt: NOW.toISOString(), tracks, problems: [] });
    await publish('cluster-prod', [
      {
        ...base,
        name: 'api',
        origin: { source: 'cluster-prod', gitTrack: { namespace: 'a', name: 'api' } },
      },
      {
        ...base,
        name: 'web',
        repository: 'https://evil/x.git',
        origin: { source: 'cluster-prod' },
      },
    ]);
    await publish(config.tracksFrom[1]!.id, [
      { ...base, name: 'stray', cluster: 'prod', origin: { source: config.tracksFrom[1]!.id } },
    ]);

    // Act
    const tracks = await knownTracks(config, store);
    const again = await knownTracks({ ...config, tracks }, store);

    // Assess
    assert.deepEqual(
      tracks.map((t) => t.name),
      ['web', 'api'],
    );
    assert.equal(tracks[0]?.repository, 'https://h/web.git');
    // Merging an already merged list gives the same list, not duplicates.
    assert.deepEqual(again, tracks);
  });
});
