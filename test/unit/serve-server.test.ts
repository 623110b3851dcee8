/**
 * `driftless serve`'s HTTP surface, queue and runner over fake use-cases:
 * real HTTP on a loopback port, a real fs store, no Git and no cluster.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { LocalContext } from '../../src/sync/local-context.ts';
import { parseConfig } from '../../src/config/index.ts';
import type { Track } from '../../src/config/types.ts';
import { jsonLogger } from '../../src/logger.ts';
import { startServe, type RunningServe } from '../../src/serve/start-serve.ts';
import { createStore, type ClosableStore } from '../../src/store/create-store.ts';
import type { SyncResult } from '../../src/sync/apply-revision.ts';
import type { DiscoverJob, Job } from '../../src/sync/jobs.ts';
import type { JobDeps, JobResult } from '../../src/sync/run-job.ts';
import { emptyTrackState, updateTrackState } from '../../src/sync/track-state.ts';

const GITHUB_SECRET = 'github secret, never logged';
const GITLAB_SECRET = 'gitlab token, never logged';
const DASHBOARD_TOKEN = 'dashboard-token-never-logged';
const REPOSITORY = 'https://git.example.com/org/web.git';
const SHA = 'c'.repeat(40);

const CONFIG = `
webhooks:
  github: {secret: env:GH_SECRET}
  gitlab: {secret: env:GL_SECRET}
dashboard:
  tokens: [env:DASH_TOKEN]
tracks:
  - name: web
    repository: ${REPOSITORY}
    namespace: apps
  - name: other
    repository: https://git.example.com/org/other.git
`;

function githubPush(ref = 'refs/heads/main', after = SHA): string {
  return JSON.stringify({
    ref,
    before: '0'.repeat(39) + '1',
    after,
    repository: { clone_url: REPOSITORY, default_branch: 'main' },
  });
}

function githubHeaders(body: string, delivery: string, secret = GITHUB_SECRET) {
  return {
    'content-type': 'application/json',
    'x-github-event': 'push',
    'x-github-delivery': delivery,
    'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`,
  };
}

/** Use-cases that record what they were asked and answer like the real ones. */
class FakeUseCases {
  readonly jobs: Job[] = [];
  syncResult: Pick<SyncResult, 'result' | 'error'> = { result: 'applied' };
  /** Resolves the next job's promise; set to hold jobs running. */
  hold?: Promise<void>;
  /** The signal each job was given, in order. */
  readonly signals: (AbortSignal | undefined)[] = [];

  readonly execute = async (
    _track: Track,
    job: Exclude<Job, DiscoverJob>,
    deps: JobDeps,
  ): Promise<JobResult> => {
    this.jobs.push(job);
    this.signals.push(deps.signal);
    const state = emptyTrackState();
    switch (job.type) {
      case 'fetch': {
        await this.hold;
        const resolvedAt = new Date().toISOString();
        const result = { track: job.track, revision: SHA, resolvedAt, outcome: 'fetched' as const };
        const next = { type: 'sync' as const, track: job.track, revision: SHA, resolvedAt };
        return { type: 'fetch', job, result, next: [{ ...next, trigger: job.trigger }] };
      }
      case 'sync':
      case 'rollback': {
        const result = {
          track: job.track,
          revision: SHA,
          changeset: [],
          state,
          ...this.syncResult,
        };
        return job.type === 'sync'
          ? { type: 'sync', job, result, next: [] }
          : { type: 'rollback', job, result, next: [] };
      }
      case 'drift': {
        const result = {
          track: job.track,
          revision: SHA,
          drifted: [],
          missing: [],
          errors: [],
          corrected: false,
          changeset: [],
          writeBack: [],
          writeBackRefused: [],
        };
        return { type: 'drift', job, result, next: [] };
      }
      case 'writeBack':
      case 'notify':
        throw new Error(`no ${job.type} jobs in these tests`);
      case 'lifecycle': {
        const result = {
          track: job.track,
          action: job.action,
          result: 'suspended' as const,
          revision: SHA,
          suspended: true,
          changeset: [],
        };
        return { type: 'lifecycle', job, result, next: [] };
      }
    }
  };
}

