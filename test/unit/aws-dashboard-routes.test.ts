/**
 * Which of the dashboard's API Gateway routes have an authorizer
 * (infra/serverless/config-facts.js, serverless.yml), and what the function
 * answers on a route without one. The page and its assets are the same
 * static files for everyone: under a JWT authorizer they have none, since a
 * browser's navigation carries no token and the page's token form is how
 * one signs in; the API keeps its authorizer, and the function still
 * refuses reads and actions that come without an identity.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { dump, load } from 'js-yaml';
import { createDashboardHandler } from '../../handlers/dashboard.ts';
import type { HttpApiEvent } from '../../src/aws/lambda-events.ts';
import { parseConfig } from '../../src/config/parse-config.ts';
import type { DashboardDeps } from '../../src/dashboard/dashboard-routes.ts';
import { storedObjects } from '../../src/dashboard/read-model.ts';
import { silentLogger } from '../../src/logger.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import type { Job } from '../../src/sync/jobs.ts';
import { packageService } from '../harness/serverless-package.ts';
import { REPO_ROOT } from '../harness/testbin.ts';
// @ts-expect-error: a plain JavaScript module of the packager (no types).
import * as configFacts from '../../infra/serverless/config-facts.js';

const EXAMPLE_CONFIG = 'infra/driftless.example.yaml';
const JWT = {
  type: 'jwt',
  issuer: 'https://login.example.com/realms/ops',
  audience: ['driftless-dashboard'],
};

// CloudFormation JSON and serverless events, read field by field.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

interface RouteEvent {
  readonly httpApi: { method: string; path: string; authorizer?: Json };
}

/** What a config-facts.js variable source answers for a config with this `dashboard:`. */
async function factOf(fact: string, dashboard: Record<string, unknown>): Promise<Json> {
  const dir = await mkdtemp(join(tmpdir(), 'driftless-dashboard-routes-'));
  try {
    const config = join(dir, 'driftless.yaml');
    await writeFile(config, dump({ dashboard }));
    const context = {
      resolveVariable: async (name: string) => {
        assert.equal(name, 'param:config');
        return config;
      },
    };
    return await configFacts[fact](context);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** `METHOD path` -> the authorizer config-facts.js gives the route (`none` without one). */
async function routesFor(dashboard: Record<string, unknown>): Promise<Record<string, string>> {
  const routes = (await factOf('dashboardRoutes', dashboard)) as RouteEvent[];
  return Object.fromEntries(
    routes.map(({ httpApi }) => [
      `${httpApi.method} ${httpApi.path}`,
      httpApi.authorizer === undefined
        ? 'none'
        : (httpApi.authorizer.name ?? httpApi.authorizer.type),
    ]),
  );
}

describe('the dashboard routes’ authorizers', () => {
  it('under a JWT authorizer: the page and assets have none, the API has the JWT authorizer', async () => {
    // Act
    const routes = await routesFor({ authorizer: JWT, readAccess: 'authenticated' });

    // Assess
    assert.deepEqual(routes, {
      'GET /': 'none',
      'GET /assets/{file}': 'none',
      'GET /api/{proxy+}': 'dashboardJwt',
      'POST /api/{proxy+}': 'dashboardJwt',
    });
  });

  it('under a JWT authorizer with open reads: actions have it, and the session, where the token form checks a token', async () => {
    // Act
    const routes = await routesFor({ authorizer: JWT, readAccess: 'open' });

    // Assess: without it on the session, the function never learned who signed in.
    assert.deepEqual(routes, {
      'GET /': 'none',
      'GET /assets/{file}': 'none',
      'GET /api/session': 'dashboardJwt',
      'GET /api/{proxy+}': 'none',
      'POST /api/{proxy+}': 'dashboardJwt',
    });
  });

  it('under IAM (the default): every route is signed, the page too (the signing proxy signs it); with open reads the session and actions stay signed', async () => {
    // Act
    const byDefault = await routesFor({});
    const iam = await routesFor({ authorizer: { type: 'iam' }, readAccess: 'authenticated' });
    const open = await routesFor({ authorizer: { type: 'iam' }, readAccess: 'open' });

    // Assess
    const signed = {
      'GET /': 'aws_iam',
      'GET /assets/{file}': 'aws_iam',
      'GET /api/{proxy+}': 'aws_iam',
      'POST /api/{proxy+}': 'aws_iam',
    };
    assert.deepEqual(byDefault, signed);
    assert.deepEqual(iam, signed);
    // Without it on the session, the function never learned who the signing proxy signed for.
    assert.deepEqual(open, {
      'GET /': 'none',
      'GET /assets/{file}': 'none',
      'GET /api/session': 'aws_iam',
      'GET /api/{proxy+}': 'none',
      'POST /api/{proxy+}': 'aws_iam',
    });
  });
});

describe('the cfn-lint note of the route only some configs have', () => {
  it('notes GET /api/session wherever reads are open, under IAM as under JWT, and nothing elsewhere', async () => {
    // Prepare: the note serverless.yml's extensions give every route that every config has.
    const note = {
      extensions: {
        HttpApiRouteGetApiSession: {
          Metadata: { 'cfn-lint': { config: { ignore_checks: ['W3005'] } } },
        },
      },
    };

    // Act
    const iamOpen = await factOf('dashboardRouteExtensions', { readAccess: 'open' });
    const jwtOpen = await factOf('dashboardRouteExtensions', {
      authorizer: JWT,
      readAccess: 'open',
    });
    const closed = await factOf('dashboardRouteExtensions', { authorizer: JWT });
    const byDefault = await factOf('dashboardRouteExtensions', {});

    // Assess: a note for a route the template lacks would be an extension of nothing.
    assert.deepEqual(iamOpen, note);
    assert.deepEqual(jwtOpen, note);
    assert.deepEqual(closed, {});
    assert.deepEqual(byDefault, {});
  });
});

describe('the packaged template of a JWT dashboard whose reads need sign-in', () => {
  let outDir: string;
  let configDir: string;
  let template: { Resources: Record<string, { Type: string; Properties: Json }> };

  before(
    async () => {
      outDir = await mkdtemp(join(tmpdir(), 'driftless-dashboard-routes-sls-'));
      // Inside the checkout: the package patterns name the config relatively.
      await mkdir(join(REPO_ROOT, '.driftless'), { recursive: true });
      configDir = await mkdtemp(join(REPO_ROOT, '.driftless', 'dashboard-routes-'));
      const config = load(await readFile(join(REPO_ROOT, EXAMPLE_CONFIG), 'utf8')) as Json;
      config.dashboard = { readAccess: 'authenticated', authorizer: JWT };
      const path = join(configDir, 'driftless.yaml');
      await writeFile(path, dump(config));
      template = (await packageService({
        config: relative(REPO_ROOT, path),
        into: outDir,
        scratch: outDir,
        // Its own esbuild folder: the packaging test may rebuild and remove `.esbuild`.
        esbuildWorkFolder: relative(REPO_ROOT, join(configDir, 'esbuild')),
      })) as typeof template;
    },
    { timeout: 20 * 60_000 },
  );

  after(async () => {
    if (outDir) await rm(outDir, { recursive: true, force: true });
    if (configDir) await rm(configDir, { recursive: true, force: true });
  });

  it('lets a browser load the page and assets, and keeps the API behind the issuer’s tokens', () => {
    // Prepare
    const authorizers = Object.entries(template.Resources).filter(
      ([, r]) => r.Type === 'AWS::ApiGatewayV2::Authorizer',
    );
    assert.equal(authorizers.length, 1);
    const [authorizerId] = authorizers[0]!;

    // Act
    const routes = Object.fromEntries(
      Object.values(template.Resources)
        .filter((r) => r.Type === 'AWS::ApiGatewayV2::Route')
        .map((r) => [
          r.Properties.RouteKey as string,
          { type: r.Properties.AuthorizationType, id: r.Properties.AuthorizerId },
        ]),
    );

    // Assess
    assert.deepEqual(routes, {
      'POST /webhook/{provider}': { type: undefined, id: undefined },
      'GET /': { type: undefined, id: undefined },
      'GET /assets/{file}': { type: undefined, id: undefined },
      'GET /api/{proxy+}': { type: 'JWT', id: { Ref: authorizerId } },
      'POST /api/{proxy+}': { type: 'JWT', id: { Ref: authorizerId } },
    });
  });
});

describe('the dashboard function on a route without an authorizer', () => {
  let dir: string;
  let store: FsStore;
  let jobs: Job[];
  const CONFIG = parseConfig(
    `
tracks:
  - name: web
    repository: https://git.example.com/web.git
`,
    'driftless.yaml',
  );
  const deps = async (): Promise<DashboardDeps> => ({
    tracks: async () => CONFIG.tracks,
    state: store,
    artifacts: store,
    queue: { enqueue: async (job) => void jobs.push(job) },
    objects: async (_track, state) => storedObjects(state),
    readAccess: 'authenticated',
    signIn: ['gateway'],
    assets: async (path) =>
      path === 'index.html'
        ? { body: '<!doctype html><title>Driftless</title>', contentType: 'text/html' }
        : path === 'assets/app-1a2b.js'
          ? { body: 'console.log(1)', contentType: 'text/javascript' }
          : undefined,
  });

  /** A request as API Gateway hands it on from a route without an authorizer. */
  const anonymous = (method: string, rawPath: string, headers: Record<string, string> = {}) =>
    ({
      rawPath,
      rawQueryString: '',
      headers: { host: 'dash.example.com', ...headers },
      isBase64Encoded: false,
      body: '',
      requestContext: { requestId: 'req-1', stage: '$default', http: { method } },
    }) satisfies HttpApiEvent;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-dashboard-routes-fn-'));
    store = new FsStore({ path: dir });
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('serves the page and its assets to anyone, and refuses the API’s reads and actions', async () => {
    // Prepare
    jobs = [];
    const handler = createDashboardHandler(deps, silentLogger);
    // A token the gateway did not check (no authorizer on this route) is not an identity.
    const token = { authorization: 'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJtYWxsb3J5In0.' };

    // Act
    const page = await handler(anonymous('GET', '/'));
    const asset = await handler(anonymous('GET', '/assets/app-1a2b.js'));
    const overview = await handler(anonymous('GET', '/api/overview', token));
    const track = await handler(anonymous('GET', '/api/tracks/web', token));
    const action = await handler(
      anonymous('POST', '/api/tracks/web/sync', {
        ...token,
        'content-type': 'application/json',
        origin: 'https://dash.example.com',
      }),
    );

    // Assess
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /<title>Driftless/);
    assert.equal(asset.statusCode, 200);
    assert.equal(asset.body, 'console.log(1)');
    for (const refused of [overview, track, action]) {
      assert.equal(refused.statusCode, 401, refused.body);
      assert.doesNotMatch(refused.body, /web|mallory/);
    }
    assert.deepEqual(jobs, []);
  });
});
