/**
 * `driftless_track_collecting`: the track of a deleted GitTrack whose objects are being collected,
 * 1 per such track, in serve's `/metrics` and in the drift function's CloudWatch EMF lines — and
 * never in `driftless_track_removed_from_config`, which is for tracks `driftless delete` should
 * collect. The real fs store; stdout captured for the EMF lines Powertools writes.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createDriftHandler } from '../../handlers/drift.ts';
import { functionMetrics } from '../../src/aws/function-metrics.ts';
import { silentLogger } from '../../src/logger.ts';
import { ServeMetrics } from '../../src/serve/serve-metrics.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import type { PublishedTracks } from '../../src/sync/published-tracks.ts';
import { updateTrackState } from '../../src/sync/track-state.ts';
import { COLLECTING_CONFIG, SOURCE_ID, storeCollectingWeb } from './fakes/collecting-fixture.ts';

const NOW = new Date('2026-01-01T12:01:00.000Z');

/** The EMF lines written to stdout while `act` runs: each metric's name, unit, value, dimensions. */
async function emfWhile(act: () => Promise<unknown>) {
  const lines: string[] = [];
  const write = process.stdout.write;
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    if (typeof chunk === 'string' && chunk.startsWith('{"_aws"')) {
      lines.push(...chunk.split('\n').filter(Boolean));
      return true;
    }
    return (write as (...args: unknown[]) => boolean).call(process.stdout, chunk, ...rest);
  }) as typeof process.stdout.write;
  try {
    await act();
  } finally {
    process.stdout.write = write;
  }
  return lines.flatMap((line) => {
    const parsed = JSON.parse(line) as {
      _aws: {
        CloudWatchMetrics: { Dimensions: string[][]; Metrics: { Name: string; Unit: string }[] }[];
      };
    } & Record<string, unknown>;
    const [directive] = parsed._aws.CloudWatchMetrics;
    assert.ok(directive);
    const dimensions = Object.fromEntries(
      (directive.Dimensions[0] ?? []).map((name) => [name, parsed[name]]),
    );
    return directive.Metrics.map((metric) => [
      metric.Name,
      metric.Unit,
      parsed[metric.Name],
      dimensions,
    ]);
  });
}

describe('driftless_track_collecting', () => {
  let dir: string;
  let store: FsStore;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-collecting-metrics-'));
    store = new FsStore({ path: dir });
    await storeCollectingWeb({ published: store, state: store });
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it("is a gauge of serve's /metrics, next to the tracks removed from the config", () => {
    // Act
    const text = new ServeMetrics().render({
      tracks: [],
      states: new Map(),
      removed: ['retired'],
      collecting: ['web'],
      queueLength: 0,
      jobsRunning: 0,
    });

    // Assess
    assert.match(text, /^# TYPE driftless_track_collecting gauge$/m);
    assert.match(text, /^driftless_track_collecting\{track="web"\} 1$/m);
    assert.match(text, /^driftless_track_removed_from_config\{track="retired"\} 1$/m);
    assert.doesNotMatch(text, /^driftless_track_removed_from_config\{track="web"\}/m);
  });

  it('is written by the drift function on each tick; the track is not counted as removed from the config', async () => {
    // Prepare
    const handler = createDriftHandler(
      async () => ({
        tracks: COLLECTING_CONFIG.tracks,
        tracksFrom: COLLECTING_CONFIG.tracksFrom,
        published: store,
        artifacts: store,
        state: store,
        queue: { enqueue: async () => undefined },
      }),
      silentLogger,
      () => NOW,
      functionMetrics(silentLogger),
    );

    // Act
    const samples = await emfWhile(() => handler({ time: NOW.toISOString() }));

    // Assess
    assert.deepEqual(samples, [
      ['driftless_track_removed_from_config', 'None', 1, { track: 'retired' }],
      ['driftless_track_collecting', 'None', 1, { track: 'web' }],
    ]);
  });

  it('is joined by driftless_track_held for a track whose GitTrack is refused for now', async () => {
    // Prepare: `api` published, then its GitTrack refused: held, with its state kept
    const held = await mkdtemp(join(dir, 'held-'));
    const heldStore = new FsStore({ path: held });
    const api = {
      ...COLLECTING_CONFIG.tracks[0]!,
      name: 'api',
      origin: { source: SOURCE_ID, gitTrack: { namespace: 'apps', name: 'api' } },
    };
    const list: PublishedTracks = {
      source: SOURCE_ID,
      publishedAt: '2026-01-01T12:00:00.000Z',
      tracks: [],
      problems: [
        { where: 'GitTrack apps/api', origin: api.origin, message: 'spec.repository: refused' },
      ],
      held: [api],
    };
    await heldStore.publish(SOURCE_ID, list);
    await updateTrackState(heldStore, 'api', (state) => {
      state.inventory = [{ subject: 'ConfigMap/apps/api', apiVersion: 'v1' }];
    });
    const handler = createDriftHandler(
      async () => ({
        tracks: COLLECTING_CONFIG.tracks,
        tracksFrom: COLLECTING_CONFIG.tracksFrom,
        published: heldStore,
        artifacts: heldStore,
        state: heldStore,
        queue: { enqueue: async () => undefined },
      }),
      silentLogger,
      () => NOW,
      functionMetrics(silentLogger),
    );

    // Act
    const samples = await emfWhile(() => handler({ time: NOW.toISOString() }));

    // Assess
    assert.deepEqual(samples, [['driftless_track_held', 'None', 1, { track: 'api' }]]);
  });
});
