/**
 * `driftless status` shows a track some job is working on (its apply lease),
 * so someone whose sync is refused as busy sees which job holds the track and
 * since when, in text and in JSON (`busy`); a lease that lapsed (its holder died) is not shown.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { palette } from '../../src/cli/colours.ts';
import { formatStatusDetail, formatStatusSummary } from '../../src/cli/status-view.ts';
import { statusJson } from '../../src/sync/status-json.ts';
import { emptyTrackState, type TrackState } from '../../src/sync/track-state.ts';

const NOW = new Date('2026-01-01T13:01:00Z');
const plain = palette(false);

/** A holder id as takeApplyLease makes them (a random UUID); people see its first 8 digits. */
const HOLDER = '3f2a9c1e-7b4d-4e5f-8a9b-0c1d2e3f4a5b';

const leased = (until: string): TrackState => ({
  ...emptyTrackState(),
  applyLease: { holder: HOLDER, until, since: '2026-01-01T13:00:00.000Z', job: 'sync' },
});

describe('status of a busy track', () => {
  it('names the job and since when, in the summary and the detail', () => {
    // Prepare
    const state = leased('2026-01-01T13:05:00.000Z');

    // Act
    const summary = formatStatusSummary([{ track: 'web', state }], plain, NOW);
    const detail = formatStatusDetail('web', state, plain, NOW);

    // Assess
    assert.match(summary, /busy: a sync since 2026-01-01T13:00:00\.000Z; never synced/);
    assert.match(
      detail,
      /^Busy: {6}a sync since 2026-01-01T13:00:00\.000Z; other syncs, rollbacks and drift checks wait for it \(until 2026-01-01T13:05:00\.000Z at the latest; lease 3f2a9c1e\)$/m,
    );
  });

  it('shows nothing for a lease that lapsed', () => {
    // Prepare
    const state = leased('2026-01-01T13:00:30.000Z');

    // Act
    const summary = formatStatusSummary([{ track: 'web', state }], plain, NOW);
    const detail = formatStatusDetail('web', state, plain, NOW);

    const json = statusJson('web', state, NOW);

    // Assess
    assert.doesNotMatch(summary + detail, /busy/i);
    assert.equal(json.busy, null);
  });

  it('gives the lease, job, since and until in JSON, and never the whole holder id', () => {
    // Prepare
    const state = leased('2026-01-01T13:05:00.000Z');
    const older: TrackState = {
      ...emptyTrackState(),
      applyLease: { holder: HOLDER, until: '2026-01-01T13:05:00.000Z' },
    };

    // Act
    const json = statusJson('web', state, NOW);
    const fromOlderVersion = statusJson('web', older, NOW);

    // Assess
    assert.deepEqual(json.busy, {
      lease: '3f2a9c1e',
      job: 'sync',
      since: '2026-01-01T13:00:00.000Z',
      until: '2026-01-01T13:05:00.000Z',
      pid: null,
      host: null,
    });
    assert.doesNotMatch(JSON.stringify(json), /holder|7b4d/);
    assert.deepEqual(fromOlderVersion.busy, {
      lease: '3f2a9c1e',
      job: null,
      since: null,
      until: '2026-01-01T13:05:00.000Z',
      pid: null,
      host: null,
    });
  });
});
