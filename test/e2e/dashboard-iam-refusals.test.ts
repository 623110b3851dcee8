/**
 * Which 403 the dashboard page takes for API Gateway's IAM authorizer, in Chromium. A page that
 * holds no token and is refused `api/session` with 403 shows the SigV4 signing proxy's hint only
 * when the refusal is IAM's, as API Gateway words it (the `x-amzn-errortype` header, the JSON
 * `message`; web/session.ts cites where); any other 403 — the dashboard's own refusal, a proxy's
 * page, another JSON answer — is shown as it is ("Session unknown: ...").
 *
 * A small front serves the page built from web/ and the real dashboard routes
 * (handleDashboard), and answers `api/session` with the refusal each test gives it. A
 * unit-style browser test of web/session.ts: no API Gateway, no signing proxy.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
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
import { launchBrowser, type LaunchedBrowser } from '../harness/browser.ts';

const HINT = 'Open this dashboard through your SigV4 signing proxy (AWS IAM) to sign in.';

/** How the front refuses `api/session`. */
interface Refusal {
  readonly headers: Record<string, string>;
  readonly body: string;
}

const CONFIG = parseConfig(
  'tracks: [{name: web, repository: https://git.example.com/web.git}]',
  'driftless.yaml',
);

/** Lower-case names, repeated headers joined with commas. */
function headersOf(request: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  return headers;
}

describe('the dashboard page refused its session with 403, holding no token', () => {
  let dir: string;
  let server: Server;
  let url: string;
  let browser: LaunchedBrowser;
  /** What the front answers `api/session` now. */
  let refusal: Refusal;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-dashboard-iam-refusals-'));
    // The page as built from web/ now, not whatever dist/web holds.
    const webDir = join(dir, 'web');
    await buildWeb(webDir);
    const store = new FsStore({ path: join(dir, 'store') });
    const deps: DashboardDeps = {
      tracks: async () => CONFIG.tracks,
      state: store,
      artifacts: store,
      queue: { enqueue: async () => assert.fail('no action here') },
      objects: async (_track, state) => storedObjects(state),
      readAccess: 'open',
      signIn: ['gateway'],
      assets: directoryAssets(webDir),
    };
    const answer = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
      const target = new URL(request.url ?? '/', 'http://front');
      if (target.pathname === '/api/session') {
        response.writeHead(403, refusal.headers);
        response.end(refusal.body);
        return;
      }
      const result = await handleDashboard(
        {
          method: request.method ?? 'GET',
          path: target.pathname,
          query: target.searchParams,
          headers: headersOf(request),
          body: '',
          identity: { kind: 'anonymous' },
        },
        deps,
      );
      response.writeHead(result.status, result.headers);
      response.end(result.body);
    };
    server = createServer((request, response) => {
      answer(request, response).catch((error: unknown) => {
        response.writeHead(502).end(String(error));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await new Promise((resolve) => server?.close(resolve));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** The header's session area of a fresh tab once loadSession() has answered `given`. */
  async function sessionShown(given: Refusal): Promise<{ page: Page; text: string }> {
    refusal = given;
    const page = await browser.newPage();
    page.setDefaultTimeout(15_000);
    await page.goto(url);
    const area = page.locator('header .session');
    await area.locator(':scope > *').first().waitFor();
    // The page's reads are open: the track list comes whatever the session said.
    await page.getByRole('link', { name: 'web', exact: true }).waitFor();
    return { page, text: (await area.innerText()).trim() };
  }

  const json = { 'Content-Type': 'application/json' };

  for (const [name, given] of [
    [
      'a REST API: Missing Authentication Token, by its error type',
      {
        headers: {
          ...json,
          'x-amzn-ErrorType':
            'MissingAuthenticationTokenException:http://internal.amazon.com/coral/com.amazon.coral.service/',
        },
        body: '{"message":"Missing Authentication Token"}',
      },
    ],
    [
      'a signature that is not whole: IncompleteSignatureException',
      {
        headers: { ...json, 'x-amzn-errortype': 'IncompleteSignatureException' },
        body: `{"message":"Authorization header requires 'Credential' parameter."}`,
      },
    ],
    [
      'the message alone, without the header',
      { headers: json, body: '{"message":"Missing Authentication Token"}' },
    ],
    ['an HTTP API: Forbidden', { headers: json, body: '{"message":"Forbidden"}' }],
  ] as const) {
    it(`takes IAM's refusal as IAM's (${name}): the signing proxy's hint`, async () => {
      // Act
      const { page, text } = await sessionShown(given);

      // Assess
      assert.equal(text, `Not signed in ${HINT}`);
      assert.equal(await page.getByText('Session unknown').count(), 0);
    });
  }

  for (const [name, given, shown] of [
    [
      "the dashboard's own refusal",
      { headers: json, body: '{"error":"role viewer may not read the session"}' },
      'Session unknown: role viewer may not read the session',
    ],
    [
      "a proxy's page",
      {
        headers: { 'Content-Type': 'text/html' },
        body: '<html><body>Blocked by the office proxy</body></html>\n',
      },
      'Session unknown: 403 Forbidden: <html><body>Blocked by the office proxy</body></html>',
    ],
    [
      'JSON of another refusal, and an error type IAM does not answer with',
      {
        headers: { ...json, 'x-amzn-errortype': 'AccessDeniedException' },
        body: '{"message":"User is not authorized to access this resource with an explicit deny"}',
      },
      'Session unknown: 403 Forbidden: {"message":"User is not authorized to access this resource with an explicit deny"}',
    ],
  ] as const) {
    it(`shows any other 403 as it is (${name}), not IAM's hint`, async () => {
      // Act
      const { page, text } = await sessionShown(given);

      // Assess
      assert.equal(text, shown);
      assert.equal(await page.getByText('SigV4 signing proxy').count(), 0);
      assert.equal(await page.getByRole('button', { name: 'Sign in' }).count(), 0);
    });
  }
});
