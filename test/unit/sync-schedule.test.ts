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
import { dueTracks } from '../../src/sync/schedule.ts';
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
