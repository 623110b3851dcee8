/**
 * The dashboard page in Chromium behind a JWT-checking gateway, as in AWS
 * under `dashboard.authorizer: {type: jwt}`: the page and its assets have no
 * authorizer (a browser's navigation carries no token), every `/api/*`
 * request does, and the gateway — not the dashboard — answers 401 to one
 * without a valid token.
 *
 * The gateway here is a small HTTP front standing in for API Gateway's JWT
 * check, with the routes infra/serverless/config-facts.js gives the
 * dashboard: it answers 401 to a request of a route with the authorizer
 * without `Authorization: Bearer <TOKEN>` and hands every other request to
 * the real dashboard function (handlers/dashboard.ts) as an HTTP API event,
 * with the token's claims as the authorizer's context on the routes with the
 * authorizer (every `/api/*` one, or under `readAccess: open` the actions
 * and the session). This is a
 * unit-style browser test of the page built from web/ (web/session.ts), not
 * an AWS integration test: no API Gateway, no OIDC issuer, no signed JWT.
 *
 * The same front stands in for API Gateway's IAM check under
 * `{type: iam}` with open reads: it answers 403 to a request of a route
 * with the authorizer that is not signed, and the browser's requests are
 * "signed" by a header every one of them carries, as a SigV4 signing proxy
 * (aws-sigv4-proxy) in front of the browser would sign them.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { createDashboardHandler } from '../../handlers/dashboard.ts';
import { buildWeb } from '../../scripts/build-web.ts';
import type { HttpApiEvent } from '../../src/aws/lambda-events.ts';
import { parseConfig } from '../../src/config/parse-config.ts';
import type { DashboardDeps } from '../../src/dashboard/dashboard-routes.ts';
import { storedObjects } from '../../src/dashboard/read-model.ts';
import { directoryAssets } from '../../src/dashboard/web-assets.ts';
import { silentLogger } from '../../src/logger.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import type { Job } from '../../src/sync/jobs.ts';
import { launchBrowser, type LaunchedBrowser } from '../harness/browser.ts';
// @ts-expect-error: a plain JavaScript module of the packager (no types).
import * as configFacts from '../../infra/serverless/config-facts.js';

/** The token the gateway accepts; its issuer would have signed it. */
const TOKEN = `issuer-token-${randomBytes(12).toString('hex')}`;
/** The claim a JWT authorizer hands on, which the dashboard shows as the user. */
const USER = 'alice@example.com';
/** The signature the signing proxy adds to every request, which the IAM gateway accepts. */
const SIGNATURE = `AWS4-HMAC-SHA256 Credential=ASIAEXAMPLE/${randomBytes(6).toString('hex')}`;
/** The IAM principal that signature is of, and the name the dashboard shows for it. */
const IAM_ARN = 'arn:aws:sts::123456789012:assumed-role/Ops/alice';
const IAM_USER = 'Ops/alice';
/** Where the page keeps the Authorization header it sends (web/api.ts). */
const AUTHORIZATION_KEY = 'driftless.authorization';

/** What the page's functions below use of its window (this file has no DOM types). */
interface InPage {
  readonly sessionStorage: {
    getItem(key: string): string | null;
    setItem(key: string, value: string): void;
  };
}

/** The Authorization header value the page stored for its tab. */
function storedAuthorization(page: Page): Promise<string | null> {
  return page.evaluate(
    (key) => (globalThis as unknown as InPage).sessionStorage.getItem(key),
    AUTHORIZATION_KEY,
  );
}

const CONFIG = parseConfig(
  `
tracks:
  - name: web
    repository: https://git.example.com/web.git
  - name: api
    repository: https://git.example.com/api.git
`,
  'driftless.yaml',
);

