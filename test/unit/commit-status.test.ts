/**
 * Commit statuses: which event sets which state, the request each host's API
 * documents (sent to a real local HTTP server standing in for the host's
 * address), where the repository is found, the config's own refusals, and
 * the apply step handing commit statuses to fetch instead of holding a token.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { gitHostRepository } from '../../src/config/git-host.ts';
import { parseConfig } from '../../src/config/index.ts';
import type { SecretRef } from '../../src/config/secret-ref.ts';
import type { Notification } from '../../src/config/types.ts';
import { commitStatusOf, commitStatusTarget } from '../../src/notify/commit-status.ts';
import { deliver, notifier, type NotifiedTrack } from '../../src/notify/deliver.ts';
import type { NotificationEvent } from '../../src/notify/events.ts';
import { executeFetchJob } from '../../src/sync/execute-job.ts';
import { runsInFetch } from '../../src/sync/jobs.ts';
import { runJob, summarizeJob } from '../../src/sync/run-job.ts';

const SHA = 'c0ffee'.padEnd(40, '1');
const TOKEN = 'status-token-marker-51c2';

const event = (over: Partial<NotificationEvent> = {}): NotificationEvent => ({
  track: 'web',
  event: 'fetched',
  revision: SHA,
  result: 'fetched',
  message: 'revision fetched',
  subjects: [],
  time: '2026-11-25T03:00:00.000Z',
  ...over,
});

const receiversOf = (yaml: string): Notification[] =>
  parseConfig(yaml, 'driftless.yaml').notifications;

interface Received {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: unknown;
}

describe('commit status states', () => {
  const waits = { wait: true };
  it('pending on fetch, success once healthy, failure with the error', () => {
    assert.equal(commitStatusOf(event(), waits)?.state, 'pending');
    assert.equal(commitStatusOf(event({ event: 'healthy' }), waits)?.state, 'success');
    const failed = commitStatusOf(
      event({ event: 'failed', message: 'Deployment/a/b: refused' }),
      waits,
    );
    assert.deepEqual(failed, {
      sha: SHA,
      state: 'failure',
      description: 'Deployment/a/b: refused',
    });
    assert.equal(commitStatusOf(event({ event: 'degraded' }), waits)?.state, 'failure');
  });

  it('stays pending for a commit fetched while the track is pinned, saying why', () => {
    const why = `fetched; not applied while the track is pinned at ${'d'.repeat(12)} (run "driftless unpin" to apply it)`;
    assert.deepEqual(commitStatusOf(event({ result: 'pinned', message: why }), waits), {
      sha: SHA,
      state: 'pending',
      description: why,
    });
    assert.equal(commitStatusOf(event(), waits)?.description, 'fetched; applying');
  });

  it('applied is success only for a track that does not wait for health', () => {
    assert.equal(commitStatusOf(event({ event: 'applied' }), waits), undefined);
    assert.equal(commitStatusOf(event({ event: 'applied' }), { wait: false })?.state, 'success');
  });

  it('sets nothing without a commit, for drift, or for an abbreviated revision', () => {
    assert.equal(commitStatusOf(event({ event: 'failed', revision: null }), waits), undefined);
    assert.equal(commitStatusOf(event({ event: 'drifted' }), waits), undefined);
    assert.equal(commitStatusOf(event({ revision: 'c0ffee' }), waits), undefined);
  });

  it('keeps descriptions to one line of at most 140 characters', () => {
    const long = `first line\n${'x'.repeat(300)}`;
    const status = commitStatusOf(event({ event: 'failed', message: long }), waits);
    assert.ok(status !== undefined);
    assert.equal(status.description.length, 140);
    assert.ok(!status.description.includes('\n'));
  });
});

describe('where a repository is', () => {
  it('reads https, ssh and scp-like URLs, without credentials or .git', () => {
    assert.deepEqual(gitHostRepository('https://user:secret@github.com/acme/web.git'), {
      origin: 'https://github.com',
      host: 'github.com',
      path: 'acme/web',
    });
    assert.deepEqual(gitHostRepository('git@gitlab.com:group/sub/web.git'), {
      origin: 'https://gitlab.com',
      host: 'gitlab.com',
      path: 'group/sub/web',
    });
    assert.deepEqual(gitHostRepository('ssh://git@git.example.com:2222/o/r.git'), {
      origin: 'https://git.example.com',
      host: 'git.example.com',
      path: 'o/r',
    });
    assert.equal(gitHostRepository('/srv/git/web'), undefined);
    assert.equal(gitHostRepository('file:///srv/git/web'), undefined);
  });

  const track = (repository: string) => ({ name: 'web', repository });
  it('knows the well-known hosts and their APIs; self-hosted ones say their kind', () => {
    assert.deepEqual(commitStatusTarget({}, track('https://github.com/acme/web')), {
      provider: 'github',
      apiUrl: 'https://api.github.com',
      path: 'acme/web',
    });
    assert.deepEqual(commitStatusTarget({}, track('git@bitbucket.org:team/web.git')), {
      provider: 'bitbucket',
      apiUrl: 'https://api.bitbucket.org/2.0',
      path: 'team/web',
    });
    assert.deepEqual(
      commitStatusTarget({ provider: 'gitea' }, track('http://127.0.0.1:3000/o/web.git')),
      { provider: 'gitea', apiUrl: 'http://127.0.0.1:3000/api/v1', path: 'o/web' },
    );
    assert.deepEqual(
      commitStatusTarget({ provider: 'github' }, track('https://ghe.example.com/o/web')),
      { provider: 'github', apiUrl: 'https://ghe.example.com/api/v3', path: 'o/web' },
    );
    // A host installed under a sub-path serves its repositories under it too.
    assert.deepEqual(
      commitStatusTarget(
        { provider: 'gitea', apiUrl: 'https://example.com/git/api/v1/' },
        track('https://example.com/git/o/web.git'),
      ),
      { provider: 'gitea', apiUrl: 'https://example.com/git/api/v1', path: 'o/web' },
    );
    assert.throws(
      () => commitStatusTarget({}, track('https://git.example.com/o/web')),
      /cannot tell which kind of Git host git\.example\.com is; set provider/,
    );
    assert.throws(
      () => commitStatusTarget({}, track('/srv/git/web')),
      /track "web": its repository is not on a Git host/,
    );
    assert.throws(
      () => commitStatusTarget({ provider: 'github' }, track('https://github.com/a/b/c')),
      /"a\/b\/c" is not an owner\/repository path on github/,
    );
  });
});

describe('commit status config', () => {
  it('refuses a token the apply function could read, and an unknown host without provider', () => {
    assert.throws(
      () =>
        parseConfig(
          'notifications: [{name: s, type: commitStatus, provider: github, token: "aws-ssm:/driftless/notify/gh"}]',
          'driftless.yaml',
        ),
      /notifications\[0\]\.token: .*keep it under driftless\/git\//,
    );
    assert.throws(
      () =>
        parseConfig(
          `tracks: [{name: web, repository: https://git.example.com/o/web.git}]
notifications: [{name: s, type: commitStatus, token: env:T}]`,
          'driftless.yaml',
        ),
      /notifications\[0\]\.provider: track "web" is on git\.example\.com.*say which host it is/,
    );
    // Tracks the receiver does not match need nothing of it.
    const config = parseConfig(
      `tracks: [{name: web, repository: https://git.example.com/o/web.git}]
notifications: [{name: s, type: commitStatus, token: env:T, tracks: ["prod-*"]}]
dashboard: {url: "https://driftless.example.com"}`,
      'driftless.yaml',
    );
    assert.equal(config.dashboard?.url, 'https://driftless.example.com');
  });
});

describe('commit status requests, as each host documents them', () => {
  const received: Received[] = [];
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    request.on('end', () => {
      received.push({
        method: request.method ?? '',
        path: request.url ?? '',
        headers: request.headers,
        body: JSON.parse(body) as unknown,
      });
      response.writeHead(201, { 'content-type': 'application/json' }).end('{}');
    });
  });
  let api = '';
  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    api = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => server.close());
  const readSecret = async (ref: SecretRef) => {
    assert.deepEqual(ref, { scheme: 'env', name: 'STATUS_TOKEN' });
    return `${TOKEN}\n`;
  };

  async function post(provider: string, repository: string): Promise<Received> {
    received.length = 0;
    const failures: string[] = [];
    const receivers = receiversOf(
      `notifications: [{name: s, type: commitStatus, provider: ${provider}, token: env:STATUS_TOKEN, apiUrl: "${api}/api"}]`,
    );
    const track: NotifiedTrack = { name: 'web', repository, wait: true };
    await deliver(receivers, track, [event({ event: 'failed', message: 'apply refused' })], {
      readSecret,
      dashboardUrl: 'https://dash.example.com/',
      onFailure: (_r, _e, error) => failures.push(error),
    });
    assert.deepEqual(failures, []);
    assert.equal(received.length, 1);
    const request = received[0]!;
    assert.equal(request.method, 'POST');
    // The token is a header, never part of the body.
    assert.ok(!JSON.stringify(request.body).includes(TOKEN));
    return request;
  }

  it('GitHub: POST /repos/{owner}/{repo}/statuses/{sha} with a Bearer token', async () => {
    const request = await post('github', 'https://github.com/acme/web.git');
    assert.equal(request.path, `/api/repos/acme/web/statuses/${SHA}`);
    assert.equal(request.headers.authorization, `Bearer ${TOKEN}`);
    assert.deepEqual(request.body, {
      state: 'failure',
      context: 'driftless/web',
      description: 'apply refused',
      target_url: 'https://dash.example.com/#/tracks/web',
    });
  });

  it('Gitea and Forgejo: the same path, a `token` authorization', async () => {
    const request = await post('gitea', 'http://127.0.0.1:3000/acme/web.git');
    assert.equal(request.path, `/api/repos/acme/web/statuses/${SHA}`);
    assert.equal(request.headers.authorization, `token ${TOKEN}`);
    assert.equal((request.body as { state: string }).state, 'failure');
  });

  it('GitLab: the project path URL-encoded, `failed`, the context as name', async () => {
    const request = await post('gitlab', 'https://gitlab.com/group/sub/web.git');
    assert.equal(request.path, `/api/projects/group%2Fsub%2Fweb/statuses/${SHA}`);
    assert.equal(request.headers['private-token'], TOKEN);
    assert.deepEqual(request.body, {
      state: 'failed',
      name: 'driftless/web',
      description: 'apply refused',
      target_url: 'https://dash.example.com/#/tracks/web',
    });
  });

  it('Bitbucket: a build status with key, FAILED and a link', async () => {
    const request = await post('bitbucket', 'https://bitbucket.org/team/web.git');
    assert.equal(request.path, `/api/repositories/team/web/commit/${SHA}/statuses/build`);
    assert.equal(request.headers.authorization, `Bearer ${TOKEN}`);
    assert.deepEqual(request.body, {
      key: 'driftless/web',
      name: 'driftless/web',
      state: 'FAILED',
      description: 'apply refused',
      url: 'https://dash.example.com/#/tracks/web',
    });
  });
});

describe('who sets commit statuses', () => {
  const receivers = receiversOf(`notifications:
  - {name: status, type: commitStatus, provider: github, token: env:T, events: [fetched, healthy, failed]}
  - {name: audit, type: webhook, url: env:HOOK}
`);
  const track: NotifiedTrack = { name: 'web', repository: 'https://github.com/a/web', wait: true };

  it('the apply step forwards them (it holds no Git token) and sends the rest itself', async () => {
    const forwarded: [string, string[], string[]][] = [];
    const posted: string[] = [];
    const notify = notifier(receivers, {
      readSecret: async () => 'http://127.0.0.1:9/unused',
      fetch: (async (url: string) => {
        posted.push(url);
        return new Response('ok');
      }) as typeof fetch,
      forward: async (t, events, names) =>
        void forwarded.push([t.name, events.map((e) => e.event), [...names]]),
    });
    await notify(track, [event({ event: 'healthy' }), event({ event: 'drifted' })]);
    assert.deepEqual(forwarded, [['web', ['healthy'], ['status']]]);
    assert.equal(posted.length, 2, 'the generic webhook got both events');

    // Events no commit status receiver wants are not forwarded at all.
    forwarded.length = 0;
    await notify(track, [event({ event: 'drifted' })]);
    assert.deepEqual(forwarded, []);
  });

  it('a forward that fails is reported, not thrown', async () => {
    const failures: string[] = [];
    const notify = notifier(receivers, {
      readSecret: async () => 'https://hooks.example.com/audit',
      fetch: (async () => new Response('ok')) as typeof fetch,
      forward: async () => {
        throw new Error('queue unreachable');
      },
      onFailure: (name, e, error) => failures.push(`${name} ${e.event}: ${error}`),
    });
    await notify(track, [event({ event: 'failed', message: 'boom' })]);
    assert.deepEqual(failures, ['status failed: not forwarded: queue unreachable']);
  });

  it('the forwarded job runs in fetch, where the token is, for the receivers it names', async () => {
    const job = {
      type: 'notify',
      track: 'web',
      events: [event({ event: 'healthy' })],
      receivers: ['status'],
    } as const;
    assert.equal(runsInFetch(job), true);
    const calls: unknown[] = [];
    const config = parseConfig(
      'tracks: [{name: web, repository: https://github.com/a/web}]',
      'driftless.yaml',
    );
    const unused = new Proxy({}, { get: () => assert.fail('no store or queue is touched') });
    const done = await runJob(
      job,
      {
        tracks: config.tracks,
        artifacts: unused as never,
        state: unused as never,
        queue: unused as never,
        notify: async (t, events, only) => void calls.push([t.name, events.length, only]),
      },
      executeFetchJob,
    );
    assert.deepEqual(calls, [['web', 1, ['status']]]);
    assert.equal(summarizeJob(done).result, 'notified');
  });
});
