/**
 * A track suspended by its config (`suspend: true` in driftless.yaml) reads as suspended on the
 * dashboard exactly as `driftless status -o json` shows it, its row says the suspension is the
 * config's (`suspendedInConfig`), and suspend and resume of it are refused 409 with nothing queued:
 * resume only lifts a stored suspension. The store (real fs): `web` suspended in the config, `held`
 * suspended by `driftless suspend` (stored), `api` neither.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { parseConfig } from '../../src/config/parse-config.ts';
import { handleDashboard } from '../../src/dashboard/dashboard-routes.ts';
import type { DashboardRequest } from '../../src/dashboard/http-types.ts';
import type { OverviewRow, TrackDetail, TrackStatusJson } from '../../src/dashboard/types.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import { updateTrackState } from '../../src/sync/track-state.ts';
import { cliOver, statusJsonOf } from '../harness/run-cli.ts';
import {
  answeredJson,
  dashboardDeps,
  getRequest,
  postRequest,
} from './fakes/dashboard-requests.ts';

const CONFIG = parseConfig(
  [
    'tracks:',
    '  - {name: web, repository: https://git.example.com/web.git, namespace: apps, suspend: true}',
    '  - {name: held, repository: https://git.example.com/held.git, namespace: apps}',
    '  - {name: api, repository: https://git.example.com/api.git, namespace: apps}',
    '',
  ].join('\n'),
  'driftless.yaml',
);

describe('the dashboard and a track suspended in driftless.yaml', () => {
  const dir = mkdtempSync(join(tmpdir(), 'driftless-dashboard-config-suspend-'));
  const store = new FsStore({ path: join(dir, 'store') });
  const { deps, queued } = dashboardDeps(store, {
    tracks: async () => CONFIG.tracks,
  });
  /** `driftless` over the same config and store. */
  const driftless = cliOver(() => ({
    config: CONFIG,
    artifacts: store,
    state: store,
    published: store,
    source: () => Promise.reject(new Error('status reads no Git')),
    cluster: () => Promise.reject(new Error('status reads no cluster')),
    close: () => undefined,
  }));

  before(async () => {
    // `web` has state of its own that says nothing of a suspension: only its config suspends it.
    await updateTrackState(store, 'web', (state) => {
      state.inventory = [{ subject: 'ConfigMap/apps/web', apiVersion: 'v1' }];
    });
    const suspend = await driftless('suspend', '--track', 'held');
    assert.equal(suspend.code, 0, suspend.stderr);
  });
  after(() => rm(dir, { recursive: true, force: true }));
  beforeEach(() => {
    queued.length = 0;
  });

  const statusJson = (...args: string[]) => statusJsonOf(driftless, ...args);

  const answered = (request: DashboardRequest) => answeredJson(deps, request);

  it('GET /api/tracks says web is suspended, exactly as `status -o json` does', async () => {
    // Act
    const listed = (await answered(getRequest('/api/tracks'))) as TrackStatusJson[];

    // Assess
    assert.deepEqual(
      listed.map((entry) => [entry.track, entry.suspended]),
      [
        ['web', true],
        ['held', true],
        ['api', false],
      ],
    );
    assert.deepEqual(listed, await statusJson());
    // The field shared with the CLI is the CLI's: where the suspension comes from is the row's.
    assert.equal('suspendedInConfig' in listed[0]!, false);
  });

  it('GET /api/overview marks web suspended, and suspended in its config', async () => {
    // Act
    const rows = (await answered(getRequest('/api/overview'))) as OverviewRow[];

    // Assess
    assert.deepEqual(
      rows.map((row) => row.status),
      await answered(getRequest('/api/tracks')),
    );
    assert.deepEqual(
      rows.map((row) => [row.status.track, row.suspendedInConfig]),
      [
        ['web', true],
        ['held', undefined],
        ['api', undefined],
      ],
    );
    // Additive: a row of a track its config does not suspend has no such field.
    assert.equal('suspendedInConfig' in rows[1]!, false);
  });

  it('GET /api/tracks/web (the track page) says it is suspended in its config', async () => {
    // Act
    const detail = (await answered(getRequest('/api/tracks/web'))) as TrackDetail;

    // Assess
    assert.equal(detail.row.status.suspended, true);
    assert.equal(detail.row.suspendedInConfig, true);
    assert.deepEqual(detail.row.status, await statusJson('--track', 'web'));
  });

  for (const track of ['web', 'held', 'api']) {
    it(`GET /api/tracks/${track}/status answers what \`status --track ${track} -o json\` prints`, async () => {
      // Act
      const entry = await answered(getRequest(`/api/tracks/${track}/status`));

      // Assess
      assert.deepEqual(entry, await statusJson('--track', track));
    });
  }

  it('refuses POST …/resume of web 409, naming the track and suspend: true, queueing nothing', async () => {
    // Act
    const answer = await handleDashboard(postRequest('/api/tracks/web/resume'), deps);

    // Assess
    assert.equal(answer.status, 409, answer.body);
    assert.deepEqual(JSON.parse(answer.body), {
      error:
        'track "web" is suspended in driftless.yaml (suspend: true): resume cannot lift that; remove suspend: true from the track there to resume it',
    });
    assert.deepEqual(queued, []);
  });

  it('refuses POST …/suspend of web 409 as already suspended in the config, queueing nothing', async () => {
    // Act
    const answer = await handleDashboard(postRequest('/api/tracks/web/suspend'), deps);

    // Assess
    assert.equal(answer.status, 409, answer.body);
    assert.deepEqual(JSON.parse(answer.body), {
      error:
        'track "web" is suspended in driftless.yaml (suspend: true): it is already suspended; remove suspend: true from the track there to resume it',
    });
    assert.deepEqual(queued, []);
  });

  it('still queues a resume of a stored suspension and a sync of web', async () => {
    // Act
    const resume = await handleDashboard(postRequest('/api/tracks/held/resume'), deps);
    const sync = await handleDashboard(postRequest('/api/tracks/web/sync'), deps);

    // Assess
    assert.equal(resume.status, 202, resume.body);
    assert.equal(sync.status, 202, sync.body);
    assert.deepEqual(queued, [
      { type: 'lifecycle', track: 'held', action: 'resume', by: 'alice' },
      { type: 'fetch', track: 'web', trigger: 'manual', by: 'alice' },
    ]);
  });
});
