/**
 * `driftless serve` end to end with real components only: the test Git
 * server (basic auth from an env: secret), the shared test cluster, the
 * filesystem store, and webhooks signed as GitHub and GitLab sign them,
 * posted over HTTP. The stack runs in this process through the same
 * `openLocalContext` and `startServe` the command uses; the last test runs the
 * command itself as a child process and stops it with SIGTERM.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { CoreV1Api } from '@kubernetes/client-node';
import { openLocalContext } from '../../src/sync/local-context.ts';
import type { LocalContext } from '../../src/sync/local-context.ts';
import { jsonLogger } from '../../src/logger.ts';
import { startServe, type RunningServe } from '../../src/serve/start-serve.ts';
import { readTrackState } from '../../src/sync/track-state.ts';
import {
  pushFiles,
  startGitServer,
  type GitRepository,
  type GitServer,
} from '../harness/git-server.ts';
import {
  createTestNamespace,
  sharedKubeConfig,
  sharedKubeconfigPath,
} from '../harness/shared-cluster.ts';
import { eventually } from '../harness/eventually.ts';
import { githubPush } from '../harness/push-load.ts';

const CLI = fileURLToPath(new URL('../../src/cli/run.ts', import.meta.url));
const TSX = import.meta.resolve('tsx');

const GITHUB_SECRET = `gh-${randomUUID()}`;
const GITLAB_SECRET = `gl-${randomUUID()}`;

const configMap = (name: string, value: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  value: "${value}"\n`;

/** One Git host's webhook dialect: a push delivery as that host signs it. */
interface Host {
  readonly name: 'github' | 'gitlab';
  readonly track: string;
  delivery(
    repo: GitRepository,
    push: { before: string; after: string },
    options: { id: string; secret?: string },
  ): { body: string; headers: Record<string, string> };
}

const GITHUB: Host = {
  name: 'github',
  track: 'gh',
  delivery(repo, push, { id, secret = GITHUB_SECRET }) {
    const { body, headers } = githubPush(repo, push, secret, id);
    return { body, headers };
  },
};

const GITLAB: Host = {
  name: 'gitlab',
  track: 'gl',
  delivery(repo, push, { id, secret = GITLAB_SECRET }) {
    const body = JSON.stringify({
      object_kind: 'push',
      ref: 'refs/heads/main',
      before: push.before,
      after: push.after,
      project: { git_http_url: repo.url, default_branch: 'main' },
    });
    return {
      body,
      headers: {
        'content-type': 'application/json',
        'x-gitlab-event': 'Push Hook',
        'x-gitlab-token': secret,
        'idempotency-key': id,
      },
    };
  },
};