describe('driftless serve over fake use-cases', () => {
  let dir: string;
  let store: ClosableStore;
  let handlers: FakeUseCases;
  let serve: RunningServe;
  let logs: string[];

  const post = (path: string, body: string, headers: Record<string, string>) =>
    fetch(`${serve.url}${path}`, { method: 'POST', body, headers });

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-serve-'));
    store = createStore({ type: 'fs', path: join(dir, 'store') });
    handlers = new FakeUseCases();
    logs = [];
    const ctx: LocalContext = {
      config: parseConfig(CONFIG, 'driftless.yaml'),
      artifacts: store.artifacts,
      state: store.state,
      deliveries: store.deliveries,
      source: () => Promise.reject(new Error('no Git in unit tests')),
      cluster: () => Promise.reject(new Error('no cluster in unit tests')),
      close: () => undefined,
    };
    serve = await startServe(ctx, {
      port: 0,
      host: '127.0.0.1',
      env: { GH_SECRET: GITHUB_SECRET, GL_SECRET: GITLAB_SECRET, DASH_TOKEN: DASHBOARD_TOKEN },
      execute: handlers.execute,
      runAtStart: false,
      maxBodyBytes: 4096,
      logger: jsonLogger((line) => logs.push(line), { level: 'debug' }),
    });
  });

  afterEach(async () => {
    await serve?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers a signed GitHub push with 202, then fetches and syncs the matching track', async () => {
    // Prepare
    const body = githubPush();

    // Act
    const response = await post('/webhook/github', body, githubHeaders(body, 'delivery-1'));
    const answer = (await response.json()) as Record<string, unknown>;
    await serve.queue.idle();

    // Assess
    assert.equal(response.status, 202);
    assert.deepEqual(answer.tracks, ['web']);
    assert.equal(answer.deliveryId, 'delivery-1');
    assert.deepEqual(handlers.jobs[0], {
      type: 'fetch',
      track: 'web',
      trigger: 'webhook',
      hint: { revision: SHA, ref: 'refs/heads/main' },
      deliveryId: 'delivery-1',
    });
    assert.equal(handlers.jobs[1]?.type, 'sync');
    assert.equal(handlers.jobs.length, 2);
    const metrics = await (await fetch(`${serve.url}/metrics`)).text();
    assert.match(metrics, /^driftless_time_to_deploy_seconds_count\{track="web"\} 1$/m);
    assert.match(
      metrics,
      /^faros_gittrack_time_to_deploy_seconds_count\{name="web",namespace="apps",repository="https:\/\/git\.example\.com\/org\/web\.git"\} 1$/m,
    );
    assert.match(
      metrics,
      /^driftless_webhook_deliveries_total\{provider="github",status="202"\} 1$/m,
    );
  });

  it('accepts a GitLab push carrying the token', async () => {
    // Prepare
    const body = JSON.stringify({
      object_kind: 'push',
      ref: 'refs/heads/main',
      after: SHA,
      project: { git_http_url: REPOSITORY },
    });

    // Act
    const response = await post('/webhook/gitlab', body, {
      'x-gitlab-event': 'Push Hook',
      'x-gitlab-token': GITLAB_SECRET,
      'idempotency-key': 'gl-1',
    });
    await serve.queue.idle();

    // Assess
    assert.equal(response.status, 202);
    assert.deepEqual(
      handlers.jobs.map((job) => job.type),
      ['fetch', 'sync'],
    );
  });

  it('runs a repeated delivery once', async () => {
    // Prepare
    const body = githubPush();
    await post('/webhook/github', body, githubHeaders(body, 'delivery-2'));
    await serve.queue.idle();

    // Act
    const response = await post('/webhook/github', body, githubHeaders(body, 'delivery-2'));
    const answer = (await response.json()) as Record<string, unknown>;
    await serve.queue.idle();

    // Assess
    assert.equal(response.status, 202);
    assert.equal(answer.kind, 'duplicate');
    assert.equal(handlers.jobs.filter((job) => job.type === 'fetch').length, 1);
  });

  it('answers 401 to a forged signature, runs nothing and logs no secret', async () => {
    // Prepare
    const body = githubPush();

    // Act
    const response = await post('/webhook/github', body, githubHeaders(body, 'forged', 'guess'));
    await serve.queue.idle();

    // Assess
    assert.equal(response.status, 401);
    assert.deepEqual(handlers.jobs, []);
    const text = logs.join('\n');
    assert.match(text, /"kind":"rejected"/);
    assert.doesNotMatch(text, /never logged/);
    assert.doesNotMatch(text, /sha256=/);
    // The forged delivery's id is not recorded: the genuine one with that id still runs.
    const genuine = await post('/webhook/github', body, githubHeaders(body, 'forged'));
    assert.equal(genuine.status, 202);
  });

  it('answers 404 for an unknown or unconfigured provider and 405 for GET', async () => {
    // Act
    const unknown = await post('/webhook/svn', '{}', {});
    const unconfigured = await post('/webhook/gitea', '{}', {});
    const get = await fetch(`${serve.url}/webhook/github`);
    const elsewhere = await fetch(`${serve.url}/nowhere`);

    // Assess
    assert.equal(unknown.status, 404);
    assert.equal(unconfigured.status, 404);
    assert.equal(get.status, 405);
    assert.equal(elsewhere.status, 404);
  });

  it('answers 413 to a body over the limit without running anything', async () => {
    // Prepare
    const body = JSON.stringify({ padding: 'x'.repeat(8192) });

    // Act
    const response = await post('/webhook/github', body, githubHeaders(body, 'big'));

    // Assess
    assert.equal(response.status, 413);
    assert.deepEqual(handlers.jobs, []);
  });

  it('answers 404, not 413, to a body over the limit for a host not configured here', async () => {
    // Prepare
    const body = JSON.stringify({ padding: 'x'.repeat(8192) });

    // Act
    const unknown = await post('/webhook/svn', body, { 'content-type': 'application/json' });
    const unconfigured = await post('/webhook/gitea', body, { 'content-type': 'application/json' });

    // Assess
    assert.deepEqual([unknown.status, unconfigured.status], [404, 404]);
    assert.equal(((await unconfigured.json()) as { kind: string }).kind, 'unknown-provider');
    assert.deepEqual(handlers.jobs, []);
  });

  it('reports health and per-track metrics with Faros aliases', async () => {
    // Prepare
    await updateTrackState(store.state, 'web', (state) => {
      state.objectsDiscovered = 3;
      state.objectsApplied = 2;
      state.objectsIgnored = 1;
      state.objectsInSync = 2;
    });
    handlers.syncResult = { result: 'failed', error: 'Deployment/apps/web: refused' };
    const body = githubPush();
    await post('/webhook/github', body, githubHeaders(body, 'delivery-3'));
    await serve.queue.idle();

    // Act
    const health = await fetch(`${serve.url}/healthz`);
    const response = await fetch(`${serve.url}/metrics`);
    const metrics = await response.text();

    // Assess
    assert.equal(health.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    for (const [status, value] of [
      ['discovered', 3],
      ['applied', 2],
      ['ignored', 1],
      ['inSync', 2],
    ]) {
      assert.match(
        metrics,
        new RegExp(
          `^driftless_track_child_status\\{track="web",namespace="apps",status="${status}"\\} ${value}$`,
          'm',
        ),
      );
      assert.match(
        metrics,
        new RegExp(
          `^faros_gittrack_child_status\\{name="web",namespace="apps",status="${status}"\\} ${value}$`,
          'm',
        ),
      );
    }
    assert.match(metrics, /^driftless_track_objects_in_sync\{track="web"\} 2$/m);
    assert.match(metrics, /^driftless_track_objects_in_sync\{track="other"\} 0$/m);
    assert.match(metrics, /^driftless_reconcile_errors_total\{track="web",job="sync"\} 1$/m);
    assert.match(metrics, /^driftless_queue_length 0$/m);
    assert.match(metrics, /^# TYPE driftless_time_to_deploy_seconds histogram$/m);
    assert.doesNotMatch(
      metrics,
      /driftless_time_to_deploy_seconds_count/,
      'a failed sync is no deploy',
    );
  });

  it('on close stops taking webhooks, asks the running job to stop and waits for it', async () => {
    // Prepare
    let release!: () => void;
    handlers.hold = new Promise((resolve) => (release = resolve));
    const body = githubPush();
    await post('/webhook/github', body, githubHeaders(body, 'delivery-4'));
    await new Promise((resolve) => setTimeout(resolve, 20));

    // Act
    const closing = serve.close();
    const asked = handlers.signals[0]?.aborted;
    let answers;
    try {
      // The job still runs: serve keeps listening and says it is stopping.
      const late = await post('/webhook/github', body, githubHeaders(body, 'delivery-5'));
      const health = await fetch(`${serve.url}/healthz`);
      const action = await post('/api/tracks/web/sync', '{}', {
        authorization: `Bearer ${DASHBOARD_TOKEN}`,
        'content-type': 'application/json',
      });
      answers = {
        late: [late.status, ((await late.json()) as { kind: string }).kind],
        health: [health.status, await health.text()],
        action: [action.status, ((await action.json()) as { error: string }).error],
      };
    } finally {
      // Even when an answer above failed, so that the job and close() end.
      release();
    }
    await closing;
    const afterClose = await fetch(`${serve.url}/healthz`).catch((error: unknown) => error);

    // Assess
    assert.deepEqual(answers.late, [503, 'unavailable'], 'a webhook during shutdown is refused');
    assert.deepEqual(answers.health, [503, 'shutting down\n']);
    assert.equal(answers.action[0], 503);
    assert.match(String(answers.action[1]), /shutting down/);
    assert.ok(afterClose instanceof Error, 'the server is closed once the jobs are done');
    assert.deepEqual(
      handlers.jobs.map((job) => job.type),
      ['fetch'],
      'the running fetch finished; its sync was not started after close',
    );
    assert.equal(asked, true, 'the running job was asked to stop');
    assert.match(String(handlers.signals[0]?.reason), /driftless serve is stopping/);
    assert.match(logs.join('\n'), /"msg":"stopped"/);
  });
});

