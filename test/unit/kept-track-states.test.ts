/**
 * A warm drift function keeps the states it read: each tick lists the
 * versions and reads again only the documents that changed, and still sees
 * every change (a check written, a suspension) that a full read would.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseConfig } from '../../src/config/index.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import type { StateStore } from '../../src/store/ports.ts';
import type { Job } from '../../src/sync/jobs.ts';
import { KeptTrackStates } from '../../src/sync/kept-track-states.ts';
import { scheduleDueTracks } from '../../src/sync/schedule.ts';
import { updateTrackState } from '../../src/sync/track-state.ts';
import { withStateOverrides } from '../harness/state-store-overrides.ts';

const NOW = new Date('2026-11-24T12:00:00Z');
const minutesAgo = (minutes: number) => new Date(NOW.getTime() - minutes * 60_000).toISOString();

/** `store`, recording which documents are read through it (its own listing is not counted). */
function countingReads(store: FsStore): { state: StateStore; reads: string[] } {
  const reads: string[] = [];
  const state = withStateOverrides(store, {
    read: (track) => {
      reads.push(track);
      return store.read(track);
    },
  });
  return { state, reads };
}

describe('KeptTrackStates', () => {
  let dir: string;
  let store: FsStore;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-kept-'));
    store = new FsStore({ path: dir });
  });
  after(() => rm(dir, { recursive: true, force: true }));

  const tracks = parseConfig(
    `tracks:
  - {name: a, repository: https://h/a.git, interval: 5m}
  - {name: b, repository: https://h/b.git, interval: 5m}
  - {name: c, repository: https://h/c.git, interval: 5m}
  - {name: fresh, repository: https://h/d.git, interval: 5m}
`,
    'driftless.yaml',
  ).tracks;

  const tick = async (keptStates: KeptTrackStates, now: Date) => {
    const counted = countingReads(store);
    const result = await scheduleDueTracks(now, {
      tracks,
      state: counted.state,
      queue: { enqueue: async (_job: Job) => undefined },
      keptStates,
    });
    return { due: result.tracks, reads: [...counted.reads].sort() };
  };

  it('reads again only the documents changed since the last tick, and sees their changes', async () => {
    // Prepare: a and b checked 6 minutes ago (due), c 1 minute ago; "fresh" has no state yet.
    for (const [name, checked] of [
      ['a', 6],
      ['b', 6],
      ['c', 1],
    ] as const) {
      await updateTrackState(store, name, (state) => {
        state.driftCheckedAt = minutesAgo(checked);
      });
    }
    const keptStates = new KeptTrackStates();
    const first = await tick(keptStates, NOW);
    // Between the ticks a's check ran, and b was suspended.
    await updateTrackState(store, 'a', (state) => {
      state.driftCheckedAt = NOW.toISOString();
    });
    await updateTrackState(store, 'b', (state) => {
      state.suspended = true;
    });

    // Act
    const second = await tick(keptStates, new Date(NOW.getTime() + 60_000));

    // Assess
    assert.deepEqual(first.due, ['a', 'b', 'fresh']);
    assert.deepEqual(first.reads, ['a', 'b', 'c', 'fresh']);
    assert.deepEqual(second.due, ['fresh']);
    // c is answered from what was kept; the track without a document is looked up again.
    assert.deepEqual(second.reads, ['a', 'b', 'fresh']);
  });

  it('reports tracks removed from the config from the listing', async () => {
    // Prepare
    await updateTrackState(store, 'gone', (state) => {
      state.driftCheckedAt = minutesAgo(1);
    });

    // Act
    const counted = countingReads(store);
    const result = await scheduleDueTracks(NOW, {
      tracks,
      state: counted.state,
      queue: { enqueue: async () => undefined },
      keptStates: new KeptTrackStates(),
    });

    // Assess
    assert.deepEqual(result.removed, ['gone']);
    assert.ok(!counted.reads.includes('gone'), 'a removed track is not read');
  });
});
