import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseConfig } from '../../src/config/index.ts';
import { jsonLogger } from '../../src/logger.ts';
import { Histogram, formatMetrics } from '../../src/serve/prometheus-text.ts';
import { startScheduler, type SchedulerTimers } from '../../src/serve/scheduler.ts';
import { driftOutcomeOf, outcomeOf } from '../../src/serve/use-case-handlers.ts';
import type { DriftJob, FetchJob } from '../../src/sync/jobs.ts';

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
  it('polls and drift-checks every track that is not suspended, at start and each interval', () => {
    // Prepare
    const timers = new ManualTimers();
    const jobs: (FetchJob | DriftJob)[] = [];

    // Act
    const scheduler = startScheduler(TRACKS, (job) => jobs.push(job), { timers });
    const atStart = jobs.splice(0);
    timers.timers[1]!.callback();
    scheduler.stop();

    // Assess
    assert.deepEqual(
      atStart.map((job) => `${job.type} ${job.track}`),
      ['fetch web', 'drift web', 'fetch api', 'drift api'],
    );
    assert.deepEqual(
      timers.timers.map((t) => t.ms),
      [60_000, 30_000],
    );
    assert.deepEqual(jobs, [
      { type: 'fetch', track: 'api', trigger: 'schedule' },
      { type: 'drift', track: 'api' },
    ]);
    assert.ok(timers.timers.every((t) => t.cleared));
  });

  it('waits for the first interval when runAtStart is false', () => {
    // Prepare
    const jobs: unknown[] = [];

    // Act
    startScheduler(TRACKS, (job) => jobs.push(job), {
      timers: new ManualTimers(),
      runAtStart: false,
    }).stop();

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

describe('use-case outcomes', () => {
  it('reads result or outcome, revision and error', () => {
    // Act
    const sync = outcomeOf({ result: 'superseded', revision: 'abc', changeset: [] });
    const fetched = outcomeOf({ outcome: 'failed', revision: null, error: 'no such ref' });

    // Assess
    assert.deepEqual(sync, { result: 'superseded', revision: 'abc' });
    assert.deepEqual(fetched, { result: 'failed', error: 'no such ref' });
  });

  it('names a drift result in one word', () => {
    // Act
    const results = [
      { drifted: [], missing: [], corrected: false },
      { drifted: [{ subject: 'ConfigMap/a/b' }], missing: [], corrected: false },
      { drifted: [], missing: ['ConfigMap/a/b'], corrected: true },
      { drifted: [], missing: [], errors: [{ subject: 'x', error: 'x: forbidden' }] },
    ].map((value) => driftOutcomeOf(value));

    // Assess
    assert.deepEqual(
      results.map((outcome) => outcome.result),
      ['clean', 'drifted', 'corrected', 'failed'],
    );
    assert.equal(results[3]?.error, 'x: forbidden');
  });
});
