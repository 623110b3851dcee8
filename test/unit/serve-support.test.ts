import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as turn, setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { parseConfig } from '../../src/config/index.ts';
import { jsonLogger } from '../../src/logger.ts';
import { Histogram, formatMetrics } from '../../src/serve/prometheus-text.ts';
import { schedulePeriod, startScheduler, type SchedulerTimers } from '../../src/serve/scheduler.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import type { Job } from '../../src/sync/jobs.ts';
import { updateTrackState } from '../../src/sync/track-state.ts';

const TRACKS = parseConfig(
  `
tracks:
  - name: web
    repository: https://git.example.com/org/web.git
    interval: 1m
  - name: paused
    repository: https://git.example.com/org/paused.git
    suspend: true
  - name: api
    repository: https://git.example.com/org/api.git
    interval: 30s
`,
  'driftless.yaml',
).tracks;

/** Timers that fire only when the test says so. */
class ManualTimers implements SchedulerTimers {
  readonly timers: { callback: () => void; ms: number; cleared: boolean }[] = [];
  setInterval(callback: () => void, ms: number): unknown {
    const timer = { callback, ms, cleared: false };
    this.timers.push(timer);
    return timer;
  }
  clearInterval(handle: unknown): void {
    (handle as { cleared: boolean }).cleared = true;
  }
}

describe('scheduler', () => {
  const NOW = new Date('2026-01-02T03:04:05.000Z');
  let dir: string;
  let store: FsStore;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-scheduler-'));
    store = new FsStore({ path: dir });
  });
  after(() => rm(dir, { recursive: true, force: true }));

  /** Waits until `jobs` holds `count` jobs (the tick reads the store first), then a little more. */
  async function settle(jobs: readonly unknown[], count: number): Promise<void> {
    const deadline = performance.now() + 5_000;
    while (jobs.length < count && performance.now() < deadline) await sleep(5);
    for (let i = 0; i < 20; i++) await turn();
  }

  it('ticks at the shortest interval, within 1 s and 1 min', () => {
    // Assess
    assert.equal(schedulePeriod(TRACKS), 30_000);
    assert.equal(schedulePeriod([]), 60_000);
  });

  it('polls and drift-checks every track that is not suspended at start, then the due ones each tick', async () => {
    // Prepare: web was checked just now, api half an interval ago.
    await updateTrackState(store, 'web', (state) => {
      state.driftCheckedAt = NOW.toISOString();
    });
    await updateTrackState(store, 'api', (state) => {
      state.driftCheckedAt = new Date(NOW.getTime() - 15_000).toISOString();
    });
    const timers = new ManualTimers();
    const jobs: Job[] = [];
    const queue = { enqueue: async (job: Job) => void jobs.push(job) };

    // Act
    const scheduler = startScheduler(
      { tracks: TRACKS, state: store, queue },
      { timers, now: () => NOW },
    );
    await settle(jobs, 4);
    const atStart = jobs.splice(0);
    timers.timers[0]!.callback();
    await settle(jobs, 2);
    scheduler.stop();

    // Assess
    // Tracks are queued concurrently; each track's fetch comes before its drift check.
    for (const track of ['web', 'api']) {
      assert.deepEqual(
        atStart.filter((job) => job.track === track).map((job) => job.type),
        ['fetch', 'drift'],
      );
    }
    assert.equal(atStart.length, 4);
    assert.deepEqual(
      timers.timers.map((t) => t.ms),
      [30_000],
    );
    // api is due within this 30 s tick; web only in a minute.
    assert.deepEqual(jobs, [
      { type: 'fetch', track: 'api', trigger: 'schedule', tick: NOW.toISOString() },
      { type: 'drift', track: 'api', tick: NOW.toISOString() },
    ]);
    assert.ok(timers.timers.every((t) => t.cleared));
  });

  it('waits for the first tick when runAtStart is false', async () => {
    // Prepare
    const jobs: unknown[] = [];

    // Act
    startScheduler(
      { tracks: TRACKS, state: store, queue: { enqueue: async (job) => void jobs.push(job) } },
      { timers: new ManualTimers(), runAtStart: false },
    ).stop();
    await settle(jobs, 0);

    // Assess
    assert.deepEqual(jobs, []);
  });
});

describe('jsonLogger', () => {
  it('writes one JSON object per line, time, level and msg first, undefined fields left out', () => {
    // Prepare
    const lines: string[] = [];
    const logger = jsonLogger((line) => lines.push(line), {
      now: () => new Date('2025-01-02T03:04:05.000Z'),
    }).child({ track: 'web' });

    // Act
    logger.info('sync finished', { revision: 'abc', deliveryId: undefined, msg: 'not this' });
    logger.debug('dropped below info');
    logger.error('failed', { error: new Error('boom') });

    // Assess
    assert.deepEqual(lines, [
      '{"time":"2025-01-02T03:04:05.000Z","level":"info","msg":"sync finished","track":"web","revision":"abc"}',
      '{"time":"2025-01-02T03:04:05.000Z","level":"error","msg":"failed","track":"web","error":"boom"}',
    ]);
  });
});

describe('Prometheus text', () => {
  it('escapes label values and writes cumulative histogram buckets', () => {
    // Prepare
    const histogram = new Histogram([1, 5]);
    histogram.observe({ track: 'web' }, 0.5);
    histogram.observe({ track: 'web' }, 3);
    histogram.observe({ track: 'web' }, 7);

    // Act
    const text = formatMetrics([
      {
        name: 'x_info',
        help: 'a "quoted"\nhelp',
        type: 'gauge',
        samples: [{ labels: { path: 'a\\b"c\nd' }, value: 1 }],
      },
      { name: 'x_seconds', help: 'h', type: 'histogram', samples: histogram.samples('x_seconds') },
    ]);

    // Assess
    assert.equal(
      text,
      [
        '# HELP x_info a "quoted"\\nhelp',
        '# TYPE x_info gauge',
        'x_info{path="a\\\\b\\"c\\nd"} 1',
        '# HELP x_seconds h',
        '# TYPE x_seconds histogram',
        'x_seconds_bucket{track="web",le="1"} 1',
        'x_seconds_bucket{track="web",le="5"} 2',
        'x_seconds_bucket{track="web",le="+Inf"} 3',
        'x_seconds_sum{track="web"} 10.5',
        'x_seconds_count{track="web"} 3',
        '',
      ].join('\n'),
    );
  });
});
