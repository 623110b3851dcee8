/**
 * The schedule's report of the track of a deleted GitTrack whose objects are being collected
 * (published under `collecting`): every tick — the drift function's in AWS, serve's scheduler
 * locally — tells it apart from a track removed from the config. It is not warned about as one
 * for `driftless delete`, nor counted in `driftless_track_removed_from_config`, but counted in
 * `driftless_track_collecting`. The real fs store; the drift function over its real ports.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createDriftHandler } from '../../handlers/drift.ts';
import { triggerDeps } from '../../src/aws/function-deps.ts';
import { functionMetrics, type FunctionMetrics } from '../../src/aws/function-metrics.ts';
import { silentLogger, type Logger } from '../../src/logger.ts';
import { METRIC_NAMES } from '../../src/metric-names.ts';
import { startScheduler, type SchedulerTimers } from '../../src/serve/scheduler.ts';
import type { Job } from '../../src/sync/jobs.ts';
import { scheduleDueTracks } from '../../src/sync/schedule.ts';
import {
  COLLECTING_CONFIG,
  collectingFsStore,
  NEXT_TRY,
  SOURCE_ID,
  writeCollectingConfig,
} from './fakes/collecting-fixture.ts';

const NOW = new Date('2026-01-01T12:01:00.000Z');

/** A clock that never ticks by itself: only the tick at start runs. */
const STILL_TIMERS: SchedulerTimers = {
  setInterval: () => undefined,
  clearInterval: () => undefined,
};

describe('the schedule and a track being collected', () => {
  const { dir, store } = collectingFsStore('driftless-collecting-schedule-');

  it('reports it as being collected, not as removed from the config, and queues nothing for it', async () => {
    // Prepare
    const jobs: Job[] = [];

    // Act
    const tick = await scheduleDueTracks(NOW, {
      tracks: COLLECTING_CONFIG.tracks,
      tracksFrom: COLLECTING_CONFIG.tracksFrom,
      published: store,
      state: store,
      queue: { enqueue: async (job) => void jobs.push(job) },
    });

    // Assess
    assert.deepEqual(tick.removed, ['retired']);
    assert.deepEqual(tick.collecting, [
      {
        name: 'web',
        source: SOURCE_ID,
        gitTrack: 'apps/web',
        retry: { track: 'web', failures: 2, notBefore: NEXT_TRY },
      },
    ]);
    assert.deepEqual(
      jobs.map((job) => [job.type, job.track]),
      [
        ['discover', SOURCE_ID],
        ['fetch', 'infra'],
        ['drift', 'infra'],
      ],
      'its source is discovered (which collects it); the track itself is not polled',
    );
  });

  it('drift function: warns of and counts only the track removed from the config; counts the one being collected apart', async () => {
    // Prepare: the deployed function's own ports over a config in this store.
    const file = await writeCollectingConfig(dir);
    const warnings: [string, unknown][] = [];
    const log: Logger = {
      ...silentLogger,
      warn: (message, fields) => void warnings.push([message, fields]),
    };
    const counted: [string, string][] = [];
    const metrics: FunctionMetrics = {
      ...functionMetrics(silentLogger),
      removedFromConfig: (track) => void counted.push([METRIC_NAMES.removedFromConfig, track]),
      collecting: (track) => void counted.push([METRIC_NAMES.collecting, track]),
    };
    const handler = createDriftHandler(
      () =>
        triggerDeps({ fetchQueue: true }, () => ({ enqueue: async () => undefined }), {
          DRIFTLESS_CONFIG: file,
        }),
      log,
      () => NOW,
      metrics,
    );

    // Act
    const result = await handler({ time: NOW.toISOString() });

    // Assess
    assert.deepEqual(result.removed, ['retired']);
    assert.deepEqual(
      result.collecting.map((track) => track.name),
      ['web'],
    );
    assert.deepEqual(warnings, [
      [
        'track removed from the config still has state; its objects stay until "driftless delete --track <track>" (or the delete action)',
        { track: 'retired' },
      ],
    ]);
    assert.deepEqual(counted, [
      ['driftless_track_removed_from_config', 'retired'],
      ['driftless_track_collecting', 'web'],
    ]);
  });

  it("serve's scheduler tells only the track removed from the config as removed", async () => {
    // Prepare
    const removed: string[] = [];
    const errors: unknown[] = [];

    // Act
    const scheduler = startScheduler(
      {
        tracks: COLLECTING_CONFIG.tracks,
        tracksFrom: COLLECTING_CONFIG.tracksFrom,
        published: store,
        state: store,
        queue: { enqueue: async () => undefined },
      },
      {
        timers: STILL_TIMERS,
        now: () => NOW,
        onRemovedTrack: (track) => removed.push(track),
        onError: (error) => errors.push(error),
      },
    );
    const deadline = performance.now() + 5_000;
    while (removed.length === 0 && errors.length === 0 && performance.now() < deadline)
      await sleep(5);
    scheduler.stop();

    // Assess: both are told in the same turn, once the tick has listed them.
    assert.deepEqual(errors, []);
    assert.deepEqual(removed, ['retired']);
  });
});
