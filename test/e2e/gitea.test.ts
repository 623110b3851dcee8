/**
 * A real Git host end to end: Gitea (built from Go modules, SQLite) holds the
 * repository, delivers its own signed push webhooks to `driftless serve`, and
 * shows the commit statuses Driftless sets through its API. The test creates
 * the user, the repository and the webhook through Gitea's API and pushes
 * with `git`, as a platform team would; nothing stands in for Gitea.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api } from '@kubernetes/client-node';
import { jsonLogger } from '../../src/logger.ts';
import { startServe, type RunningServe } from '../../src/serve/start-serve.ts';
import { openLocalContext, type LocalContext } from '../../src/sync/local-context.ts';
import { readTrackState } from '../../src/sync/track-state.ts';
import { eventually } from '../harness/eventually.ts';
import { pushFiles, type GitRepository } from '../harness/git-server.ts';
import { startGitea, type Gitea, type GiteaRepository } from '../harness/gitea.ts';
import {
  createTestNamespace,
  sharedKubeConfig,
  sharedKubeconfigPath,
} from '../harness/shared-cluster.ts';

const WEBHOOK_SECRET = `gitea-${randomUUID()}`;
const TRACK = 'shop';

const configMap = (name: string, value: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  value: "${value}"\n`;

/** A commit status as Gitea's API lists it (it names the state `status`). */
interface Status {
  readonly status: string;
  readonly context: string;
  readonly description: string;
  readonly target_url: string;
}

