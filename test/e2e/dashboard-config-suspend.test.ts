/**
 * The dashboard page in Chromium and a track suspended in driftless.yaml (`suspend: true`): the
 * overview and its track page show it Suspended, the tooltip saying the config suspends it and how
 * to lift that, and the page offers neither Resume nor Suspend for it (the dashboard refuses both
 * 409), while a track suspended by `driftless suspend` still offers Resume. A unit-style browser
 * test of the page built from web/ now, over the routes (handleDashboard) and an fs store, behind
 * a small HTTP front: no cluster, no Git.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { parseConfig } from '../../src/config/parse-config.ts';
import { storedObjects } from '../../src/dashboard/read-model.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import { updateTrackState } from '../../src/sync/track-state.ts';
import { serveDashboardPages, type DashboardPages } from '../harness/dashboard-pages.ts';

const CONFIG = parseConfig(
  [
    'tracks:',
    '  - {name: web, repository: https://git.example.com/web.git, namespace: apps, suspend: true}',
    '  - {name: held, repository: https://git.example.com/held.git, namespace: apps}',
    '',
  ].join('\n'),
  'driftless.yaml',
);

const IN_CONFIG = 'suspended in driftless.yaml (suspend: true): remove it there to resume';

describe('the dashboard page and a track suspended in driftless.yaml', () => {
  let dir: string;
  let pages: DashboardPages;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-dashboard-config-suspend-e2e-'));
    const store = new FsStore({ path: join(dir, 'store') });
    // `held` is suspended as `driftless suspend` leaves it: in its stored state.
    await updateTrackState(store, 'held', (state) => {
      state.suspended = true;
    });
    pages = await serveDashboardPages(dir, {
      tracks: async () => CONFIG.tracks,
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
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  const open = (hash: string): Promise<Page> => pages.open(hash);

  const rowOf = (page: Page, track: string) =>
    page.locator('tbody tr').filter({ has: page.getByRole('link', { name: track, exact: true }) });

  it('shows both Suspended on the overview, web as suspended in driftless.yaml', async () => {
    // Act
    const page = await open('#/');
    await rowOf(page, 'held').waitFor();

    // Assess
    const suspended = (track: string) =>
      rowOf(page, track).locator('.badge', { hasText: 'Suspended' });
    assert.equal(await suspended('web').getAttribute('title'), IN_CONFIG);
    assert.match((await suspended('held').getAttribute('title')) ?? '', /until it is resumed/);
    await pages.assertClean(page);
  });

  it("offers no Resume or Suspend on web's page, and says why", async () => {
    // Act
    const page = await open('#/tracks/web');
    const sync = page.getByRole('button', { name: 'Sync now' });
    await sync.waitFor();

    // Assess
    const header = page.locator('.page-header .badges .badge', { hasText: 'Suspended' });
    assert.equal(await header.getAttribute('title'), IN_CONFIG);
    assert.equal(await sync.isEnabled(), true);
    assert.equal(await page.getByRole('button', { name: /^(Resume|Suspend)$/ }).count(), 0);
    assert.match(await page.locator('.actions').innerText(), /remove it there to resume/);
    await pages.assertClean(page);
  });

  it("still offers Resume on the page of a track suspended by 'driftless suspend'", async () => {
    // Act
    const page = await open('#/tracks/held');
    const resume = page.getByRole('button', { name: 'Resume' });
    await resume.waitFor();

    // Assess
    assert.equal(await resume.isEnabled(), true);
    assert.doesNotMatch(await page.locator('.actions').innerText(), /driftless\.yaml/);
  });
});
