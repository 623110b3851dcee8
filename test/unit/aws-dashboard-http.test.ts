/**
 * The dashboard function's HTTP adapter (src/aws/dashboard-http.ts) and its
 * handler: API Gateway HTTP API (payload 2.0) events in, results out, and
 * the caller taken from the authorizer only.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { createDashboardHandler } from '../../handlers/dashboard.ts';
import {
  dashboardPathOf,
  dashboardRequestOf,
  dashboardResultOf,
  MAX_RESULT_BODY_BYTES,
  identityOf,
  packagedWebDir,
  principalName,
} from '../../src/aws/dashboard-http.ts';
import type { HttpApiEvent } from '../../src/aws/lambda-events.ts';
import { dashboardDeps } from '../../src/aws/function-deps.ts';
import { SqsJobQueue } from '../../src/aws/sqs-job-queue.ts';
import type { SendMessageCommand } from '@aws-sdk/client-sqs';
import { parseConfig } from '../../src/config/parse-config.ts';
import type { DashboardDeps } from '../../src/dashboard/dashboard-routes.ts';
import { storedObjects } from '../../src/dashboard/read-model.ts';
import { silentLogger, type Logger } from '../../src/logger.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import type { Job } from '../../src/sync/jobs.ts';

/** An HTTP API event as API Gateway sends it ($default stage unless told). */
function event(fields: Partial<HttpApiEvent> & { method?: string } = {}): HttpApiEvent {
  const { method = 'GET', requestContext, ...rest } = fields;
  return {
    rawPath: '/',
    rawQueryString: '',
    headers: { host: 'abc123.execute-api.eu-west-1.amazonaws.com' },
    isBase64Encoded: false,
    ...rest,
    requestContext: {
      requestId: 'req-1',
      stage: '$default',
      domainName: 'abc123.execute-api.eu-west-1.amazonaws.com',
      http: { method },
      ...requestContext,
    },
  };
}

const IAM_ALICE = { iam: { userArn: 'arn:aws:sts::123456789012:assumed-role/Ops/alice' } };

describe('dashboard identity from the authorizer', () => {
  it('names an IAM principal by its role and session, or its user name', () => {
    // Act / Assess
    assert.equal(principalName('arn:aws:sts::1:assumed-role/Ops/alice'), 'Ops/alice');
    assert.equal(
      principalName(
        'arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Admin_0a1b/bob@example.com',
      ),
      'AWSReservedSSO_Admin_0a1b/bob@example.com',
    );
    assert.equal(principalName('arn:aws:iam::123456789012:user/carol'), 'carol');
    assert.equal(principalName('arn:aws:iam::123456789012:user/team/dave'), 'team/dave');
    assert.equal(principalName('arn:aws-cn:sts::123456789012:federated-user/erin'), 'erin');
    assert.equal(principalName('arn:aws:iam::123456789012:root'), 'root');
    assert.equal(principalName('AIDAEXAMPLE'), 'AIDAEXAMPLE');
  });

  it('takes the IAM authorizer’s principal', () => {
    // Act
    const identity = identityOf(IAM_ALICE);

    // Assess
    assert.deepEqual(identity, { kind: 'user', name: 'Ops/alice' });
    assert.deepEqual(identityOf({ iam: { userId: 'AROAEXAMPLE:alice' } }), {
      kind: 'user',
      name: 'AROAEXAMPLE:alice',
    });
  });

  it('takes a JWT’s email, else preferred_username, else sub', () => {
    // Act / Assess
    const claims = { sub: '5f3c', preferred_username: 'alice', email: 'alice@example.com' };
    assert.deepEqual(identityOf({ jwt: { claims } }), {
      kind: 'user',
      name: 'alice@example.com',
    });
    assert.deepEqual(identityOf({ jwt: { claims: { ...claims, email: '' } } }), {
      kind: 'user',
      name: 'alice',
    });
    assert.deepEqual(identityOf({ jwt: { claims: { sub: '5f3c' }, scopes: null } }), {
      kind: 'user',
      name: '5f3c',
    });
  });

  it('refuses a validated token that names nobody, and is anonymous without an authorizer', () => {
    // Act
    const nameless = identityOf({ jwt: { claims: { iss: 'https://login.example.com' } } });

    // Assess
    assert.equal(nameless.kind, 'anonymous');
    assert.match(nameless.kind === 'anonymous' ? (nameless.refused ?? '') : '', /email/);
    assert.deepEqual(identityOf(undefined), { kind: 'anonymous' });
    assert.deepEqual(identityOf({}), { kind: 'anonymous' });
  });

  it('never takes identity from what the client sends', () => {
    // Prepare: a route without an authorizer (readAccess: open) and headers claiming a user.
    const request = dashboardRequestOf(
      event({
        headers: {
          Authorization: `Basic ${Buffer.from('alice:secret').toString('base64')}`,
          'X-Forwarded-User': 'alice',
          'X-Amzn-Oidc-Identity': 'alice',
        },
      }),
    );

    // Assess
    assert.deepEqual(request.identity, { kind: 'anonymous' });
    assert.equal(request.headers['authorization'], undefined, 'Authorization is not passed on');
  });
});

