/**
 * The deployed shape, run locally: the five functions of serverless.yml as
 * serverless-esbuild bundles them, run by serverless-offline (`--stage
 * local`), with the S3 store on a real MinIO, the test Git server (basic auth
 * from an env: secret) and the shared test cluster. A signed GitHub push goes
 * webhook -> fetch -> apply; the drift schedule fires on its own and corrects
 * a hand change; the rollback function, invoked through the Lambda Invoke
 * API, brings the previous revision back and pins the track, and the pin
 * holds through the schedule's next poll and drift check.
 *
 * Not covered here: SQS. serverless-offline drives no SQS triggers, so
 * offline the queues are replaced by src/aws/invoke-job-queue.ts, which
 * invokes the fetch and apply functions with SQS-shaped events (the handlers
 * run unchanged); the SQS adapter and batch handling have unit tests
 * (test/unit/aws-queue.test.ts). At most one apply job per track rests here
 * on the apply lease in the track's state, with busy jobs retried.
 *
 * Commit statuses: a third track lives on a real Gitea, whose own signed
 * webhook reaches the webhook function; the apply function, which holds no
 * Git token, hands the statuses of its jobs to fetch as a notify job, and
 * fetch sets them on Gitea.
 *
 * The schedule fires at the start of every minute (serverless-offline's cron
 * for `rate(1 minute)`), and each tick polls the track's ref too: pushes are
 * made away from the minute boundary, so it is the webhook that deploys them.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { HeadObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { CoreV1Api } from '@kubernetes/client-node';
import { createStore, type ClosableStore } from '../../src/store/create-store.ts';
import { deliveryKey } from '../../src/store/keys.ts';
import { deliveryMarker } from '../../src/sync/accept-webhook.ts';
import { readTrackState } from '../../src/sync/track-state.ts';
import {
  pushFiles,
  runGit,
  startGitServer,
  type GitRepository,
  type GitServer,
} from '../harness/git-server.ts';
import { startGitea, type Gitea, type GiteaRepository } from '../harness/gitea.ts';
import { startMinio, type MinioServer, s3StoreLines } from '../harness/minio.ts';
import { startServerlessOffline, type ServerlessOffline } from '../harness/serverless-offline.ts';
import { rendererBinaries, rendererEnvironment } from '../harness/renderers.ts';
import {
  createTestNamespace,
  sharedKubeConfig,
  sharedKubeconfigPath,
} from '../harness/shared-cluster.ts';
import { eventually } from '../harness/eventually.ts';
import { githubPush } from '../harness/push-load.ts';
import { controlPlaneBinaries } from '../harness/testbin.ts';

const GITHUB_SECRET = `gh-${randomUUID()}`;
const GITEA_SECRET = `gitea-${randomUUID()}`;
/** The track on Gitea, and its commit statuses' context. */
const SHOP = 'shop';
const TRACK = 'web';
const OBJECT = 'web-settings';
const PREFIX = 'driftless/';

/** The `_aws` member of a CloudWatch embedded-metric-format line. */
interface EmfDirective {
  readonly CloudWatchMetrics: readonly {
    readonly Namespace: string;
    readonly Dimensions: readonly (readonly string[])[];
    readonly Metrics: readonly { readonly Name: string; readonly Unit: string }[];
  }[];
}

