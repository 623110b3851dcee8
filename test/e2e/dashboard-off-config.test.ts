/**
 * The dashboard page in Chromium and the tracks off the config: the overview has a row for the
 * track of a deleted GitTrack being collected, one for a track held while its GitTrack is refused,
 * and one for a track removed from driftless.yaml (state kept), each marked as such; their track pages show what the store keeps of them, and no
 * action buttons, as the dashboard refuses their actions. A unit-style browser test of the page
 * built from web/ now, over the routes (handleDashboard) and the collecting fixture's fs store,
 * behind a small HTTP front: no cluster, no Git.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { storedObjects } from '../../src/dashboard/read-model.ts';
import { keptTracks, type PublishedTracks } from '../../src/sync/published-tracks.ts';
import { updateTrackState } from '../../src/sync/track-state.ts';
import { serveDashboardPages, type DashboardPages } from '../harness/dashboard-pages.ts';
import {
  COLLECTING_CONFIG,
  collectingFsStore,
  SOURCE_ID,
} from '../unit/fakes/collecting-fixture.ts';

describe('the dashboard page and the tracks off the config', () => {
  const { dir, store } = collectingFsStore('driftless-dashboard-off-config-e2e-');
  let pages: DashboardPages;

  before(async () => {
    // `api`'s GitTrack refused since it was published: its source holds it (after the fixture's
    // list, which it extends).
    const list = await store.readPublished<PublishedTracks>(SOURCE_ID);
    const origin = { source: SOURCE_ID, gitTrack: { namespace: 'apps', name: 'api' } };
    await store.publish(SOURCE_ID, {
      ...list!,
      problems: [{ where: 'GitTrack apps/api', origin, message: 'spec.repository: refused' }],
      held: [{ ...COLLECTING_CONFIG.tracks[0]!, name: 'api', origin }],
    });
    await updateTrackState(store, 'api', (state) => {
      state.inventory = [{ subject: 'ConfigMap/apps/api', apiVersion: 'v1' }];
    });
    // The page's build beside the store, not in it.
    pages = await serveDashboardPages(await mkdtemp(join(dir, 'web-')), {
      tracks: async () => COLLECTING_CONFIG.tracks,
      kept: () => keptTracks(COLLECTING_CONFIG, store),
      state: store,
      artifacts: store,
      queue: { enqueue: async () => assert.fail('no action is queued here') },
      objects: async (_track, state) => storedObjects(state),
      readAccess: 'open',
      signIn: ['basic'],
    });
  });

  after(async () => {
    await pages?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const open = (hash: string): Promise<Page> => pages.open(hash);

  const rowOf = (page: Page, track: string) =>
    page.locator('tbody tr').filter({ has: page.getByRole('link', { name: track, exact: true }) });

  it('lists them on the overview, each marked, after the configured track', async () => {
    // Act
    const page = await open('#/');
    await rowOf(page, 'retired').waitFor();

    // Assess
    const names = await page.locator('tbody tr th a').allInnerTexts();
    assert.deepEqual(names, ['infra', 'web', 'api', 'retired']);
    const web = rowOf(page, 'web');
    assert.match(await web.innerText(), /Being collected/);
    assert.match(
      (await web.locator('.badge', { hasText: 'Being collected' }).getAttribute('title')) ?? '',
      new RegExp(`GitTrack apps/web was deleted.*"${SOURCE_ID}".*failed 2 times in a row`),
    );
    assert.match(await rowOf(page, 'api').innerText(), /Document refused/);
    assert.match(await rowOf(page, 'retired').innerText(), /Removed from config/);
    assert.doesNotMatch(await rowOf(page, 'infra').innerText(), /Being collected|Removed from/);
    assert.match(
      await page.locator('.page-summary').innerText(),
      /4 tracks.*1 being collected · 1 held \(document refused\) · 1 removed from the config/,
    );
    await pages.assertClean(page);
  });

  for (const [track, marker, said] of [
    ['web', 'Being collected', /GitTrack apps\/web was deleted.*failed 2 times in a row/s],
    [
      'api',
      'Document refused',
      /refuses GitTrack apps\/api for now \(spec\.repository: refused\).*nothing syncs it/s,
    ],
    ['retired', 'Removed from config', /"driftless delete --track retired" collects them/],
  ] as const) {
    it(`shows ${track}'s page without actions, saying it is ${marker.toLowerCase()}`, async () => {
      // Act
      const page = await open(`#/tracks/${track}`);
      const notice = page.getByRole('note');
      await notice.waitFor();

      // Assess
      assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), track);
      assert.match(await page.locator('.page-header .badges').innerText(), new RegExp(marker));
      assert.match(await notice.innerText(), said);
      assert.match(await page.locator('.summary').innerText(), /1 in its inventory/);
      assert.equal(await page.getByRole('heading', { name: 'Conditions' }).isVisible(), true);
      assert.equal(await page.getByRole('button', { name: /Sync|Roll back|Suspend/ }).count(), 0);
      assert.equal(await page.getByRole('heading', { name: 'Objects' }).count(), 0);
      await pages.assertClean(page);
    });
  }

  it('still shows a configured track its actions', async () => {
    // Act
    const page = await open('#/tracks/infra');
    const sync = page.getByRole('button', { name: 'Sync now' });
    await sync.waitFor();

    // Assess
    assert.equal(await sync.isEnabled(), true);
    assert.equal(await page.getByRole('note').count(), 0);
  });
});