describe('dashboard request and response translation', () => {
  it('turns an event into the routes’ request', () => {
    // Act
    const request = dashboardRequestOf(
      event({
        method: 'post',
        rawPath: '/api/tracks/web/rollback',
        rawQueryString: 'from=a&to=b%2Bc',
        headers: {
          Host: 'dash.example.com',
          'Content-Type': 'application/json',
          Origin: 'https://dash.example.com',
        },
        cookies: ['a=1', 'b=2'],
        body: '{"previous":true}',
        requestContext: { authorizer: IAM_ALICE },
      }),
    );

    // Assess
    assert.equal(request.method, 'POST');
    assert.equal(request.path, '/api/tracks/web/rollback');
    assert.equal(request.query.get('from'), 'a');
    assert.equal(request.query.get('to'), 'b+c');
    assert.deepEqual(request.headers, {
      host: 'dash.example.com',
      'content-type': 'application/json',
      origin: 'https://dash.example.com',
      cookie: 'a=1; b=2',
    });
    assert.equal(request.body, '{"previous":true}');
    assert.deepEqual(request.identity, { kind: 'user', name: 'Ops/alice' });
  });

  it('decodes a base64 body', () => {
    // Act
    const request = dashboardRequestOf(
      event({
        method: 'POST',
        body: Buffer.from('{"revision":"é"}', 'utf8').toString('base64'),
        isBase64Encoded: true,
      }),
    );

    // Assess
    assert.equal(request.body, '{"revision":"é"}');
    assert.equal(dashboardRequestOf(event({ body: undefined })).body, '');
  });

  it('removes a named stage’s prefix from the path, and only that', () => {
    // Act / Assess
    const at = (rawPath: string, stage: string) =>
      dashboardPathOf(event({ rawPath, requestContext: { stage } }));
    assert.equal(at('/prod/api/tracks', 'prod'), '/api/tracks');
    assert.equal(at('/prod', 'prod'), '/');
    assert.equal(at('/prod/', 'prod'), '/');
    assert.equal(at('/production/api', 'prod'), '/production/api');
    assert.equal(at('/api/tracks', '$default'), '/api/tracks');
    assert.equal(at('/prod/api/tracks', '$default'), '/prod/api/tracks');
    assert.equal(
      dashboardPathOf({ requestContext: { http: { path: '/assets/app.js' } } }),
      '/assets/app.js',
    );
    assert.equal(dashboardPathOf({}), '/');
  });

  it('takes the host from the request context when the headers lack it', () => {
    // Act
    const request = dashboardRequestOf(event({ headers: {} }));

    // Assess
    assert.equal(request.headers['host'], 'abc123.execute-api.eu-west-1.amazonaws.com');
  });

  it('turns the routes’ response into a text result', () => {
    // Act
    const result = dashboardResultOf({
      status: 202,
      headers: { 'Content-Type': 'application/json; charset=utf-8' },
      body: '{"queued":true}\n',
    });

    // Assess
    assert.deepEqual(result, {
      statusCode: 202,
      headers: { 'Content-Type': 'application/json; charset=utf-8' },
      body: '{"queued":true}\n',
      isBase64Encoded: false,
    });
  });
});

