/**
 * A store as a GitTrack source's discovery leaves it while the collection of a deleted GitTrack's
 * track keeps failing: the track `web` (GitTrack apps/web) published under `collecting`, off the
 * source's tracks, with its state; and `retired`, a track taken out of the config that still has
 * state. The config's own track `infra` has none.
 */
import { mkdtempSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { parseConfig } from '../../../src/config/parse-config.ts';
import type { Config } from '../../../src/config/types.ts';
import { FsStore } from '../../../src/store/fs-store.ts';
import type { PublishedTrackStore, StateStore } from '../../../src/store/ports.ts';
import type { PublishedTracks } from '../../../src/sync/published-tracks.ts';
import { updateTrackState } from '../../../src/sync/track-state.ts';

/** driftless.yaml of the fixture, less its `store:`. */
export const COLLECTING_CONFIG_YAML = [
  'tracksFrom:',
  '  - {cluster: default, gitTracks: true}',
  'tracks:',
  '  - {name: infra, repository: https://git.example.com/infra.git, namespace: apps}',
  '',
].join('\n');

export const COLLECTING_CONFIG: Config = parseConfig(COLLECTING_CONFIG_YAML, 'driftless.yaml');

/** The GitTrack source's id. */
export const SOURCE_ID = COLLECTING_CONFIG.tracksFrom[0]!.id;

/** When a discovery tries the failed collection of `web` again. */
export const NEXT_TRY = '2026-01-01T12:04:00.000Z';

/** Publishes `web` under `collecting` (its collection failed twice) and gives `web` and `retired` state. */
export async function storeCollectingWeb(store: {
  readonly published: PublishedTrackStore;
  readonly state: StateStore;
}): Promise<void> {
  const web = {
    ...COLLECTING_CONFIG.tracks[0]!,
    name: 'web',
    origin: { source: SOURCE_ID, gitTrack: { namespace: 'apps', name: 'web' } },
  };
  const list: PublishedTracks = {
    source: SOURCE_ID,
    publishedAt: '2026-01-01T12:00:00.000Z',
    tracks: [],
    problems: [],
    collecting: [web],
    collectionRetries: [{ track: 'web', failures: 2, notBefore: NEXT_TRY }],
  };
  await store.published.publish(SOURCE_ID, list);
  for (const track of ['web', 'retired']) {
    await updateTrackState(store.state, track, (state) => {
      state.inventory = [{ subject: `ConfigMap/apps/${track}`, apiVersion: 'v1' }];
    });
  }
}

/**
 * For the tests of the calling `describe`: the fixture's fs store, in `store/` of a folder of its
 * own (named `prefix`…), filled by {@link storeCollectingWeb} before them and removed after them.
 */
export function collectingFsStore(prefix: string): {
  readonly dir: string;
  readonly store: FsStore;
} {
  // Made now, not in a hook, so the caller holds the store from the start.
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const store = new FsStore({ path: join(dir, 'store') });
  before(() => storeCollectingWeb({ published: store, state: store }));
  after(() => rm(dir, { recursive: true, force: true }));
  return { dir, store };
}

/** Writes the fixture's driftless.yaml over {@link collectingFsStore}'s `dir`; returns its path. */
export async function writeCollectingConfig(dir: string): Promise<string> {
  const file = join(dir, 'driftless.yaml');
  await writeFile(
    file,
    `store: {type: fs, path: ${JSON.stringify(join(dir, 'store'))}}\n${COLLECTING_CONFIG_YAML}`,
  );
  return file;
}
