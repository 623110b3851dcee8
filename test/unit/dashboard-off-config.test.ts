/**
 * The dashboard shows every track `driftless status -o json` shows, as it shows them: a track
 * removed from driftless.yaml whose state is still stored is listed by `GET /api/tracks` (as
 * `status -o json` lists it), has a row in `GET /api/overview` as the track being collected has,
 * answers its entry at `GET /api/tracks/<track>` (as `status --track <track> -o json` does), and
 * refuses actions 409. The fixture's store (real fs): `infra` configured, `web` being collected,
 * `retired` removed from the config.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { handleDashboard } from '../../src/dashboard/dashboard-routes.ts';
import type { DashboardRequest } from '../../src/dashboard/http-types.ts';
import type { OverviewRow, TrackStatusJson } from '../../src/dashboard/types.ts';
import { keptTracks } from '../../src/sync/published-tracks.ts';
import { cliOver, statusJsonOf } from '../harness/run-cli.ts';
import { COLLECTING_CONFIG, collectingFsStore } from './fakes/collecting-fixture.ts';
import {
  answeredJson,
  dashboardDeps,
  getRequest,
  postRequest,
} from './fakes/dashboard-requests.ts';

describe('the dashboard and a track removed from the config', () => {
  const { store } = collectingFsStore('driftless-dashboard-off-config-');
  const { deps, queued } = dashboardDeps(store, {
    tracks: async () => COLLECTING_CONFIG.tracks,
    kept: () => keptTracks(COLLECTING_CONFIG, store),
  });
  /** `driftless` over the same config and store. */
  const driftless = cliOver(() => ({
    config: COLLECTING_CONFIG,
    artifacts: store,
    state: store,
    published: store,
    source: () => Promise.reject(new Error('status reads no Git')),
    cluster: () => Promise.reject(new Error('status reads no cluster')),
    close: () => undefined,
  }));

  const statusJson = (...args: string[]) => statusJsonOf(driftless, ...args);

  const answered = (request: DashboardRequest) => answeredJson(deps, request);

  it('GET /api/tracks lists every track `status -o json` lists, each as it lists it', async () => {
    // Act
    const listed = await answered(getRequest('/api/tracks'));

    // Assess
    assert.deepEqual(listed, await statusJson());
    assert.deepEqual(
      (listed as TrackStatusJson[]).map((entry) => [entry.track, entry.removedFromConfig]),
      [
        ['infra', undefined],
        ['web', true],
        ['retired', true],
      ],
    );
  });

  it('GET /api/overview has a row per listed track, its status its GET /api/tracks entry', async () => {
    // Act
    const rows = (await answered(getRequest('/api/overview'))) as OverviewRow[];
    const listed = await answered(getRequest('/api/tracks'));

    // Assess: the same tracks in the same order, the off-config ones marked by their status.
    assert.deepEqual(
      rows.map((row) => row.status),
      listed,
    );
    const retired = rows[2]!;
    assert.equal(retired.status.removedFromConfig, true);
    assert.equal(retired.status.collecting, undefined);
    assert.deepEqual(retired.status.inventory, [
      { subject: 'ConfigMap/apps/retired', apiVersion: 'v1' },
    ]);
    // Read from its stored state as any row: never synced, so Ready is unknown.
    assert.equal(retired.ready, 'Unknown');
    assert.equal(retired.lastSync, null);
    // A configured track's row is as it was: no field of a track off the config.
    assert.deepEqual(Object.keys(rows[0]!).sort(), [
      'appliedCommit',
      'desiredCommit',
      'driftCheckedAt',
      'drifted',
      'lastSync',
      'message',
      'ready',
      'reason',
      'status',
    ]);
    assert.equal('removedFromConfig' in rows[0]!.status, false);
    assert.equal('collecting' in rows[0]!.status, false);
  });

  for (const path of ['/api/tracks/retired', '/api/tracks/retired/status']) {
    it(`GET ${path} answers what \`status --track retired -o json\` prints`, async () => {
      // Act
      const entry = await answered(getRequest(path));

      // Assess
      assert.deepEqual(entry, await statusJson('--track', 'retired'));
      assert.equal((entry as TrackStatusJson).removedFromConfig, true);
    });
  }

  for (const [action, body] of [
    ['sync', {}],
    ['rollback', { previous: true }],
    ['unpin', {}],
    ['suspend', {}],
    ['resume', {}],
  ] as const) {
    it(`refuses POST …/${action} 409 as removed from the config, queueing nothing`, async () => {
      // Act
      const answer = await handleDashboard(
        postRequest(`/api/tracks/retired/${action}`, body),
        deps,
      );

      // Assess
      assert.equal(answer.status, 409, answer.body);
      assert.deepEqual(JSON.parse(answer.body), {
        error: `track "retired" was removed from the config; its state and objects stay until "driftless delete --track retired" collects them: it takes no ${action}`,
      });
      assert.deepEqual(queued, []);
    });
  }
});