describe('large dashboard answers in Lambda', () => {
  // A revision's manifests for a track of ~12,000 objects: 10 MB of YAML.
  const manifests = Array.from(
    { length: 12_000 },
    (_, i) =>
      `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings-${i}\n  namespace: apps\ndata:\n  value: "${'x'.repeat(700)}"\n`,
  ).join('---\n');
  const answer = {
    status: 200,
    headers: { 'Content-Type': 'application/yaml; charset=utf-8' },
    body: manifests,
  };
  const path = `/api/tracks/web/revisions/${'a'.repeat(40)}/manifests`;

  it('gzips an answer over Lambda’s 6 MB for a client that takes gzip', () => {
    // Act
    const result = dashboardResultOf(answer, { path, headers: { 'accept-encoding': 'gzip, br' } });

    // Assess
    assert.ok(Buffer.byteLength(manifests) > 6_000_000);
    assert.equal(result.statusCode, 200);
    assert.equal(result.isBase64Encoded, true);
    assert.equal(result.headers?.['Content-Encoding'], 'gzip');
    assert.ok(result.body.length <= MAX_RESULT_BODY_BYTES, `${result.body.length}`);
    assert.equal(gunzipSync(Buffer.from(result.body, 'base64')).toString('utf8'), manifests);
  });

  it('refuses one it cannot return, naming its size, and leaves a small one as it is', () => {
    // Act
    const refused = dashboardResultOf(answer, { path, headers: {} });
    // 3 MB of quotes and newlines: 6 MB once escaped in Lambda's JSON result.
    const escaped = dashboardResultOf(
      { status: 200, headers: {}, body: '"\n'.repeat(1_500_000) },
      { path, headers: {} },
    );
    const small = dashboardResultOf(
      { status: 200, headers: {}, body: 'kind: ConfigMap\n' },
      { path, headers: { 'accept-encoding': 'gzip' } },
    );

    // Assess
    assert.equal(refused.statusCode, 413);
    assert.equal(escaped.statusCode, 413);
    assert.match(
      JSON.parse(refused.body).error,
      /^the answer to \/api\/tracks\/web\/revisions\/a{40}\/manifests is \d+\.\d MB, more than the dashboard function can return \(6 MB\)/,
    );
    assert.deepEqual(small, {
      statusCode: 200,
      headers: {},
      body: 'kind: ConfigMap\n',
      isBase64Encoded: false,
    });
  });
});

describe('the built UI in the deployment package', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-dashboard-package-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('is found beside the bundle (LAMBDA_TASK_ROOT), else in the working directory', async () => {
    // Prepare: the zip's layout, unpacked; and a working directory of serverless-offline.
    const task = join(dir, 'task');
    const cwd = join(dir, 'repo');
    for (const root of [task, cwd]) {
      await mkdir(join(root, 'dist', 'web'), { recursive: true });
      await writeFile(join(root, 'dist', 'web', 'index.html'), '<!doctype html>');
    }
    const elsewhere = join(dir, 'build', 'handlers', 'offline', 'dashboard.mjs');

    // Act / Assess
    assert.equal(
      packagedWebDir(join(task, 'handlers', 'dashboard.mjs'), cwd),
      join(task, 'dist', 'web'),
    );
    assert.equal(packagedWebDir(elsewhere, cwd), join(cwd, 'dist', 'web'));
    assert.equal(packagedWebDir(elsewhere, join(dir, 'build')), undefined);
  });
});

