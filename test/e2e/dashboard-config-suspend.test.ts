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
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { buildWeb } from '../../scripts/build-web.ts';
import { parseConfig } from '../../src/config/parse-config.ts';
import { handleDashboard, type DashboardDeps } from '../../src/dashboard/dashboard-routes.ts';
import { storedObjects } from '../../src/dashboard/read-model.ts';
import { directoryAssets } from '../../src/dashboard/web-assets.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import { updateTrackState } from '../../src/sync/track-state.ts';
import { checkAccessibility, describeViolations, launchBrowser } from '../harness/browser.ts';
import type { LaunchedBrowser } from '../harness/browser.ts';

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

async function bodyOf(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

describe('the dashboard page and a track suspended in driftless.yaml', () => {
  let dir: string;
  let server: Server;
  let url: string;
  let browser: LaunchedBrowser;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-dashboard-config-suspend-e2e-'));
    const store = new FsStore({ path: join(dir, 'store') });
    // `held` is suspended as `driftless suspend` leaves it: in its stored state.
    await updateTrackState(store, 'held', (state) => {
      state.suspended = true;
    });
    const webDir = join(dir, 'dist');
    await buildWeb(webDir);
    const deps: DashboardDeps = {
      tracks: async () => CONFIG.tracks,
      state: store,
      artifacts: store,
      queue: { enqueue: async () => assert.fail('no action is queued here') },
      objects: async (_track, state) => storedObjects(state),
      readAccess: 'open',
      signIn: ['basic'],
      assets: directoryAssets(webDir),
    };
    server = createServer((request, response) => {
      const target = new URL(request.url ?? '/', 'http://dash.test');
      bodyOf(request)
        .then((body) =>
          handleDashboard(
            {
              method: request.method ?? 'GET',
              path: target.pathname,
              query: target.searchParams,
              headers: { host: request.headers.host ?? '' },
              body,
              // Signed in and allowed to act: any action button shown would be enabled.
              identity: { kind: 'user', name: 'alice' },
            },
            deps,
          ),
        )
        .then((answer) => response.writeHead(answer.status, answer.headers).end(answer.body))
        .catch((error: unknown) => response.writeHead(500).end(String(error)));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await new Promise((resolve) => server?.close(resolve));
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  async function open(hash: string): Promise<Page> {
    const page = await browser.newPage();
    page.setDefaultTimeout(15_000);
    await page.goto(`${url}/${hash}`);
    return page;
  }

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
    assert.deepEqual(browser.problemsOf(page), []);
    const violations = await checkAccessibility(page);
    assert.deepEqual(violations, [], describeViolations(violations));
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
    assert.deepEqual(browser.problemsOf(page), []);
    const violations = await checkAccessibility(page);
    assert.deepEqual(violations, [], describeViolations(violations));
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
