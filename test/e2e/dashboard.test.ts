/**
 * The dashboard of `driftless serve` end to end, with real components only:
 * the test Git server, the shared test cluster, the filesystem store, the
 * stack started by the same `openLocalContext` and `startServe` the command
 * uses, and Debian's Chromium driven by Playwright for the pages. Its JSON
 * API is tested first, as scripts use it; then the page as people use it.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api } from '@kubernetes/client-node';
import type { OverviewRow, TrackDetail } from '../../src/dashboard/types.ts';
import { jsonLogger } from '../../src/logger.ts';
import { startServe, type RunningServe } from '../../src/serve/start-serve.ts';
import { openLocalContext, type LocalContext } from '../../src/sync/local-context.ts';
import { readTrackState, updateTrackState } from '../../src/sync/track-state.ts';
import type { Page } from 'playwright-core';
import {
  checkAccessibility,
  describeViolations,
  launchBrowser,
  type LaunchedBrowser,
} from '../harness/browser.ts';
import { eventually } from '../harness/eventually.ts';
import { pushFiles, startGitServer, type GitServer } from '../harness/git-server.ts';
import {
  createTestNamespace,
  sharedKubeConfig,
  sharedKubeconfigPath,
} from '../harness/shared-cluster.ts';

const PASSWORD = 'alice-password-for-e2e';

/** The README and docs/dashboard.md show these: written by the page tests on every run. */
const SCREENSHOT_DIR = fileURLToPath(new URL('../../docs/screenshots/', import.meta.url));
const SCREENSHOTS = {
  overview: join(SCREENSHOT_DIR, 'overview.png'),
  track: join(SCREENSHOT_DIR, 'track.png'),
  rollback: join(SCREENSHOT_DIR, 'rollback.png'),
};
const configMap = (name: string, value: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  level: "${value}"\n`;

/** The stack the dashboard tests share: two tracks, each deployed once, `web` at two revisions. */
export interface DashboardStack {
  readonly serve: RunningServe;
  readonly ctx: LocalContext;
  readonly core: CoreV1Api;
  readonly ns: string;
  /** `web`'s revisions, oldest first. */
  readonly revisions: readonly string[];
  /** The live value of ConfigMap `web-settings`. */
  level(): Promise<string | undefined>;
  recentLogs(): string;
  stop(): Promise<void>;
}

export async function startDashboardStack(): Promise<DashboardStack> {
  const kc = sharedKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const ns = await createTestNamespace(kc, 'dashboard');
  const git: GitServer = await startGitServer();
  const dir = await mkdtemp(join(tmpdir(), 'driftless-dashboard-e2e-'));
  const logs: string[] = [];
  const web = await git.createRepository('web');
  const api = await git.createRepository('api');
  const env = {
    ...process.env,
    E2E_GIT_CREDENTIALS: `${git.username}:${git.password}`,
    E2E_ALICE_PASSWORD: PASSWORD,
  };
  const track = (name: string, url: string) => [
    `  - name: ${name}`,
    `    repository: ${url}`,
    `    namespace: ${ns}`,
    // Only the test deploys: a scheduled poll would undo a rollback's expectations.
    '    interval: 1h',
    '    auth: {type: basic, secret: env:E2E_GIT_CREDENTIALS}',
  ];
  const configFile = join(dir, 'driftless.yaml');
  await writeFile(
    configFile,
    [
      `store: {type: fs, path: ${join(dir, 'store')}}`,
      'clusters:',
      `  - {name: test, kubeconfig: ${sharedKubeconfigPath()}}`,
      'tracks:',
      ...track('web', web.url),
      ...track('api', api.url),
      'dashboard:',
      '  readAccess: open',
      '  users: [{name: alice, password: env:E2E_ALICE_PASSWORD}]',
      '',
    ].join('\n'),
  );
  const revisions = [
    await pushFiles(
      web,
      { 'settings.yaml': configMap('web-settings', 'info') },
      {
        message: 'Deploy web with info logs',
      },
    ),
  ];
  const apiRevision = await pushFiles(api, { 'settings.yaml': configMap('api-settings', 'warn') });
  const ctx = await openLocalContext(configFile, env);
  const serve = await startServe(ctx, {
    port: 0,
    host: '127.0.0.1',
    env,
    logger: jsonLogger((line) => logs.push(line)),
  });
  // The start-up poll deploys both tracks; then web gets its second revision. The scheduler
  // queues that poll after reading the tracks' states, so the queue may still be empty here:
  // wait for both applies, else web's second revision could be pushed before its first poll.
  const applied = async (track: string, revision: string | undefined) =>
    (await readTrackState(ctx.state, track)).appliedRevision === revision;
  assert.ok(
    await eventually(
      async () => (await applied('web', revisions[0])) && (await applied('api', apiRevision)),
    ),
    `the start-up poll applied both tracks\n${logs.slice(-15).join('\n')}`,
  );
  await serve.queue.idle();
  revisions.push(
    await pushFiles(
      web,
      { 'settings.yaml': configMap('web-settings', 'debug') },
      {
        message: 'Turn on debug logs',
      },
    ),
  );
  await serve.queue.enqueue({ type: 'fetch', track: 'web', trigger: 'manual' });
  await serve.queue.idle();
  const level = async () => {
    try {
      return (await core.readNamespacedConfigMap({ name: 'web-settings', namespace: ns })).data
        ?.level;
    } catch {
      return undefined;
    }
  };
  return {
    serve,
    ctx,
    core,
    ns,
    revisions,
    level,
    recentLogs: () => `\nrecent logs:\n${logs.slice(-15).join('\n')}`,
    async stop() {
      await serve.close();
      ctx.close();
      await core.deleteNamespace({ name: ns }).catch(() => undefined);
      await git.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

const alice = `Basic ${Buffer.from(`alice:${PASSWORD}`).toString('base64')}`;

describe("the dashboard's JSON API on driftless serve", () => {
  let stack: DashboardStack;
  const get = async <T>(path: string): Promise<T> => {
    const response = await fetch(`${stack.serve.url}${path}`);
    assert.equal(response.status, 200, `GET ${path}`);
    return (await response.json()) as T;
  };
  const act = (path: string, body: unknown, authorization?: string) =>
    fetch(`${stack.serve.url}${path}`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        ...(authorization ? { Authorization: authorization } : {}),
      },
      body: JSON.stringify(body),
    });

  before(async () => {
    stack = await startDashboardStack();
  });
  after(() => stack?.stop());

  it('lists both tracks, healthy, with the applied commit', async () => {
    const rows = await get<OverviewRow[]>('/api/overview');
    assert.deepEqual(
      rows.map((row) => [row.status.track, row.ready, row.appliedCommit?.message]),
      [
        ['web', 'True', 'Turn on debug logs'],
        ['api', 'True', 'Update settings.yaml'],
      ],
      stack.recentLogs(),
    );
    assert.equal(rows[0]?.lastSync?.result, 'applied');
  });

  it('shows a hand change as drift of the changed field, read live from the cluster', async () => {
    await stack.core.patchNamespacedConfigMap({
      name: 'web-settings',
      namespace: stack.ns,
      body: [{ op: 'replace', path: '/data/level', value: 'trace' }],
    });
    const detail = await get<TrackDetail>('/api/tracks/web');
    const settings = detail.objects.objects.find((o) => o.subject.endsWith('/web-settings'));
    assert.equal(detail.objects.source, 'live');
    assert.equal(settings?.sync, 'OutOfSync');
    // What the cluster has, then what Git has: the page shows both.
    assert.deepEqual(settings?.patch, [
      { op: 'test', path: '/data/level', value: 'trace' },
      { op: 'replace', path: '/data/level', value: 'debug' },
    ]);
  });

  it('refuses an action without signing in, and changes nothing', async () => {
    const response = await act('/api/tracks/web/rollback', { previous: true });
    assert.equal(response.status, 401);
    await stack.serve.queue.idle();
    assert.equal((await readTrackState(stack.ctx.state, 'web')).pinned, null);
  });

  it('rolls back for alice: the track is pinned, the cluster follows, history says who', async () => {
    const [previous] = stack.revisions;
    const response = await act('/api/tracks/web/rollback', { revision: previous }, alice);
    assert.equal(response.status, 202);
    assert.deepEqual(await response.json(), {
      track: 'web',
      action: 'rollback',
      queued: true,
      revision: previous,
      by: 'alice',
    });
    assert.ok(await eventually(async () => (await stack.level()) === 'info'), stack.recentLogs());
    await stack.serve.queue.idle();
    const detail = await get<TrackDetail>('/api/tracks/web');
    assert.equal(detail.row.status.pinned, previous);
    const [latest] = detail.history;
    assert.deepEqual(
      [latest?.revision, latest?.trigger, latest?.by],
      [previous, 'rollback', 'alice'],
    );
  });
});

describe('the dashboard page in Chromium', () => {
  let stack: DashboardStack;
  let browser: LaunchedBrowser;
  let page: Page;

  /** Problems the page reported, without the 401/404 answers the tests provoke on purpose. */
  const consoleErrors = () =>
    browser.problemsOf(page).filter((problem) => problem.kind !== 'resource');

  const expectAccessible = async (where: string) => {
    const violations = await checkAccessibility(page);
    assert.deepEqual(violations, [], `${where}:\n${describeViolations(violations)}`);
  };

  before(async () => {
    stack = await startDashboardStack();
    browser = await launchBrowser();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  });
  after(async () => {
    await browser?.close();
    await stack?.stop();
  });

  it('lists the tracks with their health after a sync, accessible to a screen reader', async () => {
    await page.goto(`${stack.serve.url}/`);
    const row = (track: string) =>
      page.getByRole('row').filter({ has: page.getByRole('link', { name: track, exact: true }) });
    const web = row('web');
    await web.getByText('Ready').first().waitFor();
    assert.match(await web.innerText(), /Turn on debug logs/);
    assert.match(await row('api').innerText(), /Ready/);
    await expectAccessible('overview');
    await page.screenshot({ path: SCREENSHOTS.overview, fullPage: true });
    assert.deepEqual(consoleErrors(), []);
  });

  it('marks a track busy while an apply job holds it, with which job, since when and its lease', async () => {
    // Prepare: the lease of a sync running on another machine (another boot id).
    const since = new Date().toISOString();
    const until = new Date(Date.now() + 5 * 60_000).toISOString();
    const elsewhere = {
      boot: 'another machine',
      pidNamespace: 'pid:[1]',
      pid: 4242,
      host: 'build-7',
    };
    await updateTrackState(stack.ctx.state, 'api', (state) => {
      state.applyLease = {
        holder: '3f2a9c1e-7b4d-4e5f-8a9b-0c1d2e3f4a5b',
        until,
        since,
        job: 'sync',
        process: elsewhere,
      };
    });
    const row = (track: string) =>
      page.getByRole('row').filter({ has: page.getByRole('link', { name: track, exact: true }) });
    const apiRow = () => row('api');

    // Act
    await page.goto(`${stack.serve.url}/`);
    const busy = apiRow().getByText('Busy', { exact: true });
    await busy.waitFor();
    const title = await busy.getAttribute('title');
    await updateTrackState(stack.ctx.state, 'api', (state) => {
      state.applyLease = null;
    });
    await page.reload();
    await apiRow().getByText('Ready').first().waitFor();
    const afterRelease = await apiRow().innerText();

    // Assess
    assert.match(
      title ?? '',
      /^a sync runs since .+ \(pid 4242 on build-7\); other syncs, rollbacks and drift checks wait .*; lease 3f2a9c1e, for driftless unlock/,
    );
    assert.doesNotMatch(afterRelease, /Busy/);
    assert.doesNotMatch(await row('web').innerText(), /Busy/);
    await expectAccessible('overview with a busy track');
    assert.deepEqual(consoleErrors(), []);
  });

  it('shows a hand change as drift, with the changed field and both values', async () => {
    await stack.core.patchNamespacedConfigMap({
      name: 'web-settings',
      namespace: stack.ns,
      body: [{ op: 'replace', path: '/data/level', value: 'trace' }],
    });
    await page.goto(`${stack.serve.url}/#/tracks/web`);
    const drift = page.locator('details.drift').first();
    await drift.waitFor();
    await drift.locator('summary').click();
    const text = await drift.innerText();
    assert.match(text, /data\.level/);
    assert.match(text, /"trace"/);
    assert.match(text, /"debug"/);
    await expectAccessible('track page');
    await page.screenshot({ path: SCREENSHOTS.track, fullPage: true });
    assert.deepEqual(consoleErrors(), []);
  });

  it('refuses an action to someone not signed in: the buttons say why, the API says 401', async () => {
    await page.goto(`${stack.serve.url}/#/tracks/web`);
    const rollback = page.getByRole('button', { name: 'Roll back…' });
    await rollback.waitFor();
    assert.equal(await rollback.isDisabled(), true);
    await page.getByText('Sign in to run actions.').waitFor();
    const status = await page.evaluate(async () => {
      const response = await fetch('api/tracks/web/sync', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: '{}',
      });
      return response.status;
    });
    assert.equal(status, 401);
  });

  it('rolls back through the page for alice: pinned, the cluster follows, history says alice', async () => {
    const [previous] = stack.revisions;
    await page.goto(`${stack.serve.url}/#/tracks/web`);
    await page.getByRole('button', { name: 'Sign in' }).first().click();
    const signIn = page.getByRole('dialog');
    await signIn.getByLabel('User').fill('alice');
    await signIn.getByLabel('Password').fill(PASSWORD);
    await signIn.getByRole('button', { name: 'Sign in' }).click();
    const rollback = page.getByRole('button', { name: 'Roll back…' });
    assert.ok(await eventually(() => rollback.isEnabled(), 10_000), 'signed in, alice may act');
    await rollback.click();
    const confirm = page.getByRole('dialog');
    await confirm.getByLabel('Revision').selectOption(previous!);
    await page.screenshot({ path: SCREENSHOTS.rollback });
    await confirm.getByRole('button', { name: 'Roll back' }).click();
    await page.getByText(/queued by alice/i).waitFor();

    assert.ok(await eventually(async () => (await stack.level()) === 'info'), stack.recentLogs());
    await stack.serve.queue.idle();
    assert.equal((await readTrackState(stack.ctx.state, 'web')).pinned, previous);
    // The page shows it on its next refresh: pinned, and alice in the history.
    await page.getByRole('button', { name: 'Unpin' }).waitFor({ timeout: 15_000 });
    await page.locator('text=by alice').first().waitFor({ timeout: 15_000 });
    assert.deepEqual(consoleErrors(), []);
  });
});