const configMap = (value: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${OBJECT}\ndata:\n  value: "${value}"\n`;

/**
 * Waits until the wall clock is clear of the schedule's tick at second 0,
 * whose ref poll would otherwise race a push's webhook to deploy it.
 */
async function clearOfTick(): Promise<void> {
  const second = new Date().getSeconds();
  if (second >= 52) await sleep((68 - second) * 1000);
  else if (second < 8) await sleep((8 - second) * 1000);
}

const GITTRACK = 'gittrack-app';
const OPS_TRACK = 'ops';
const OPS_SETTINGS =
  '# tuned by the ops team in the cluster\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ops-settings\ndata:\n  level: info # default\n';
const GITTRACK_CRD = join(import.meta.dirname, '..', '..', 'infra', 'crds', 'gittrack.yaml');
const run = promisify(execFile);

const gitTrackConfigMap = (value: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gittrack-settings\ndata:\n  value: "${value}"\n`;

describe('the functions under serverless-offline, S3 store on MinIO', () => {
  let kubectl = (..._args: string[]): Promise<string> =>
    Promise.reject(new Error('kubectl is set up in before()'));
  let gitTrackRepo: GitRepository;
  let opsRepo: GitRepository;
  let minio: MinioServer;
  let gitea: Gitea;
  let shopRepo: GiteaRepository;
  let s3: S3Client;
  let bucket: string;
  let store: ClosableStore;
  let git: GitServer;
  let repo: GitRepository;
  let ns: string;
  let core: CoreV1Api;
  let dir: string;
  let offline: ServerlessOffline;
  let first: string;
  let second: string;
  let firstDelivery: string;

  const postWebhook = (delivery: { body: string; headers: Record<string, string> }) =>
    fetch(`${offline.httpUrl}/webhook/github`, {
      method: 'POST',
      body: delivery.body,
      headers: delivery.headers,
    });

  const liveValue = async (): Promise<string | undefined> => {
    try {
      return (await core.readNamespacedConfigMap({ name: OBJECT, namespace: ns })).data?.value;
    } catch {
      return undefined;
    }
  };

  const gitTrackValue = async (): Promise<string | undefined> => {
    try {
      return (await core.readNamespacedConfigMap({ name: 'gittrack-settings', namespace: ns })).data
        ?.value;
    } catch {
      return undefined;
    }
  };

  const keys = async (under: string): Promise<string[]> => {
    const listed = await s3.send(
      new ListObjectsV2Command({ Bucket: bucket, Prefix: `${PREFIX}${under}` }),
    );
    return (listed.Contents ?? []).map((object) => object.Key ?? '');
  };

  const exists = (key: string): Promise<boolean> =>
    s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key })).then(
      () => true,
      () => false,
    );

  /** The functions' last log lines, to explain a failed assertion. */
  const recentLogs = (): string =>
    `\nfunction logs:\n${offline
      .logs()
      .slice(-20)
      .map((line) => JSON.stringify(line))
      .join('\n')}`;

  before(async () => {
    const kc = sharedKubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    [minio, git, ns, gitea] = await Promise.all([
      startMinio(),
      startGitServer(),
      createTestNamespace(kc, 'offline'),
      startGitea(),
    ]);
    shopRepo = await gitea.createRepo('shop');
    s3 = minio.client();
    bucket = await minio.createBucket();
    repo = await git.createRepository('manifests');
    opsRepo = await git.createRepository('ops');
    await pushFiles(opsRepo, { 'ops.yaml': OPS_SETTINGS });
    const storeConfig = {
      type: 's3',
      bucket,
      prefix: PREFIX,
      endpoint: minio.endpoint,
      region: minio.region,
    } as const;
    store = createStore(storeConfig, { s3Client: s3 });
    dir = await mkdtemp(join(tmpdir(), 'driftless-offline-e2e-'));
    const configFile = join(dir, 'driftless.yaml');
    await writeFile(
      configFile,
      [
        ...s3StoreLines(minio, bucket, PREFIX),
        'clusters:',
        '  - name: test',
        `    kubeconfig: ${sharedKubeconfigPath()}`,
        'webhooks:',
        '  github: {secret: env:E2E_GITHUB_SECRET}',
        '  gitea: {secret: env:E2E_GITEA_SECRET}',
        'tracks:',
        `  - name: ${TRACK}`,
        `    repository: ${repo.url}`,
        `    namespace: ${ns}`,
        // The shortest interval: every tick of the schedule checks the track.
        '    interval: 10s',
        '    auth: {type: basic, secret: env:E2E_GIT_CREDENTIALS}',
        // Two-way sync: the cluster drives this one's ConfigMaps.
        `  - name: ${OPS_TRACK}`,
        `    repository: ${opsRepo.url}`,
        `    namespace: ${ns}`,
        '    interval: 10s',
        '    auth: {type: basic, secret: env:E2E_GIT_CREDENTIALS}',
        '    rules: [{apiGroups: [""], resources: [configmaps], syncTo: git}]',
        // On Gitea: only its webhook deploys it.
        `  - name: ${SHOP}`,
        `    repository: ${shopRepo.cloneUrl}`,
        `    namespace: ${ns}`,
        '    interval: 1h',
        '    auth: {type: basic, secret: env:E2E_GITEA_CREDENTIALS}',
        'tracksFrom:',
        '  - {cluster: test, gitTracks: true, deployKeySecrets: "env:E2E_GITTRACK_"}',
        'notifications:',
        `  - {name: status-back, type: commitStatus, provider: gitea, token: env:E2E_GITEA_TOKEN, tracks: [${SHOP}]}`,
        '',
      ].join('\n'),
    );
    const { kubectl: kubectlBinary } = await controlPlaneBinaries();
    kubectl = async (...args) =>
      (await run(kubectlBinary, ['--kubeconfig', sharedKubeconfigPath(), ...args])).stdout;
    await kubectl('apply', '-f', GITTRACK_CRD);
    await kubectl('wait', '--for=condition=Established', 'crd/gittracks.faros.pusher.com');
    gitTrackRepo = await git.createRepository('gittrack-app');
    const started = performance.now();
    offline = await startServerlessOffline({
      configFile,
      env: {
        // serverless-offline ignores layers: the fetch function finds the host's renderers.
        ...rendererEnvironment(await rendererBinaries()),
        E2E_GITHUB_SECRET: GITHUB_SECRET,
        E2E_GIT_CREDENTIALS: `${git.username}:${git.password}`,
        E2E_GITEA_SECRET: GITEA_SECRET,
        E2E_GITEA_CREDENTIALS: `${gitea.user}:${gitea.token}`,
        E2E_GITEA_TOKEN: gitea.token,
        // A GitTrack's deploy key, under the source's prefix and the GitTrack's namespace.
        [`E2E_GITTRACK_${ns.toUpperCase().replace(/-/g, '_')}_GIT_CREDS_CREDENTIALS`]: `${git.username}:${git.password}`,
        // The store's S3 client takes MinIO's credentials from the environment, as in Lambda.
        AWS_ACCESS_KEY_ID: minio.accessKeyId,
        AWS_SECRET_ACCESS_KEY: minio.secretAccessKey,
        AWS_SESSION_TOKEN: '',
        AWS_PROFILE: '',
        AWS_EC2_METADATA_DISABLED: 'true',
      },
    });
    console.error(`# serverless offline ready in ${performance.now() - started} ms`);
    await gitea.addWebhook(shopRepo, {
      url: `${offline.httpUrl}/webhook/gitea`,
      secret: GITEA_SECRET,
    });
  });

  after(async () => {
    await offline?.stop();
    // The finalizer would hold the namespace's deletion with nothing left to release it.
    await kubectl('delete', 'gittrack', '--all', '-n', ns, '--wait=false').catch(() => '');
    await kubectl(
      'patch',
      'gittrack',
      GITTRACK,
      '-n',
      ns,
      '--type=merge',
      '-p',
      '{"metadata":{"finalizers":null}}',
    ).catch(() => '');
    // For a look at every function's log after a run: DRIFTLESS_E2E_OFFLINE_LOG=<file>.
    const keep = process.env.DRIFTLESS_E2E_OFFLINE_LOG;
    if (keep && offline) await writeFile(keep, offline.output());
    store?.close();
    await core?.deleteNamespace({ name: ns }).catch(() => undefined);
    await Promise.all([git?.stop(), minio?.stop(), gitea?.stop()]);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('applies a signed push through webhook, fetch and apply, and records it in S3', async () => {
    // Prepare
    await clearOfTick();
    // A kustomization: the fetch function renders it with the real kustomize.
    first = await pushFiles(repo, {
      'kustomization.yaml':
        'resources: [settings.yaml]\ncommonAnnotations: {rendered-by: kustomize}\n',
      'settings.yaml': configMap('one'),
    });
    firstDelivery = randomUUID();
    const delivery = githubPush(
      repo,
      { before: '0'.repeat(40), after: first },
      GITHUB_SECRET,
      firstDelivery,
    );

    // Act
    const response = await postWebhook(delivery);
    const answer = (await response.json()) as { kind: string; tracks: string[] };

    // Assess
    assert.equal(response.status, 202);
    assert.deepEqual([answer.kind, answer.tracks], ['push', [TRACK]]);
    assert.ok(await eventually(async () => (await liveValue()) === 'one', 30_000), recentLogs());
    assert.ok(
      await eventually(
        async () => (await readTrackState(store.state, TRACK)).appliedRevision === first,
        10_000,
      ),
      recentLogs(),
    );
    const live = await core.readNamespacedConfigMap({ name: OBJECT, namespace: ns });
    assert.equal(live.metadata?.annotations?.['rendered-by'], 'kustomize');
    const history = await store.state.listHistory(TRACK);
    assert.ok(
      history.some(
        (entry) =>
          entry.revision === first && entry.result === 'applied' && entry.trigger === 'webhook',
      ),
      JSON.stringify(history),
    );
    assert.ok(
      await exists(`${PREFIX}${deliveryKey(deliveryMarker('github', firstDelivery))}`),
      'delivery marker',
    );
    assert.ok((await keys(`artifacts/${TRACK}/`)).length > 0, 'artifact stored');
    assert.ok((await keys(`state/${TRACK}`)).length > 0, 'state stored');
    assert.ok((await keys(`history/${TRACK}/`)).length > 0, 'history stored');
  });

  it('answers 401 to a forged delivery and records no delivery marker', async () => {
    // Prepare
    const id = randomUUID();
    const delivery = githubPush(repo, { before: first, after: first }, 'not-the-secret', id);

    // Act
    const response = await postWebhook(delivery);

    // Assess
    assert.equal(response.status, 401);
    assert.equal(await exists(`${PREFIX}${deliveryKey(deliveryMarker('github', id))}`), false);
    assert.equal(
      offline.logs().some((line) => line.deliveryId === id && line.function !== 'webhook'),
      false,
      'no function but the webhook saw the forged delivery',
    );
  });

  it('rolls back to the previous revision and pins the track when rollback is invoked', async () => {
    // Prepare
    await clearOfTick();
    second = await pushFiles(repo, { 'settings.yaml': configMap('two') });
    const response = await postWebhook(
      githubPush(repo, { before: first, after: second }, GITHUB_SECRET),
    );
    assert.equal(response.status, 202);
    assert.ok(await eventually(async () => (await liveValue()) === 'two', 30_000), recentLogs());

    // Act
    const answer = await offline.invoke('rollback', { track: TRACK, previous: true });

    // Assess
    assert.equal(answer.status, 200);
    assert.equal(answer.functionError, undefined, JSON.stringify(answer.payload));
    assert.deepEqual(answer.payload, { track: TRACK, revision: first, queued: true });
    assert.ok(await eventually(async () => (await liveValue()) === 'one', 30_000), recentLogs());
    assert.ok(
      await eventually(async () => {
        const state = await readTrackState(store.state, TRACK);
        return state.pinned === first && state.appliedRevision === first;
      }, 10_000),
      recentLogs(),
    );
    const [latest] = await store.state.listHistory(TRACK, 1);
    assert.deepEqual([latest?.revision, latest?.trigger], [first, 'rollback']);
  });

  it('corrects a hand change when the drift schedule fires on its own, keeping the pin', async () => {
    // Prepare
    const changedAt = new Date();
    const live = await core.readNamespacedConfigMap({ name: OBJECT, namespace: ns });
    await core.replaceNamespacedConfigMap({
      name: OBJECT,
      namespace: ns,
      body: { ...live, data: { value: 'by hand' } },
    });

    // Act: nothing but waiting; the schedule fires every minute.
    const corrected = await eventually(async () => (await liveValue()) === 'one', 80_000);

    // Assess
    assert.ok(corrected, `the hand change is still there${recentLogs()}`);
    // The state is written once the correction is done, a moment after the cluster shows it.
    const checked = await eventually(async () => {
      const { driftCheckedAt } = await readTrackState(store.state, TRACK);
      return driftCheckedAt != null && Date.parse(driftCheckedAt) > changedAt.getTime();
    }, 10_000);
    assert.ok(checked, `driftCheckedAt is not after the hand change${recentLogs()}`);
    const history = await store.state.listHistory(TRACK);
    assert.ok(
      history.some(
        (entry) =>
          entry.result === 'drift-corrected' &&
          entry.trigger === 'schedule' &&
          Date.parse(entry.appliedAt) > changedAt.getTime(),
      ),
      JSON.stringify(history),
    );
    // The same tick polled main, which is at the second revision: the sync it asked for holds to the pin.
    const refused = await eventually(
      async () =>
        offline
          .logs()
          .some(
            (line) =>
              line.function === 'apply' &&
              line.msg === 'sync finished' &&
              line.revision === second &&
              line.result === 'pinned',
          ),
      10_000,
    );
    assert.ok(refused, `no pinned sync of the second revision${recentLogs()}`);
    const state = await readTrackState(store.state, TRACK);
    assert.deepEqual([state.pinned, state.appliedRevision], [first, first]);
    assert.equal(await liveValue(), 'one');
  });

  it('answers the dashboard through its function: reads need a user, an unpin by one is recorded and followed', async () => {
    // Prepare: serverless-offline runs the routes without API Gateway's authorizer (noAuth) and
    // hands the function the claims of the token it is sent, as the JWT authorizer would.
    const claims = { email: 'alice@example.test', exp: Math.floor(Date.now() / 1000) + 3600 };
    const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const token = `${part({ alg: 'none', typ: 'JWT' })}.${part(claims)}.`;
    const asAlice = { authorization: `Bearer ${token}` };
    const pinned = await readTrackState(store.state, TRACK);
    assert.equal(pinned.pinned, first, 'the rollback test left the track pinned');

    // Act
    const anonymous = await fetch(`${offline.httpUrl}/api/tracks`);
    const page = await fetch(`${offline.httpUrl}/`, { headers: asAlice });
    const tracks = await fetch(`${offline.httpUrl}/api/tracks`, { headers: asAlice });
    const refused = await fetch(`${offline.httpUrl}/api/tracks/${TRACK}/unpin`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    const unpin = await fetch(`${offline.httpUrl}/api/tracks/${TRACK}/unpin`, {
      method: 'POST',
      headers: { ...asAlice, 'content-type': 'application/json' },
      body: '{}',
    });

    // Assess
    assert.equal(anonymous.status, 401);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<html/i);
    assert.equal(tracks.status, 200);
    assert.match(await tracks.text(), new RegExp(`"${TRACK}"`));
    assert.equal(refused.status, 401);
    assert.equal(unpin.status, 202, await unpin.clone().text());
    assert.equal(((await unpin.json()) as { by?: string }).by, claims.email);
    // Unpinned, the track follows main again: the apply function fetches at once.
    assert.ok(await eventually(async () => (await liveValue()) === 'two', 60_000), recentLogs());
    const state = await readTrackState(store.state, TRACK);
    assert.equal(state.pinned ?? undefined, undefined, 'still pinned');
    const history = await store.state.listHistory(TRACK, 5);
    assert.ok(
      history.some((entry) => entry.by === claims.email),
      `no history entry by ${claims.email}: ${JSON.stringify(history)}`,
    );
  });

  it('adds a track with kubectl: a GitTrack is discovered, published, deployed and given its status', async () => {
    // Prepare: the GitTrack's repository has a ConfigMap.
    await pushFiles(gitTrackRepo, { 'settings.yaml': gitTrackConfigMap('from-gittrack') });
    const file = join(dir, 'gittrack.json');
    await writeFile(
      file,
      JSON.stringify({
        apiVersion: 'faros.pusher.com/v1alpha1',
        kind: 'GitTrack',
        metadata: { name: GITTRACK, namespace: ns },
        spec: {
          repository: gitTrackRepo.url,
          reference: 'main',
          deployKey: { secretName: 'git-creds', key: 'credentials', type: 'HTTPBasicAuth' },
        },
      }),
    );

    // Act: kubectl apply, then nothing but the schedule: a tick's discovery publishes it,
    // the next tick polls it like any track.
    await kubectl('apply', '-f', file);

    // Assess: published to S3 by the apply function, deployed, .status written back.
    assert.ok(
      await eventually(
        async () => (await keys('published/cluster-test.json')).length === 1,
        90_000,
      ),
      recentLogs(),
    );
    assert.ok(
      await eventually(async () => (await gitTrackValue()) === 'from-gittrack', 90_000),
      recentLogs(),
    );
    const status = async () =>
      JSON.parse(
        await kubectl('get', 'gittrack', GITTRACK, '-n', ns, '-o', 'jsonpath={.status}'),
      ) as {
        objectsApplied?: number;
        conditions?: { type: string; status: string }[];
      };
    assert.ok(
      await eventually(async () => (await status()).objectsApplied === 1, 30_000),
      recentLogs(),
    );
    assert.equal((await status()).conditions?.find((c) => c.type === 'Ready')?.status, 'True');

    // A push to the GitTrack's repository: the webhook function matches the published track.
    await clearOfTick();
    const head = await pushFiles(gitTrackRepo, { 'settings.yaml': gitTrackConfigMap('pushed') });
    const response = await postWebhook(
      githubPush(gitTrackRepo, { before: '0'.repeat(40), after: head }, GITHUB_SECRET),
    );
    const answer = (await response.json()) as { kind: string; tracks: string[] };
    assert.deepEqual([response.status, answer.tracks], [202, [GITTRACK]]);
    assert.ok(
      await eventually(async () => (await gitTrackValue()) === 'pushed', 30_000),
      recentLogs(),
    );
  });

  it('writes a cluster change back to Git: apply finds it, fetch commits it (syncTo: git)', async () => {
    // Prepare: the schedule's polls deployed the ops track.
    const opsLevel = async () => {
      try {
        return (await core.readNamespacedConfigMap({ name: 'ops-settings', namespace: ns })).data
          ?.level;
      } catch {
        return undefined;
      }
    };
    assert.ok(await eventually(async () => (await opsLevel()) === 'info', 90_000), recentLogs());

    // Act: changed in the cluster; then nothing but the schedule.
    await core.patchNamespacedConfigMap({
      name: 'ops-settings',
      namespace: ns,
      body: [{ op: 'replace', path: '/data/level', value: 'debug' }],
    });

    // Assess: committed to Git by the fetch function, the comments kept; the cluster keeps it.
    const inGit = () => runGit(['--git-dir', opsRepo.bareDir, 'show', 'main:ops.yaml']);
    assert.ok(
      await eventually(async () => /level: debug # default/.test(await inGit()), 90_000),
      `${await inGit()}${recentLogs()}`,
    );
    assert.match(await inGit(), /^# tuned by the ops team in the cluster\n/);
    // The job logs its end after its push, so the line may come a moment after the commit.
    const writeBacks = () => offline.logs().filter((line) => line.msg === 'writeBack finished');
    assert.ok(await eventually(async () => writeBacks().length > 0, 30_000), recentLogs());
    assert.equal(writeBacks()[0]?.['function'], 'fetch');
    assert.equal(writeBacks()[0]?.['result'], 'written-back');
    assert.equal(await opsLevel(), 'debug');
  });

  it("writes the jobs' metrics as CloudWatch EMF lines, time-to-deploy carried from the webhook", () => {
    // Assess: the lines Powertools printed, one metric directive each (src/aws/function-metrics.ts).
    const samples = offline
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{"_aws"'))
      .map((line) => JSON.parse(line) as Record<string, unknown> & { _aws: EmfDirective });
    const find = (name: string, dimensions: Record<string, string>) =>
      samples.find(
        (line) =>
          line._aws.CloudWatchMetrics[0]?.Namespace === 'Driftless' &&
          line._aws.CloudWatchMetrics[0]?.Metrics.some((metric) => metric.Name === name) &&
          JSON.stringify(line._aws.CloudWatchMetrics[0]?.Dimensions) ===
            JSON.stringify([Object.keys(dimensions)]) &&
          Object.entries(dimensions).every(([key, value]) => line[key] === value),
      );
    assert.ok(
      find('driftless_webhook_deliveries_total', { provider: 'github', status: '202' }),
      'webhook delivery counted',
    );
    assert.ok(
      find('driftless_jobs_total', { track: TRACK, job: 'fetch', result: 'fetched' }),
      'fetch job counted',
    );
    assert.ok(
      find('driftless_jobs_total', { track: TRACK, job: 'sync', result: 'applied' }),
      'sync job counted',
    );
    const deploy = find('driftless_time_to_deploy_seconds', { track: TRACK });
    assert.ok(deploy, 'time to deploy written');
    const seconds = deploy['driftless_time_to_deploy_seconds'];
    assert.ok(typeof seconds === 'number' && seconds > 0 && seconds < 120, String(seconds));
    assert.ok(
      find('driftless_track_child_status', { track: TRACK, namespace: ns, status: 'inSync' }),
      'child status written',
    );
  });

  it("sets commit statuses on Gitea: apply's events reach them through a notify job in fetch", async () => {
    // Act: Gitea delivers its own signed push webhook to the webhook function.
    await clearOfTick();
    const sha = await pushFiles(
      {
        name: shopRepo.name,
        bareDir: '',
        url: shopRepo.cloneUrl,
        authUrl: shopRepo.cloneUrl,
        username: gitea.user,
        password: gitea.token,
      },
      {
        'shop.yaml':
          'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shop-settings\ndata:\n  value: "one"\n',
      },
    );

    // Assess: pending from fetch, then success once applied (the track does not wait for health).
    const statuses = async () =>
      ((await gitea.commitStatuses(shopRepo, sha)) as { status: string; context: string }[]).filter(
        (status) => status.context === `driftless/${SHOP}`,
      );
    assert.ok(
      await eventually(async () => (await statuses())[0]?.status === 'success', 60_000),
      `${JSON.stringify(await statuses())}${recentLogs()}`,
    );
    assert.deepEqual((await statuses()).map((status) => status.status).reverse(), [
      'pending',
      'success',
    ]);
    // The success came from a notify job that the fetch function ran; apply only queued it.
    const notified = offline
      .logs()
      .filter((line) => line.msg === 'notify finished' && line.track === SHOP);
    assert.deepEqual([...new Set(notified.map((line) => line.function))], ['fetch'], recentLogs());
  });

  it('drops no job and logs no secret', () => {
    // Assess
    const logs = offline.logs();
    assert.ok(logs.length > 0, 'the functions logged');
    assert.deepEqual(
      logs.filter((line) => line.msg === 'job dropped'),
      [],
    );
    const output = offline.output();
    for (const secret of [
      GITHUB_SECRET,
      GITEA_SECRET,
      gitea.token,
      git.password,
      minio.secretAccessKey,
    ]) {
      assert.ok(!output.includes(secret), 'a secret appears in the output');
    }
  });
});