describe('Gitea: its webhooks deploy, and the commit statuses come back', () => {
  let gitea: Gitea;
  let repo: GiteaRepository;
  let pushTarget: GitRepository;
  let dir: string;
  let ns: string;
  let core: CoreV1Api;
  let ctx: LocalContext;
  let serve: RunningServe;
  const logs: string[] = [];
  const recentLogs = (): string => `\nrecent logs:\n${logs.slice(-40).join('\n')}`;

  /** The `driftless/<track>` statuses of `sha`, newest first, as Gitea's API lists them. */
  const statusesOf = async (sha: string): Promise<Status[]> =>
    ((await gitea.commitStatuses(repo, sha)) as Status[]).filter(
      (status) => status.context === `driftless/${TRACK}`,
    );

  const liveValue = async (name: string): Promise<string | undefined> => {
    try {
      return (await core.readNamespacedConfigMap({ name, namespace: ns })).data?.value;
    } catch {
      return undefined;
    }
  };

  before(async () => {
    const kc = sharedKubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    ns = await createTestNamespace(kc, 'gitea');
    gitea = await startGitea();
    repo = await gitea.createRepo('manifests');
    pushTarget = {
      name: repo.name,
      bareDir: '',
      url: repo.cloneUrl,
      authUrl: repo.cloneUrl,
      username: gitea.user,
      password: gitea.token,
    };
    dir = await mkdtemp(join(tmpdir(), 'driftless-gitea-e2e-'));
    const env = {
      ...process.env,
      E2E_GIT_CREDENTIALS: `${gitea.user}:${gitea.token}`,
      E2E_STATUS_TOKEN: gitea.token,
      E2E_GITEA_SECRET: WEBHOOK_SECRET,
    };
    const configFile = join(dir, 'driftless.yaml');
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
        '  gitea: {secret: env:E2E_GITEA_SECRET}',
        'tracks:',
        `  - name: ${TRACK}`,
        `    repository: ${repo.cloneUrl}`,
        `    namespace: ${ns}`,
        // Only Gitea's webhooks may deploy during the test: a poll would mask a broken delivery.
        '    interval: 1h',
        '    timeout: 20s',
        '    auth: {type: basic, secret: env:E2E_GIT_CREDENTIALS}',
        'notifications:',
        // No apiUrl: read from the repository URL (http://127.0.0.1:<port>/api/v1).
        '  - {name: status-back, type: commitStatus, provider: gitea, token: env:E2E_STATUS_TOKEN}',
        'dashboard: {url: "https://driftless.example.com"}',
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
    // The start-up poll finds an empty repository; let it finish before the first push.
    await eventually(async () => logs.some((line) => line.includes('"fetch failed"')), 30_000);
    await serve.queue.idle();
    await gitea.addWebhook(repo, { url: `${serve.url}/webhook/gitea`, secret: WEBHOOK_SECRET });
  });

  after(async () => {
    await serve?.close();
    ctx?.close();
    await core?.deleteNamespace({ name: ns }).catch(() => undefined);
    await gitea?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('a push is delivered by Gitea, verified and applied; the commit goes pending, then success', async () => {
    // The start-up poll found the new repository empty, and said so in words.
    assert.ok(
      logs.some((line) => line.includes('it has no branches or tags')),
      recentLogs(),
    );

    // Act
    const sha = await pushFiles(pushTarget, { 'settings.yaml': configMap('shop-settings', 'one') });

    // Assess: Gitea's own delivery (signed with the secret) reached serve and deployed the commit.
    assert.ok(
      await eventually(async () => (await liveValue('shop-settings')) === 'one', 60_000),
      recentLogs(),
    );
    await serve.queue.idle();
    const state = await readTrackState(ctx.state, TRACK);
    assert.equal(state.appliedRevision, sha);
    // Deployed by the webhook, not by a poll (the track polls hourly).
    const [entry] = await ctx.state.listHistory(TRACK, 1);
    assert.deepEqual([entry?.revision, entry?.trigger], [sha, 'webhook']);
    assert.ok(
      await eventually(async () => (await statusesOf(sha))[0]?.status === 'success', 30_000),
      recentLogs(),
    );
    const statuses = await statusesOf(sha);
    // Gitea keeps every status it was sent: pending first, success last.
    assert.deepEqual(
      statuses.map((s) => s.status).reverse(),
      ['pending', 'success'],
      JSON.stringify(statuses),
    );
    assert.equal(statuses[0]!.target_url, `https://driftless.example.com/#/tracks/${TRACK}`);
  });

  it('a commit that changes no object (a README) goes pending, then success too', async () => {
    // Act: nothing for the cluster in it; the sync at this commit changes no object.
    const sha = await pushFiles(pushTarget, { 'README.md': '# shop\n\nDeployed by Driftless.\n' });

    // Assess
    assert.ok(
      await eventually(
        async () => (await readTrackState(ctx.state, TRACK)).appliedRevision === sha,
        60_000,
      ),
      recentLogs(),
    );
    await serve.queue.idle();
    assert.ok(
      await eventually(async () => (await statusesOf(sha))[0]?.status === 'success', 30_000),
      `${JSON.stringify(await statusesOf(sha))}${recentLogs()}`,
    );
    assert.deepEqual((await statusesOf(sha)).map((s) => s.status).reverse(), [
      'pending',
      'success',
    ]);
    assert.equal(await liveValue('shop-settings'), 'one');
  });

  it('a broken commit gets failure, with the error', async () => {
    // Act: a ConfigMap whose data is not a map of strings; the API server refuses it.
    const sha = await pushFiles(pushTarget, {
      'settings.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shop-settings\ndata:\n  value: [not, a, string]\n',
    });

    // Assess
    assert.ok(
      await eventually(async () => (await statusesOf(sha))[0]?.status === 'failure', 60_000),
      `${JSON.stringify(await statusesOf(sha))}${recentLogs()}`,
    );
    const [failure] = await statusesOf(sha);
    assert.match(failure!.description, /ConfigMap|shop-settings|data/i);
    // The token never shows up in what Gitea stores or in our logs.
    assert.ok(!JSON.stringify(await statusesOf(sha)).includes(gitea.token));
    assert.ok(!logs.join('\n').includes(gitea.token));
    // The last good revision is still what runs.
    assert.equal(await liveValue('shop-settings'), 'one');
  });

  it('a commit pushed while the track is pinned stays pending, saying so; unpin applies it', async () => {
    // Prepare: the track rolled back to (pinned at) the revision that runs.
    const running = (await readTrackState(ctx.state, TRACK)).appliedRevision;
    assert.ok(running !== null);
    await serve.queue.enqueue({ type: 'rollback', track: TRACK, revision: running });
    await serve.queue.idle();
    assert.equal((await readTrackState(ctx.state, TRACK)).pinned, running, recentLogs());

    // Act: Gitea delivers the push; its sync stops at the pin.
    const sha = await pushFiles(pushTarget, { 'settings.yaml': configMap('shop-settings', 'two') });

    // Assess
    const notApplied = `fetched; not applied while the track is pinned at ${running.slice(0, 12)} (run "driftless unpin" to apply it)`;
    assert.ok(
      await eventually(async () => (await statusesOf(sha))[0]?.description === notApplied, 60_000),
      `${JSON.stringify(await statusesOf(sha))}${recentLogs()}`,
    );
    await serve.queue.idle();
    assert.deepEqual(
      (await statusesOf(sha)).map((s) => [s.status, s.description]),
      [['pending', notApplied]],
      'pending is where it stays, said once',
    );
    assert.equal(await liveValue('shop-settings'), 'one');

    // Act: unpin; the sync it asks for applies the commit.
    await serve.queue.enqueue({ type: 'lifecycle', track: TRACK, action: 'unpin' });

    // Assess
    assert.ok(
      await eventually(async () => (await statusesOf(sha))[0]?.status === 'success', 60_000),
      `${JSON.stringify(await statusesOf(sha))}${recentLogs()}`,
    );
    assert.deepEqual((await statusesOf(sha)).map((s) => s.status).reverse(), [
      'pending',
      'pending',
      'success',
    ]);
    assert.equal(await liveValue('shop-settings'), 'two');
  });
});
