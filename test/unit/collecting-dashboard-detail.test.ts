/**
 * The dashboard's track routes and the track of a deleted GitTrack whose objects are being
 * collected: `GET /api/tracks/<track>` and `…/status` answer its `GET /api/tracks` entry, and its
 * actions are refused 409 naming why, with nothing queued. A track neither configured nor stored
 * is still unknown. The real fs store.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { handleDashboard } from '../../src/dashboard/dashboard-routes.ts';
import { keptTracks } from '../../src/sync/published-tracks.ts';
import {
  COLLECTING_CONFIG,
  collectingFsStore,
  NEXT_TRY,
  SOURCE_ID,
} from './fakes/collecting-fixture.ts';
import { dashboardDeps, getRequest, postRequest } from './fakes/dashboard-requests.ts';

describe('the dashboard track routes and a track being collected', () => {
  const { store } = collectingFsStore('driftless-collecting-dashboard-detail-');
  const { deps, queued } = dashboardDeps(store, {
    tracks: async () => COLLECTING_CONFIG.tracks,
    kept: () => keptTracks(COLLECTING_CONFIG, store),
  });

  /** The track's entry of GET /api/tracks. */
  async function listed(track: string): Promise<unknown> {
    const answer = await handleDashboard(getRequest('/api/tracks'), deps);
    assert.equal(answer.status, 200, answer.body);
    return (JSON.parse(answer.body) as { track: string }[]).find((entry) => entry.track === track);
  }

  for (const path of ['/api/tracks/web', '/api/tracks/web/status']) {
    it(`GET ${path} answers its GET /api/tracks entry`, async () => {
      // Act
      const answer = await handleDashboard(getRequest(path), deps);

      // Assess
      assert.equal(answer.status, 200, answer.body);
      const body = JSON.parse(answer.body) as Record<string, unknown>;
      assert.deepEqual(body, await listed('web'));
      assert.equal(body['removedFromConfig'], true);
      assert.deepEqual(body['collecting'], {
        source: SOURCE_ID,
        gitTrack: 'apps/web',
        failures: 2,
        nextTryFrom: NEXT_TRY,
      });
      assert.deepEqual(body['inventory'], [{ subject: 'ConfigMap/apps/web', apiVersion: 'v1' }]);
    });
  }

  for (const [action, body] of [
    ['sync', {}],
    ['rollback', { previous: true }],
    ['suspend', {}],
  ] as const) {
    it(`refuses POST …/${action} 409 as being collected, queueing nothing`, async () => {
      // Act
      const answer = await handleDashboard(postRequest(`/api/tracks/web/${action}`, body), deps);

      // Assess
      assert.equal(answer.status, 409, answer.body);
      assert.deepEqual(JSON.parse(answer.body), {
        error: `track "web" is being collected (GitTrack apps/web was deleted; the discoveries of tracksFrom source "${SOURCE_ID}" collect its objects): it takes no ${action}`,
      });
      assert.deepEqual(queued, []);
    });
  }

  it('still answers 404 for a track neither configured nor stored', async () => {
    // Act: `gone` has no state, and no source collects it (`retired`, removed from the config
    // with its state kept, is answered as such: dashboard-off-config.test.ts).
    const page = await handleDashboard(getRequest('/api/tracks/gone'), deps);
    const sync = await handleDashboard(postRequest('/api/tracks/gone/sync', {}), deps);

    // Assess
    assert.equal(page.status, 404, page.body);
    assert.equal(sync.status, 404, sync.body);
    assert.deepEqual(JSON.parse(page.body), {
      error: 'track "gone" is not configured (tracks: infra)',
    });
    assert.deepEqual(queued, []);
  });

  it('still answers a configured track its page', async () => {
    // Act
    const answer = await handleDashboard(getRequest('/api/tracks/infra'), deps);

    // Assess
    assert.equal(answer.status, 200, answer.body);
    assert.equal(
      (JSON.parse(answer.body) as { row: { status: { track: string } } }).row.status.track,
      'infra',
    );
  });
});