async function bodyOf(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Lower-case names, repeated headers joined with commas, as API Gateway hands them on. */
function headersOf(request: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  return headers;
}

/** A dashboard route as API Gateway has it, and whether it has the JWT authorizer. */
interface Route {
  readonly method: string;
  readonly path: RegExp;
  /** A path without `{...}`, which API Gateway prefers to a greedy one. */
  readonly exact: boolean;
  readonly authorized: boolean;
}

/** The dashboard's routes that config-facts.js gives serverless.yml for this `dashboard:`. */
async function dashboardRoutes(dir: string, dashboard: Record<string, unknown>): Promise<Route[]> {
  const type = String((dashboard['authorizer'] as { type?: string } | undefined)?.type ?? 'iam');
  const config = join(dir, `driftless-${type}-${String(dashboard['readAccess'])}.yaml`);
  await writeFile(config, dump({ dashboard }));
  const events = (await configFacts.dashboardRoutes({
    resolveVariable: async () => config,
  })) as { httpApi: { method: string; path: string; authorizer?: unknown } }[];
  return events.map(({ httpApi }) => ({
    method: httpApi.method,
    path: new RegExp(
      `^${httpApi.path.replace(/\{[^}]+\+\}/g, '.+').replace(/\{[^}]+\}/g, '[^/]+')}$`,
    ),
    exact: !httpApi.path.includes('{'),
    authorized: httpApi.authorizer !== undefined,
  }));
}

/** The route API Gateway picks: the most specific one (an exact path before a greedy one). */
function routeOf(routes: readonly Route[], method: string, path: string): Route | undefined {
  const matching = routes.filter((route) => route.method === method && route.path.test(path));
  return matching.find((route) => route.exact) ?? matching[0];
}

interface Gateway {
  readonly url: string;
  /** The token the gateway accepts from now on (its issuer's keys changed, the token expired). */
  accept(token: string): void;
  /** A valid token the JWT authorizer answers 403 from now on (it lacks the route's scopes). */
  forbid(token: string): void;
  close(): Promise<void>;
}

/** The check the gateway stands in for: a token (JWT authorizer) or a signature (IAM). */
type Check = 'jwt' | 'iam';

async function startGateway(
  deps: DashboardDeps,
  routes: readonly Route[],
  check: Check = 'jwt',
): Promise<Gateway> {
  const handler = createDashboardHandler(async () => deps, silentLogger);
  let accepted = TOKEN;
  let forbidden: string | undefined;
  const answer = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const url = new URL(request.url ?? '/', 'http://gateway');
    const body = await bodyOf(request);
    const route = routeOf(routes, request.method ?? 'GET', url.pathname);
    if (route === undefined) {
      response.writeHead(404, { 'Content-Type': 'application/json' });
      response.end('{"message":"Not Found"}');
      return;
    }
    const authorized = route.authorized;
    if (check === 'iam' && authorized && request.headers.authorization !== SIGNATURE) {
      // What API Gateway's IAM authorizer answers to an unsigned request; the function never runs.
      response.writeHead(403, { 'Content-Type': 'application/json' });
      response.end('{"message":"Forbidden"}');
      return;
    }
    if (
      check === 'jwt' &&
      authorized &&
      forbidden !== undefined &&
      request.headers.authorization === `Bearer ${forbidden}`
    ) {
      // What API Gateway's JWT authorizer answers a valid token without the route's scopes.
      response.writeHead(403, { 'Content-Type': 'application/json' });
      response.end('{"message":"Forbidden"}');
      return;
    }
    if (check === 'jwt' && authorized && request.headers.authorization !== `Bearer ${accepted}`) {
      // What API Gateway's JWT authorizer answers; the function never runs.
      response.writeHead(401, { 'Content-Type': 'application/json' });
      response.end('{"message":"Unauthorized"}');
      return;
    }
    const caller =
      check === 'iam'
        ? { iam: { userArn: IAM_ARN, accountId: '123456789012' } }
        : { jwt: { claims: { email: USER }, scopes: null } };
    const event: HttpApiEvent = {
      rawPath: url.pathname,
      rawQueryString: url.search.replace(/^\?/, ''),
      headers: headersOf(request),
      body,
      isBase64Encoded: false,
      requestContext: {
        requestId: randomBytes(8).toString('hex'),
        stage: '$default',
        http: { method: request.method ?? 'GET', path: url.pathname },
        // A route with the authorizer puts the token's claims or the signer here; one without,
        // nothing.
        ...(authorized ? { authorizer: caller } : {}),
      },
    };
    const result = await handler(event);
    response.writeHead(result.statusCode, result.headers);
    response.end(result.isBase64Encoded ? Buffer.from(result.body, 'base64') : result.body);
  };
  const server: Server = createServer((request, response) => {
    answer(request, response).catch((error: unknown) => {
      response.writeHead(502).end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    accept: (token) => {
      accepted = token;
    },
    forbid: (token) => {
      forbidden = token;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The header's session area once loadSession() has answered (it is empty before). */
async function settledSession(page: Page): Promise<string> {
  const area = page.locator('header .session');
  await area.locator(':scope > *').first().waitFor();
  return (await area.innerText()).trim();
}

const trackLink = (page: Page, track: string) =>
  page.getByRole('link', { name: track, exact: true });

describe('the dashboard page behind a gateway that checks tokens (JWT authorizer)', () => {
  let dir: string;
  /** `readAccess: authenticated`: every API route has the authorizer. */
  let gateway: Gateway;
  /** `readAccess: open`: only the actions and the session have it. */
  let openGateway: Gateway;
  /** What the open gateway's dashboard queued. */
  const queued: Job[] = [];
  let browser: LaunchedBrowser;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-dashboard-gateway-'));
    // The page as built from web/ now, not whatever dist/web holds.
    const webDir = join(dir, 'web');
    await buildWeb(webDir);
    const store = new FsStore({ path: join(dir, 'store') });
    const deps = (readAccess: 'open' | 'authenticated'): DashboardDeps => ({
      tracks: async () => CONFIG.tracks,
      state: store,
      artifacts: store,
      queue: {
        enqueue: async (job) =>
          readAccess === 'open' ? void queued.push(job) : assert.fail('no action here'),
      },
      objects: async (_track, state) => storedObjects(state),
      // As the dashboard function is configured under a JWT authorizer (aws/function-deps.ts).
      readAccess,
      signIn: ['gateway'],
      assets: directoryAssets(webDir),
    });
    const jwt = { type: 'jwt', issuer: 'https://login.example.com', audience: ['driftless'] };
    gateway = await startGateway(
      deps('authenticated'),
      await dashboardRoutes(dir, { authorizer: jwt, readAccess: 'authenticated' }),
    );
    openGateway = await startGateway(
      deps('open'),
      await dashboardRoutes(dir, { authorizer: jwt, readAccess: 'open' }),
    );
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await gateway?.close();
    await openGateway?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** A fresh tab (its own sessionStorage) on the page, once the session area has been drawn. */
  async function openPage(url = gateway.url): Promise<Page> {
    const page = await browser.newPage();
    page.setDefaultTimeout(15_000);
    await page.goto(`${url}/`);
    await settledSession(page);
    return page;
  }

  /** Opens the header's sign-in and returns the dialog, asserting it asks for a token. */
  async function tokenForm(page: Page) {
    assert.equal(await settledSession(page), 'Sign in', 'the header offers to sign in');
    await page.locator('header').getByRole('button', { name: 'Sign in' }).click();
    const dialog = page.getByRole('dialog', { name: 'Sign in to Driftless' });
    await dialog.waitFor();
    const token = dialog.getByLabel('Token');
    assert.equal(
      await token.count(),
      1,
      `the dialog has a token field:\n${await dialog.innerText()}`,
    );
    assert.match(await dialog.innerText(), /OIDC token of the API gateway's issuer/);
    assert.equal(await dialog.getByLabel('Password').count(), 0);
    return { dialog, token };
  }

  async function signIn(page: Page): Promise<void> {
    const { dialog, token } = await tokenForm(page);
    await token.fill(TOKEN);
    await dialog.getByRole('button', { name: 'Sign in' }).click();
    await dialog.waitFor({ state: 'detached' });
  }

  /** What the page reported other than the 401s of the API, which these tests provoke. */
  const unexpectedProblems = (page: Page) =>
    browser
      .problemsOf(page)
      .filter((problem) => !(problem.kind === 'resource' && /\/api\//.test(problem.url ?? '')));

  it('loads the page, shows the token form, and shows the tracks once the token is accepted', async () => {
    // Prepare
    const page = await openPage();

    // Act
    await signIn(page);

    // Assess: the gateway's claim is the user; the tracks come from the dashboard's API.
    assert.deepEqual((await settledSession(page)).split('\n'), [
      `Signed in as ${USER}`,
      'Sign out',
    ]);
    await trackLink(page, 'web').waitFor();
    await trackLink(page, 'api').waitFor();
    assert.equal(await storedAuthorization(page), `Bearer ${TOKEN}`);
    assert.deepEqual(unexpectedProblems(page), []);
  });

  it('drops a stored token the gateway refuses later, and shows the token form again', async () => {
    // Prepare: the token stored as an earlier sign-in in this tab left it, accepted at first;
    // then the gateway stops accepting it (it expired).
    const page = await openPage();
    await page.evaluate(
      ([key, value]) => (globalThis as unknown as InPage).sessionStorage.setItem(key!, value!),
      [AUTHORIZATION_KEY, `Bearer ${TOKEN}`],
    );
    await page.reload();
    assert.match(await settledSession(page), new RegExp(`^Signed in as ${USER}`));
    await trackLink(page, 'web').waitFor();
    gateway.accept(`issuer-token-${randomBytes(12).toString('hex')}`);

    try {
      // Act
      await page.reload();

      // Assess
      await settledSession(page);
      assert.equal(await storedAuthorization(page), null, 'the refused token is no longer stored');
      assert.equal(await settledSession(page), 'Sign in');
      await page.getByText('Sign in to see this dashboard').waitFor();
      assert.equal(await trackLink(page, 'web').count(), 0);
      await tokenForm(page);
      assert.deepEqual(unexpectedProblems(page), []);
    } finally {
      gateway.accept(TOKEN);
    }
  });
  it('keeps the token form for a token the gateway refuses with 403 (missing scopes), never the IAM hint', async () => {
    // Prepare: a token stored in this tab that the authorizer knows but refuses (403).
    const scopeless = `scopeless-${randomBytes(8).toString('hex')}`;
    openGateway.forbid(scopeless);
    const page = await openPage(openGateway.url);
    await page.evaluate(
      ([key, value]) => (globalThis as unknown as InPage).sessionStorage.setItem(key!, value!),
      [AUTHORIZATION_KEY, `Bearer ${scopeless}`],
    );

    // Act
    await page.reload();

    // Assess: the open reads, and the token form again, not the SigV4 proxy's hint.
    await trackLink(page, 'web').waitFor();
    assert.equal(await settledSession(page), 'Sign in');
    assert.equal(await page.getByText('SigV4 signing proxy').count(), 0);
    await tokenForm(page);
  });

  it('with open reads: shows the tracks to anyone, accepts the token, then shows the user and acts', async () => {
    // Prepare
    const page = await openPage(openGateway.url);
    queued.length = 0;

    // Act 1: anonymous
    await trackLink(page, 'web').waitFor();
    const anonymous = await settledSession(page);

    // Assess 1: open reads are shown, and the header offers the token form.
    assert.equal(anonymous, 'Sign in');
    await trackLink(page, 'api').waitFor();
    assert.equal(await page.getByText('Sign in to see this dashboard').count(), 0);

    // Act 2: sign in with the token, then sync a track
    await signIn(page);
    const signedIn = await settledSession(page);
    await trackLink(page, 'web').click();
    const sync = page.getByRole('button', { name: 'Sync now' });
    await sync.waitFor();
    // Enabled once the session names someone who may act.
    await page.locator('.action-buttons button.primary:not([disabled])').waitFor();
    await sync.click();
    const confirm = page.getByRole('dialog');
    await confirm.getByRole('button', { name: 'Sync', exact: true }).click();
    await page.getByText(`queued by ${USER}`, { exact: false }).waitFor();

    // Assess 2: the gateway's claim is the user, and the action was queued in their name.
    assert.deepEqual(signedIn.split('\n'), [`Signed in as ${USER}`, 'Sign out']);
    assert.equal(await storedAuthorization(page), `Bearer ${TOKEN}`);
    assert.deepEqual(
      queued.map((job) => [job.type, 'track' in job ? job.track : undefined]),
      [['fetch', 'web']],
    );
    assert.deepEqual(unexpectedProblems(page), []);
  });
});

describe('the dashboard page behind a gateway that checks signatures (IAM), with open reads', () => {
  let dir: string;
  let gateway: Gateway;
  /** What the dashboard queued. */
  const queued: Job[] = [];
  let browser: LaunchedBrowser;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-dashboard-iam-'));
    // The page as built from web/ now, not whatever dist/web holds.
    const webDir = join(dir, 'web');
    await buildWeb(webDir);
    const store = new FsStore({ path: join(dir, 'store') });
    gateway = await startGateway(
      {
        tracks: async () => CONFIG.tracks,
        state: store,
        artifacts: store,
        queue: { enqueue: async (job) => void queued.push(job) },
        objects: async (_track, state) => storedObjects(state),
        // As the dashboard function is configured in AWS (aws/function-deps.ts).
        readAccess: 'open',
        signIn: ['gateway'],
        assets: directoryAssets(webDir),
      },
      await dashboardRoutes(dir, { authorizer: { type: 'iam' }, readAccess: 'open' }),
      'iam',
    );
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await gateway?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** A fresh tab on the page, signed by the proxy or not, once the session area is drawn. */
  async function openPage(signed: boolean): Promise<Page> {
    const page = await browser.newPage(
      signed ? { extraHTTPHeaders: { authorization: SIGNATURE } } : {},
    );
    page.setDefaultTimeout(15_000);
    await page.goto(`${gateway.url}/`);
    await settledSession(page);
    return page;
  }

  /** What the page reported other than the gateway's refusals of the API, which it expects. */
  const unexpectedProblems = (page: Page) =>
    browser
      .problemsOf(page)
      .filter((problem) => !(problem.kind === 'resource' && /\/api\//.test(problem.url ?? '')));

  it('through the signing proxy: names the signer and runs actions in their name', async () => {
    // Prepare
    queued.length = 0;
    const page = await openPage(true);

    // Act 1
    const session = await settledSession(page);

    // Assess 1: the session route's authorizer named the signer (no sign-out: the proxy signs).
    assert.equal(session, `Signed in as ${IAM_USER}`);

    // Act 2: sync a track
    await trackLink(page, 'web').click();
    const sync = page.getByRole('button', { name: 'Sync now' });
    await sync.waitFor();
    await page.locator('.action-buttons button.primary:not([disabled])').waitFor();
    await sync.click();
    await page.getByRole('dialog').getByRole('button', { name: 'Sync', exact: true }).click();
    await page.getByText(`queued by ${IAM_USER}`, { exact: false }).waitFor();

    // Assess 2: queued in the signer's name.
    assert.deepEqual(
      queued.map((job) => [job.type, 'track' in job ? job.track : undefined]),
      [['fetch', 'web']],
    );
    assert.deepEqual(unexpectedProblems(page), []);
  });

  it('without a signature: shows the tracks read-only and says to sign in through the proxy', async () => {
    // Prepare
    queued.length = 0;
    const page = await openPage(false);

    // Act
    const session = await settledSession(page);
    await trackLink(page, 'api').waitFor();
    await trackLink(page, 'web').click();
    const sync = page.getByRole('button', { name: 'Sync now' });
    await sync.waitFor();
    const reason = page.locator('.actions-reason');
    await reason.waitFor();

    // Assess: the gateway's 403 for the session is no broken page and no token form.
    const hint = 'Open this dashboard through your SigV4 signing proxy (AWS IAM) to sign in.';
    assert.equal(session, `Not signed in ${hint}`);
    assert.equal(await page.getByText('Session unknown').count(), 0);
    assert.equal(await page.getByText('Sign in to see this dashboard').count(), 0);
    assert.equal(await page.getByRole('button', { name: 'Sign in' }).count(), 0);
    assert.equal(await sync.isDisabled(), true);
    assert.equal(await page.locator('.action-buttons button:not([disabled])').count(), 0);
    assert.equal((await reason.innerText()).trim(), `Sign in to run actions. ${hint}`);
    assert.deepEqual(queued, []);
    assert.deepEqual(unexpectedProblems(page), []);
  });
});
