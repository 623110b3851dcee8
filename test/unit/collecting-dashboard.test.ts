/**
 * The dashboard's `GET /api/tracks` and the track of a deleted GitTrack whose objects are being
 * collected: listed after the tracks, as `driftless status -o json` lists it (its state,
 * `removedFromConfig: true` and `collecting`), before the tracks removed from the config, in the
 * routes and through the deployed dashboard function's own ports. The real fs store.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createDashboardHandler } from '../../handlers/dashboard.ts';
import { dashboardDeps } from '../../src/aws/function-deps.ts';
import { handleDashboard, type DashboardDeps } from '../../src/dashboard/dashboard-routes.ts';
import type { DashboardRequest } from '../../src/dashboard/http-types.ts';
import { storedObjects } from '../../src/dashboard/read-model.ts';
import { silentLogger } from '../../src/logger.ts';
import { keptTracks } from '../../src/sync/published-tracks.ts';
import {
  COLLECTING_CONFIG,
  collectingFsStore,
  NEXT_TRY,
  SOURCE_ID,
  writeCollectingConfig,
} from './fakes/collecting-fixture.ts';

/** What `status -o json` gives the track being collected, past its state's fields. */
const WEB_COLLECTING = {
  removedFromConfig: true,
  collecting: { source: SOURCE_ID, gitTrack: 'apps/web', failures: 2, nextTryFrom: NEXT_TRY },
};

type Listed = { track: string; inventory: unknown[] } & Record<string, unknown>;

/** Each listed track with the fields that tell a track being collected apart. */
function summary(body: string) {
  return (JSON.parse(body) as Listed[]).map((entry) => [
    entry.track,
    entry['removedFromConfig'],
    entry['collecting'],
  ]);
}

describe('GET /api/tracks and a track being collected', () => {
  const { dir, store } = collectingFsStore('driftless-collecting-dashboard-');

  it('lists it after the tracks, with its state, removedFromConfig and collecting, before a removed one', async () => {
    // Prepare
    const deps: DashboardDeps = {
      tracks: async () => COLLECTING_CONFIG.tracks,
      kept: () => keptTracks(COLLECTING_CONFIG, store),
      state: store,
      artifacts: store,
      queue: { enqueue: async () => undefined },
      objects: async (_track, state) => storedObjects(state),
      readAccess: 'open',
      signIn: ['basic'],
      assets: async () => undefined,
    };
    const request: DashboardRequest = {
      method: 'GET',
      path: '/api/tracks',
      query: new URLSearchParams(),
      headers: { host: 'dash.test' },
      body: '',
      identity: { kind: 'anonymous' },
    };

    // Act
    const answer = await handleDashboard(request, deps);

    // Assess
    assert.equal(answer.status, 200, answer.body);
    assert.deepEqual(summary(answer.body), [
      ['infra', undefined, undefined],
      ['web', WEB_COLLECTING.removedFromConfig, WEB_COLLECTING.collecting],
      ['retired', true, undefined],
    ]);
    const web = (JSON.parse(answer.body) as Listed[])[1]!;
    assert.deepEqual(web.inventory, [{ subject: 'ConfigMap/apps/web', apiVersion: 'v1' }]);
  });

  it('is listed by the deployed dashboard function over its own ports', async () => {
    // Prepare
    const file = await writeCollectingConfig(dir);
    const handler = createDashboardHandler(
      () => dashboardDeps(() => ({ enqueue: async () => undefined }), { DRIFTLESS_CONFIG: file }),
      silentLogger,
    );

    // Act
    const result = await handler({
      rawPath: '/api/tracks',
      rawQueryString: '',
      headers: { host: 'abc123.execute-api.eu-west-1.amazonaws.com' },
      isBase64Encoded: false,
      requestContext: {
        requestId: 'req-1',
        stage: '$default',
        domainName: 'abc123.execute-api.eu-west-1.amazonaws.com',
        http: { method: 'GET' },
        authorizer: { iam: { userArn: 'arn:aws:sts::123456789012:assumed-role/Ops/alice' } },
      },
    });

    // Assess
    assert.equal(result.statusCode, 200, result.body);
    assert.deepEqual(summary(result.body), [
      ['infra', undefined, undefined],
      ['web', WEB_COLLECTING.removedFromConfig, WEB_COLLECTING.collecting],
      ['retired', true, undefined],
    ]);
  });
});