/** A port that was free a moment ago, for the child process (the CLI takes no port 0). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

describe('driftless serve against a real cluster and Git server', () => {
  const HOOK_KEY = 'audit-signing-key';
  let hook: Server;
  const hooked: { body: string; signature: string }[] = [];
  let holdHook: Promise<void> | undefined;
  let git: GitServer;
  const repos = new Map<string, GitRepository>();
  let dir: string;
  let configFile: string;
  let ns: string;
  let core: CoreV1Api;
  let env: NodeJS.ProcessEnv;
  let ctx: LocalContext;
  let serve: RunningServe;
  const logs: string[] = [];

  const post = (host: Host, delivery: { body: string; headers: Record<string, string> }) =>
    fetch(`${serve.url}/webhook/${host.name}`, {
      method: 'POST',
      body: delivery.body,
      headers: delivery.headers,
    });

  const liveValue = async (name: string): Promise<string | undefined> => {
    try {
      return (await core.readNamespacedConfigMap({ name, namespace: ns })).data?.value;
    } catch {
      return undefined;
    }
  };

  /** The last log lines, to explain a failed assertion. */
  const recentLogs = (): string => `\nrecent logs:\n${logs.slice(-15).join('\n')}`;

  before(async () => {
    const kc = sharedKubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    ns = await createTestNamespace(kc, 'serve');
    git = await startGitServer();
    for (const host of [GITHUB, GITLAB])
      repos.set(host.name, await git.createRepository(host.track));
    dir = await mkdtemp(join(tmpdir(), 'driftless-serve-e2e-'));
    hook = createHttpServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      request.on('end', () => {
        hooked.push({ body, signature: String(request.headers['x-driftless-signature']) });
        // Held while a test needs a job still running (notifying) when serve is told to stop.
        void (holdHook ?? Promise.resolve()).then(() => response.writeHead(204).end());
      });
    });
    await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
    env = {
      ...process.env,
      E2E_HOOK_URL: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/events`,
      E2E_HOOK_KEY: HOOK_KEY,
      E2E_GIT_CREDENTIALS: `${git.username}:${git.password}`,
      E2E_GITHUB_SECRET: GITHUB_SECRET,
      E2E_GITLAB_SECRET: GITLAB_SECRET,
    };
    const track = (host: Host): string[] => [
      `  - name: ${host.track}`,
      `    repository: ${repos.get(host.name)!.url}`,
      `    namespace: ${ns}`,
      // Only webhooks may deploy during the test: the scheduled poll would mask a broken webhook.
      '    interval: 1h',
      '    auth: {type: basic, secret: env:E2E_GIT_CREDENTIALS}',
    ];
    configFile = join(dir, 'driftless.yaml');
    await writeFile(
      configFile,
      [
        'store:',
        '  type: fs',
        `  path: ${join(dir, 'store')}`,
        'clusters:',
        '  - name: test',
        `    kubeconfig: ${sharedKubeconfigPath()}`,
        'webhooks:',
        '  github: {secret: env:E2E_GITHUB_SECRET}',
        '  gitlab: {secret: env:E2E_GITLAB_SECRET}',
        'tracks:',
        ...track(GITHUB),
        ...track(GITLAB),
        'notifications:',
        '  - {name: audit, type: webhook, url: env:E2E_HOOK_URL, secret: env:E2E_HOOK_KEY, events: [applied, failed]}',
        '',
      ].join('\n'),
    );
    ctx = await openLocalContext(configFile, env);
    serve = await startServe(ctx, {
      port: 0,
      host: '127.0.0.1',
      env,
      logger: jsonLogger((line) => logs.push(line)),
    });
    // The start-up poll finds empty repositories; let it finish so it cannot race the pushes.
    await serve.queue.idle();
  });

  after(async () => {
    hook?.close();
    await serve?.close();
    ctx?.close();
    await core?.deleteNamespace({ name: ns }).catch(() => undefined);
    await git?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  for (const host of [GITHUB, GITLAB]) {
    describe(`${host.name} pushes`, () => {
      const object = `${host.track}-settings`;
      let first: string;

      it('applies the pushed revision after a signed push', async () => {
        // Prepare
        const repo = repos.get(host.name)!;
        first = await pushFiles(repo, { 'settings.yaml': configMap(object, 'one') });
        const delivery = host.delivery(
          repo,
          { before: '0'.repeat(40), after: first },
          { id: randomUUID() },
        );

        // Act
        const response = await post(host, delivery);
        const answer = (await response.json()) as { tracks: string[] };

        // Assess
        assert.equal(response.status, 202);
        assert.deepEqual(answer.tracks, [host.track]);
        assert.ok(await eventually(async () => (await liveValue(object)) === 'one'), recentLogs());
        await serve.queue.idle();
        const state = await readTrackState(ctx.state, host.track);
        assert.equal(state.appliedRevision, first);
      });

      it('answers 401 to a forged delivery and applies nothing', async () => {
        // Prepare
        const repo = repos.get(host.name)!;
        const second = await pushFiles(repo, { 'settings.yaml': configMap(object, 'forged') });
        const delivery = host.delivery(
          repo,
          { before: first, after: second },
          { id: randomUUID(), secret: 'not-the-secret' },
        );

        // Act
        const response = await post(host, delivery);
        await new Promise((resolve) => setTimeout(resolve, 1500));
        await serve.queue.idle();

        // Assess
        assert.equal(response.status, 401);
        assert.equal(await liveValue(object), 'one');
        const state = await readTrackState(ctx.state, host.track);
        assert.equal(state.appliedRevision, first);
      });

      it('keeps the newer revision when an older delivery arrives after a newer one', async () => {
        // Prepare
        const repo = repos.get(host.name)!;
        const older = await pushFiles(repo, { 'settings.yaml': configMap(object, 'older') });
        const newer = await pushFiles(repo, { 'settings.yaml': configMap(object, 'newer') });
        const newerDelivery = host.delivery(
          repo,
          { before: older, after: newer },
          { id: randomUUID() },
        );
        const olderDelivery = host.delivery(
          repo,
          { before: first, after: older },
          { id: randomUUID() },
        );
        await post(host, newerDelivery);
        assert.ok(
          await eventually(async () => (await liveValue(object)) === 'newer'),
          recentLogs(),
        );
        await serve.queue.idle();

        // Act
        const response = await post(host, olderDelivery);
        await serve.queue.idle();

        // Assess
        assert.equal(response.status, 202);
        assert.equal(await liveValue(object), 'newer');
        const state = await readTrackState(ctx.state, host.track);
        assert.equal(state.appliedRevision, newer);
        assert.equal(state.desiredRevision, newer);
        const [latest] = await ctx.state.listHistory(host.track, 1);
        assert.equal(latest?.revision, newer, 'the older delivery applied nothing new');
      });
    });
  }

  it('told the audit receiver of each applied revision once, signed', async () => {
    const events = hooked.map((h) => {
      const expected = `sha256=${createHmac('sha256', HOOK_KEY).update(h.body).digest('hex')}`;
      assert.equal(h.signature, expected);
      return JSON.parse(h.body) as { track: string; event: string; revision: string };
    });
    for (const host of [GITHUB, GITLAB]) {
      const applied = events.filter((e) => e.track === host.track && e.event === 'applied');
      const revisions = applied.map((e) => e.revision);
      assert.ok(applied.length >= 1, `${host.track}: ${JSON.stringify(events)}`);
      assert.equal(new Set(revisions).size, revisions.length, 'each revision told once');
    }
  });

  it('reports health, and metrics for every track', async () => {
    // Act
    const health = await fetch(`${serve.url}/healthz`);
    const metrics = await (await fetch(`${serve.url}/metrics`)).text();

    // Assess
    assert.equal(health.status, 200);
    for (const track of [GITHUB.track, GITLAB.track]) {
      assert.match(
        metrics,
        new RegExp(
          `^driftless_track_child_status\\{track="${track}",namespace="${ns}",status="inSync"\\} 1$`,
          'm',
        ),
      );
      assert.match(
        metrics,
        new RegExp(
          `^faros_gittrack_child_status\\{name="${track}",namespace="${ns}",status="discovered"\\} 1$`,
          'm',
        ),
      );
      assert.match(
        metrics,
        new RegExp(`^driftless_time_to_deploy_seconds_count\\{track="${track}"\\} 2$`, 'm'),
      );
    }
    assert.match(
      metrics,
      /^driftless_webhook_deliveries_total\{provider="github",status="401"\} 1$/m,
    );
    assert.match(metrics, /^driftless_queue_length 0$/m);
    const text = logs.join('\n');
    for (const secret of [GITHUB_SECRET, GITLAB_SECRET, git.password]) {
      assert.ok(!text.includes(secret), 'a secret appears in the logs');
    }
    for (const line of logs) assert.doesNotThrow(() => JSON.parse(line), line);
  });

  it('runs as "driftless serve" and stops gracefully on SIGTERM, answering 503 while a job ends', async () => {
    // Prepare
    await serve.close();
    // A revision for the start-up poll to apply; its notification is held, so its job still
    // runs when the signal comes.
    const repo = repos.get(GITHUB.name)!;
    const pushed = await pushFiles(repo, {
      'settings.yaml': configMap(`${GITHUB.track}-settings`, 'at-shutdown'),
    });
    let releaseHook!: () => void;
    holdHook = new Promise((resolve) => (releaseHook = resolve));
    const notified = hooked.length;
    const port = await freePort();
    const child = spawn(
      process.execPath,
      ['--import', TSX, CLI, 'serve', '-c', configFile, '--port', String(port)],
      {
        cwd: dir,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const exited = new Promise<number | null>((resolve) =>
      child.on('exit', (code) => resolve(code)),
    );

    try {
      const up = await eventually(async () => {
        const response = await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined);
        return response?.status === 200;
      });
      assert.ok(up, `serve did not answer /healthz:\n${stderr}`);
      const notifying = await eventually(async () => hooked.length > notified, 60_000);
      assert.ok(notifying, `the start-up sync did not notify:\n${stderr}`);

      // Act
      child.kill('SIGTERM');
      const base = `http://127.0.0.1:${port}`;
      const stopping = await eventually(
        async () => (await fetch(`${base}/healthz`).catch(() => undefined))?.status === 503,
        2_000,
        20,
      );
      const health = await fetch(`${base}/healthz`).catch((error: unknown) => error);
      const delivery = GITHUB.delivery(
        repo,
        { before: '0'.repeat(40), after: pushed },
        { id: randomUUID() },
      );
      const late = await fetch(`${base}/webhook/github`, {
        method: 'POST',
        body: delivery.body,
        headers: delivery.headers,
      }).catch((error: unknown) => error);
      const answers = {
        health: health instanceof Response ? [health.status, await health.text()] : String(health),
        late:
          late instanceof Response
            ? [late.status, ((await late.json()) as { kind: string }).kind]
            : String(late),
      };
      releaseHook();
      const code = await exited;

      // Assess
      assert.ok(stopping, `serve stopped answering instead of saying 503:\n${stderr}`);
      assert.deepEqual(answers.health, [503, 'shutting down\n']);
      assert.deepEqual(answers.late, [503, 'unavailable']);
      assert.equal(code, 0, stderr);
      assert.equal(stdout, '');
      const lines = stderr
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { msg: string });
      assert.equal(lines[0]?.msg, 'listening');
      assert.ok(lines.some((line) => line.msg === 'stop requested'));
      assert.equal(lines.at(-1)?.msg, 'stopped');
    } finally {
      releaseHook();
      holdHook = undefined;
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
