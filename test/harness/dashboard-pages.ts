/**
 * The dashboard's page in Chromium over its routes, for browser tests that need no cluster and
 * no Git: the page built from web/ now, the routes (handleDashboard) behind a small HTTP front on
 * a loopback port, every request signed in as one user allowed to act (so any action button the
 * page shows would be enabled).
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { buildWeb } from '../../scripts/build-web.ts';
import { handleDashboard, type DashboardDeps } from '../../src/dashboard/dashboard-routes.ts';
import { directoryAssets } from '../../src/dashboard/web-assets.ts';
import assert from 'node:assert/strict';
import {
  checkAccessibility,
  describeViolations,
  launchBrowser,
  type LaunchedBrowser,
} from './browser.ts';

export interface DashboardPages {
  readonly browser: LaunchedBrowser;
  /** A new page at `#/…` (`hash`), waiting up to 15 s for what a test looks for. */
  open(hash: string): Promise<Page>;
  /** Fails on anything the page logged as a problem, or an accessibility violation. */
  assertClean(page: Page): Promise<void>;
  close(): Promise<void>;
}

async function bodyOf(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Builds the page into `dir`/dist and serves it with `deps` (their `assets` being that build). */
export async function serveDashboardPages(
  dir: string,
  deps: Omit<DashboardDeps, 'assets'>,
): Promise<DashboardPages> {
  const webDir = join(dir, 'dist');
  await buildWeb(webDir);
  const routes: DashboardDeps = { ...deps, assets: directoryAssets(webDir) };
  const server = createServer((request, response) => {
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
            identity: { kind: 'user', name: 'alice' },
          },
          routes,
        ),
      )
      .then((answer) => response.writeHead(answer.status, answer.headers).end(answer.body))
      .catch((error: unknown) => response.writeHead(500).end(String(error)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const browser = await launchBrowser();
  return {
    browser,
    async open(hash) {
      const page = await browser.newPage();
      page.setDefaultTimeout(15_000);
      await page.goto(`${url}/${hash}`);
      return page;
    },
    async assertClean(page) {
      assert.deepEqual(browser.problemsOf(page), []);
      const violations = await checkAccessibility(page);
      assert.deepEqual(violations, [], describeViolations(violations));
    },
    async close() {
      await browser.close();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