describe('driftless serve dashboard sign-in', () => {
  const ALICE_PASSWORD = 'alice password, never logged';
  let dir: string;
  let store: ClosableStore;
  let handlers: FakeUseCases;
  let serve: RunningServe;
  let logs: string[];

  const call = (path: string, init: RequestInit = {}) => fetch(`${serve.url}${path}`, init);
  const basic = (text: string) => `Basic ${Buffer.from(text).toString('base64')}`;
  const act = (authorization: string, body = '{}') =>
    call('/api/tracks/web/sync', {
      method: 'POST',
      body,
      headers: { authorization, 'content-type': 'application/json' },
    });

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-serve-dashboard-'));
    store = createStore({ type: 'fs', path: join(dir, 'store') });
    handlers = new FakeUseCases();
    logs = [];
    // Written as `echo -n > file` and `echo > file` would write them.
    await writeFile(join(dir, 'pw.empty'), '');
    await writeFile(join(dir, 'tok.empty'), '\n');
    const config = `
dashboard:
  readAccess: authenticated
  users:
    - {name: carol, password: file:${join(dir, 'pw.empty')}}
    - {name: alice, password: env:ALICE_PASSWORD}
  tokens: [file:${join(dir, 'tok.empty')}, env:DASH_TOKEN]
tracks:
  - name: web
    repository: ${REPOSITORY}
`;
    const ctx: LocalContext = {
      config: parseConfig(config, join(dir, 'driftless.yaml')),
      artifacts: store.artifacts,
      state: store.state,
      deliveries: store.deliveries,
      source: () => Promise.reject(new Error('no Git in unit tests')),
      cluster: () => Promise.reject(new Error('no cluster in unit tests')),
      close: () => undefined,
    };
    serve = await startServe(ctx, {
      port: 0,
      host: '127.0.0.1',
      env: { ALICE_PASSWORD, DASH_TOKEN: DASHBOARD_TOKEN },
      execute: handlers.execute,
      runAtStart: false,
      logger: jsonLogger((line) => logs.push(line), { level: 'debug' }),
    });
  });

  afterEach(async () => {
    await serve?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('ignores an empty token or password read from a file, and says which at start', async () => {
    // Act
    const sessions = await Promise.all(
      ['Bearer', 'Bearer ', basic('carol:'), basic('carol')].map(async (authorization) => {
        const answer = await call('/api/session', { headers: { authorization } });
        return (await answer.json()) as { user: string | null; canAct: boolean };
      }),
    );
    const actions = await Promise.all(['Bearer', basic('carol:')].map((auth) => act(auth)));
    const overview = await call('/api/overview', { headers: { authorization: 'Bearer' } });
    const second = await call('/api/session', {
      headers: { authorization: `Bearer ${DASHBOARD_TOKEN}` },
    });
    const alice = await call('/api/session', {
      headers: { authorization: basic(`alice:${ALICE_PASSWORD}`) },
    });
    await serve.queue.idle();

    // Assess
    for (const session of sessions) assert.deepEqual([session.user, session.canAct], [null, false]);
    assert.deepEqual(
      actions.map((answer) => answer.status),
      [401, 401],
    );
    assert.equal(overview.status, 401);
    assert.deepEqual(handlers.jobs, []);
    // The second token keeps its number: history names the config's second token.
    assert.equal(((await second.json()) as { user: string }).user, 'token 2');
    assert.equal(((await alice.json()) as { user: string }).user, 'alice');
    const warnings = logs
      .map((line) => JSON.parse(line) as { level: string; msg: string; field?: string })
      .filter((line) => line.level === 'warn' && /empty/.test(line.msg));
    assert.deepEqual(warnings.map((line) => line.field).sort(), [
      'dashboard.tokens[0]',
      'dashboard.users[0].password',
    ]);
  });

  it('names the config field of a secret it cannot read at start', async () => {
    // Prepare: the same config, DASH_TOKEN unset
    const ctx: LocalContext = {
      config: parseConfig(
        `dashboard:\n  tokens: [file:${join(dir, 'tok.empty')}, env:DASH_TOKEN]\nwebhooks:\n  github: {secret: env:GH_SECRET}\ntracks:\n  - name: web\n    repository: ${REPOSITORY}\n`,
        join(dir, 'driftless.yaml'),
      ),
      artifacts: store.artifacts,
      state: store.state,
      deliveries: store.deliveries,
      source: () => Promise.reject(new Error('no Git in unit tests')),
      cluster: () => Promise.reject(new Error('no cluster in unit tests')),
      close: () => undefined,
    };
    const start = (env: Record<string, string>) =>
      startServe(ctx, {
        port: 0,
        host: '127.0.0.1',
        env,
        execute: handlers.execute,
        runAtStart: false,
      });

    // Act, Assess
    await assert.rejects(start({ DASH_TOKEN: 'x' }), {
      message: 'webhooks.github.secret: environment variable GH_SECRET is not set',
    });
    await assert.rejects(start({ GH_SECRET: 'x' }), {
      message: 'dashboard.tokens[1]: environment variable DASH_TOKEN is not set',
    });
  });

  it('returns once the start-up poll is queued, so that queue.idle() waits for it', async () => {
    // Prepare: a state store that answers its listing late, as a remote store does
    const slowState = new Proxy(store.state, {
      get(target, name) {
        const value = Reflect.get(target, name, target) as unknown;
        if (typeof value !== 'function') return value;
        return async (...args: unknown[]) => {
          await new Promise((resolve) => setTimeout(resolve, 50));
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const ctx: LocalContext = {
      config: parseConfig(
        ['tracks:', '  - name: web', `    repository: ${REPOSITORY}`, ''].join('\n'),
        join(dir, 'driftless.yaml'),
      ),
      artifacts: store.artifacts,
      state: slowState,
      deliveries: store.deliveries,
      source: () => Promise.reject(new Error('no Git in unit tests')),
      cluster: () => Promise.reject(new Error('no cluster in unit tests')),
      close: () => undefined,
    };

    // Act
    const started = await startServe(ctx, {
      port: 0,
      host: '127.0.0.1',
      env: {},
      execute: handlers.execute,
      logger: jsonLogger(() => undefined),
    });
    await started.queue.idle();
    const jobs = handlers.jobs.map((job) => `${job.type} ${'track' in job ? job.track : ''}`);
    await started.close();

    // Assess: the start-up poll and drift check of web ran before idle() resolved
    assert.ok(jobs.includes('fetch web'), `jobs run: ${jobs.join(', ')}`);
  });

  it('warns at start, naming the field, of a notification secret it cannot read, and runs on', async () => {
    // Prepare: the Slack URL's variable unset; the webhook receiver's URL set, its secret file missing
    const planted = 'https://hooks.example.com/planted-marker-7c1e';
    const ctx: LocalContext = {
      config: parseConfig(
        [
          'notifications:',
          '  - {name: chat, type: slack, url: env:SLACK_URL}',
          `  - {name: hook, type: webhook, url: env:HOOK_URL, secret: file:${join(dir, 'absent')}}`,
          'tracks:',
          '  - name: web',
          `    repository: ${REPOSITORY}`,
          '',
        ].join('\n'),
        join(dir, 'driftless.yaml'),
      ),
      artifacts: store.artifacts,
      state: store.state,
      deliveries: store.deliveries,
      source: () => Promise.reject(new Error('no Git in unit tests')),
      cluster: () => Promise.reject(new Error('no cluster in unit tests')),
      close: () => undefined,
    };
    const lines: string[] = [];

    // Act
    const started = await startServe(ctx, {
      port: 0,
      host: '127.0.0.1',
      env: { HOOK_URL: planted },
      execute: handlers.execute,
      runAtStart: false,
      logger: jsonLogger((line) => lines.push(line), { level: 'debug' }),
    });
    await started.close();

    // Assess
    const warnings = lines
      .map((line) => JSON.parse(line) as Record<string, string>)
      .filter((line) => line['msg'] === 'notification receiver secret cannot be read')
      .map((line) => [line['receiver'], line['field'], line['error']]);
    assert.deepEqual(warnings, [
      [
        'chat',
        'notifications[0].url',
        'notifications[0].url: environment variable SLACK_URL is not set',
      ],
      [
        'hook',
        'notifications[1].secret',
        `notifications[1].secret: secret file:${join(dir, 'absent')}: file does not exist`,
      ],
    ]);
    assert.ok(!lines.join('\n').includes('planted-marker'), 'no secret value in the log');
  });

  it('never echoes nor logs a token sent without "Bearer " or an action body it refuses', async () => {
    // Act
    const bare = await act(DASHBOARD_TOKEN);
    const notJson = await act(`Bearer ${DASHBOARD_TOKEN}`, 'nope PLANTED-BODY');
    const answers = [await bare.text(), await notJson.text()];

    // Assess
    assert.deepEqual([bare.status, notJson.status], [401, 400]);
    assert.match(answers[0]!, /authorization scheme is not supported/);
    assert.match(answers[1]!, /not JSON.*position 1/);
    for (const text of [...answers, logs.join('\n')]) {
      assert.doesNotMatch(text, /never.logged|PLANTED|nope/);
    }
  });
});
