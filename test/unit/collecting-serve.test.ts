/**
 * `driftless serve` and the track of a deleted GitTrack whose objects are being collected: its
 * scheduler does not warn of it as removed from the config, `/metrics` counts it in
 * `driftless_track_collecting` (not in `driftless_track_removed_from_config`), and the dashboard's
 * `GET /api/tracks` lists it with `collecting`. Real HTTP on a loopback port over the real fs
 * store; no Git and no cluster (the discovery the tick queues fails to connect, touching nothing).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseConfig } from '../../src/config/parse-config.ts';
import { jsonLogger } from '../../src/logger.ts';
import { startServe, type RunningServe } from '../../src/serve/start-serve.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import type { LocalContext } from '../../src/sync/local-context.ts';
import {
  COLLECTING_CONFIG_YAML,
  NEXT_TRY,
  SOURCE_ID,
  storeCollectingWeb,
} from './fakes/collecting-fixture.ts';

describe('driftless serve and a track being collected', () => {
  let dir: string;
  let serve: RunningServe;
  const logs: { msg: string; track?: string }[] = [];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-collecting-serve-'));
    const store = new FsStore({ path: dir });
    await storeCollectingWeb({ published: store, state: store });
    const ctx: LocalContext = {
      config: parseConfig(
        `${COLLECTING_CONFIG_YAML}dashboard: {readAccess: open}\n`,
        'driftless.yaml',
      ),
      artifacts: store,
      state: store,
      published: store,
      source: () => Promise.reject(new Error('no Git in unit tests')),
      cluster: () => Promise.reject(new Error('no cluster in unit tests')),
      close: () => undefined,
    };
    serve = await startServe(ctx, {
      port: 0,
      host: '127.0.0.1',
      // Only the tick at start: it reports the tracks off the config once.
      timers: { setInterval: () => undefined, clearInterval: () => undefined },
      logger: jsonLogger((line) => logs.push(JSON.parse(line)), { level: 'debug' }),
    });
    const deadline = performance.now() + 5_000;
    while (!logs.some((line) => line.track === 'retired') && performance.now() < deadline)
      await sleep(5);
  });

  after(async () => {
    await serve?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('warns at its ticks only of the track removed from the config', () => {
    // Assess
    const removed = logs.filter((line) => line.msg.startsWith('track removed from the config'));
    assert.deepEqual(
      removed.map((line) => line.track),
      ['retired'],
    );
  });

  it('reports driftless_track_collecting at /metrics, not driftless_track_removed_from_config', async () => {
    // Act
    const metrics = await (await fetch(`${serve.url}/metrics`)).text();

    // Assess
    assert.match(metrics, /^driftless_track_collecting\{track="web"\} 1$/m);
    assert.match(metrics, /^driftless_track_removed_from_config\{track="retired"\} 1$/m);
    assert.doesNotMatch(metrics, /^driftless_track_removed_from_config\{track="web"\}/m);
  });

  it('lists it with collecting at GET /api/tracks', async () => {
    // Act
    const response = await fetch(`${serve.url}/api/tracks`);

    // Assess
    assert.equal(response.status, 200);
    const body = (await response.json()) as Record<string, unknown>[];
    assert.deepEqual(
      body.map((entry) => [entry['track'], entry['removedFromConfig'], entry['collecting']]),
      [
        ['infra', undefined, undefined],
        [
          'web',
          true,
          { source: SOURCE_ID, gitTrack: 'apps/web', failures: 2, nextTryFrom: NEXT_TRY },
        ],
        // Removed from the config, its state kept: listed as `status -o json` lists it.
        ['retired', true, undefined],
      ],
    );
  });
});