describe('dashboard handler', () => {
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
  const deps =
    (overrides: Partial<DashboardDeps> = {}) =>
    async (): Promise<DashboardDeps> => ({
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
          : undefined,
      ...overrides,
    });

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-dashboard-handler-'));
    store = new FsStore({ path: dir });
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('queues an action as the IAM principal API Gateway authenticated', async () => {
    // Prepare
    jobs = [];
    const handler = createDashboardHandler(deps(), silentLogger);

    // Act
    const result = await handler(
      event({
        method: 'POST',
        rawPath: '/api/tracks/web/sync',
        headers: {
          host: 'dash.example.com',
          'content-type': 'application/json',
          origin: 'https://dash.example.com',
        },
        body: '',
        requestContext: { authorizer: IAM_ALICE },
      }),
    );

    // Assess
    assert.equal(result.statusCode, 202, result.body);
    assert.deepEqual(JSON.parse(result.body), {
      track: 'web',
      action: 'sync',
      queued: true,
      by: 'Ops/alice',
    });
    assert.deepEqual(jobs, [{ type: 'fetch', track: 'web', trigger: 'manual', by: 'Ops/alice' }]);
  });

  it('sends each action request under its own deduplication id: suspend, resume, suspend all reach apply', async () => {
    // Prepare: the production queue over a client that keeps what it is asked to send.
    const sent: SendMessageCommand['input'][] = [];
    const client = {
      send: async (command: SendMessageCommand) => void sent.push(command.input),
    } as unknown as ConstructorParameters<typeof SqsJobQueue>[0]['client'];
    const queue = new SqsJobQueue({
      client,
      applyQueueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/driftless-dev-apply.fifo',
    });
    const handler = createDashboardHandler(deps({ queue }), silentLogger);
    const action = (name: string, requestId: string) =>
      handler(
        event({
          method: 'POST',
          rawPath: `/api/tracks/web/${name}`,
          headers: {
            host: 'dash.example.com',
            'content-type': 'application/json',
            origin: 'https://dash.example.com',
          },
          body: '',
          requestContext: { authorizer: IAM_ALICE },
        }),
        { getRemainingTimeInMillis: () => 10_000, awsRequestId: requestId },
      );

    // Act
    const answers = [
      await action('suspend', 'r1'),
      await action('resume', 'r2'),
      await action('suspend', 'r3'),
    ];

    // Assess: SQS drops a message whose id it saw in the last 5 minutes.
    assert.deepEqual(
      answers.map((answer) => answer.statusCode),
      [202, 202, 202],
    );
    assert.equal(sent.length, 3);
    assert.equal(sent[0]?.MessageBody, sent[2]?.MessageBody);
    assert.notEqual(sent[0]?.MessageDeduplicationId, sent[2]?.MessageDeduplicationId);
  });

  it('refuses an action without an authorizer’s identity, whatever the headers say', async () => {
    // Prepare
    jobs = [];
    const handler = createDashboardHandler(deps({ readAccess: 'open' }), silentLogger);

    // Act
    const result = await handler(
      event({
        method: 'POST',
        rawPath: '/api/tracks/web/suspend',
        headers: {
          host: 'dash.example.com',
          'content-type': 'application/json',
          authorization: `Basic ${Buffer.from('alice:pw').toString('base64')}`,
        },
      }),
    );

    // Assess
    assert.equal(result.statusCode, 401);
    assert.deepEqual(jobs, []);
  });

  it('serves the page under a named stage, and the session of a JWT user', async () => {
    // Prepare
    const handler = createDashboardHandler(deps(), silentLogger);
    const jwt = { jwt: { claims: { sub: '5f3c', email: 'alice@example.com' } } };

    // Act
    const page = await handler(event({ rawPath: '/prod', requestContext: { stage: 'prod' } }));
    const session = await handler(
      event({ rawPath: '/prod/api/session', requestContext: { stage: 'prod', authorizer: jwt } }),
    );

    // Assess
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /<title>Driftless/);
    assert.match(page.headers['Content-Security-Policy'] ?? '', /default-src 'none'/);
    assert.equal(session.statusCode, 200);
    assert.deepEqual(JSON.parse(session.body), {
      user: 'alice@example.com',
      readAccess: 'authenticated',
      canAct: true,
      signIn: ['gateway'],
    });
  });

  it('answers 500 without details when its ports fail', async () => {
    // Prepare
    const logged: unknown[] = [];
    const log: Logger = { ...silentLogger, error: (_msg, fields) => void logged.push(fields) };
    const handler = createDashboardHandler(async () => {
      throw new Error('AccessDenied: arn:aws:s3:::internal-bucket');
    }, log);

    // Act
    const result = await handler(event({ rawPath: '/api/overview' }));

    // Assess
    assert.equal(result.statusCode, 500);
    assert.doesNotMatch(result.body, /internal-bucket/);
    assert.deepEqual(JSON.parse(result.body), { error: 'internal error; see the function log' });
    assert.equal(logged.length, 1);
  });
});

describe('the dashboard function’s ports', () => {
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-dashboard-deps-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  /** The session the deployed function answers a signed-in user with, under `dashboard`. */
  async function sessionUnder(name: string, dashboard: string, authorizer: object) {
    const file = join(dir, `${name}.yaml`);
    await writeFile(
      file,
      `store: {type: fs, path: ${JSON.stringify(join(dir, 'store'))}}\n${dashboard}tracks:\n  - name: web\n    repository: https://git.example.com/web.git\n`,
    );
    const handler = createDashboardHandler(
      () => dashboardDeps(() => ({ enqueue: async () => undefined }), { DRIFTLESS_CONFIG: file }),
      silentLogger,
    );
    const result = await handler(
      event({ rawPath: '/api/session', requestContext: { authorizer } }),
    );
    assert.equal(result.statusCode, 200, result.body);
    return JSON.parse(result.body) as { user: string; signIn: string[] };
  }

  it('says a SigV4 signing proxy signs in under IAM, the default, and the gateway’s token under JWT', async () => {
    // Act
    const iam = await sessionUnder('iam', '', IAM_ALICE);
    const iamOpen = await sessionUnder(
      'iam-open',
      'dashboard: {readAccess: open, authorizer: {type: iam}}\n',
      IAM_ALICE,
    );
    const jwt = await sessionUnder(
      'jwt',
      'dashboard:\n  authorizer: {type: jwt, issuer: https://login.example.com, audience: [driftless]}\n',
      { jwt: { claims: { sub: '5f3c', email: 'alice@example.com' } } },
    );

    // Assess
    assert.deepEqual([iam.user, iam.signIn], ['Ops/alice', ['sigv4']]);
    assert.deepEqual([iamOpen.user, iamOpen.signIn], ['Ops/alice', ['sigv4']]);
    assert.deepEqual([jwt.user, jwt.signIn], ['alice@example.com', ['gateway']]);
  });
});
