/**
 * The deployed entry points (handlers/fetch.ts, handlers/apply.ts: the
 * production SQS job queue, src/aws/sqs-job-queue.ts) on real SQS queues:
 * moto's server, with the queues created from serverless.yml's own resources
 * (FIFO apply queue with per-group de-duplication, dead-letter queues and
 * maxReceiveCount). test/harness/sqs-event-source.ts drives the functions
 * from the queues as Lambda's event source mapping does (batch size and
 * concurrency from serverless.yml, ReportBatchItemFailures honoured). Git
 * credentials come from Secrets Manager and SSM (moto), read by the
 * production secret reader; store on MinIO, the shared test cluster.
 *
 * The handlers run in this process, each invocation a call of the entry
 * point's handler with its default ports (SQS, the AWS secret reader).
 * `DRIFTLESS_E2E_SQS_RUNTIME=serverless-offline` runs the same scenarios on
 * the serverless-esbuild bundles under serverless-offline (Invoke API) — not
 * the default: there, an apply invocation sometimes stopped answering while
 * another one waited for health (no log line, until serverless-offline's
 * 300 s timeout; 3 of 7 runs), which is not understood yet.
 *
 * One attribute differs from serverless.yml: VisibilityTimeout, shortened so
 * a failed message comes back within the test (fetch), and for the apply
 * queue only in the last scenario, to be shorter than a slow apply.
 *
 * What slows an apply down is a health wait the test controls: the beta
 * track waits for its Pods, which no kubelet runs, until the test marks one
 * Ready. No assertion is about time; order comes from the event source's
 * stamps (moto's SequenceNumber is random digits, not SQS's increasing one).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  CreateSecretCommand,
  SecretsManagerClient,
  type SecretsManagerClientConfig,
} from '@aws-sdk/client-secrets-manager';
import {
  CreateQueueCommand,
  ReceiveMessageCommand,
  SetQueueAttributesCommand,
  SQSClient,
  type SQSClientConfig,
} from '@aws-sdk/client-sqs';
import { PutParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { CoreV1Api } from '@kubernetes/client-node';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { createAwsSecretReader } from '../../src/aws/secrets.ts';
import { SqsJobQueue } from '../../src/aws/sqs-job-queue.ts';
import { SecretUnavailableError } from '../../src/config/read-secret.ts';
import { createStore, type ClosableStore } from '../../src/store/create-store.ts';
import { stateKey } from '../../src/store/keys.ts';
import type { Job } from '../../src/sync/jobs.ts';
import { readTrackState, updateTrackState } from '../../src/sync/track-state.ts';
import {
  createDeclaredQueues,
  queueAttributes,
  readDeclaredQueues,
  type CreatedQueue,
  type DeclaredQueues,
} from '../harness/declared-queues.ts';
import { eventually } from '../harness/eventually.ts';
import {
  pushFiles,
  startGitServer,
  type GitRepository,
  type GitServer,
} from '../harness/git-server.ts';
import { startMinio, type MinioServer, s3StoreLines } from '../harness/minio.ts';
import { MOTO_REGION, startMoto, type MotoServer } from '../harness/moto.ts';
import { rendererBinaries, rendererEnvironment } from '../harness/renderers.ts';
import {
  startServerlessOffline,
  type InvokeAnswer,
  type ServerlessOffline,
} from '../harness/serverless-offline.ts';
import type { SqsEvent } from '../../src/aws/lambda-events.ts';
import { jsonLogger, silentLogger } from '../../src/logger.ts';
import { parseConfig } from '../../src/config/parse-config.ts';
import {
  createTestNamespace,
  sharedKubeConfig,
  sharedKubeconfigPath,
} from '../harness/shared-cluster.ts';
import {
  inProcessInvoke,
  sqsEventSource,
  Timeline,
  type Delivery,
  type EventSource,
} from '../harness/sqs-event-source.ts';

const STAGE = 'local';
/**
 * `DRIFTLESS_E2E_SQS_RUNTIME=serverless-offline` runs the functions as bundles under
 * serverless-offline instead of in this process; see the module comment.
 */
const VIA_SERVERLESS_OFFLINE = process.env.DRIFTLESS_E2E_SQS_RUNTIME === 'serverless-offline';
const PREFIX = 'driftless/';
const ALPHA = 'alpha';
const BETA = 'beta';
/**
 * A track whose state document is not JSON: its fetch job cannot run, every time, and is retried
 * (a person may repair the document; job-handler.ts).
 */
const GHOST = 'ghost';
/** Not a track of the config (removed while its job was queued): no retry can run its job. */
const GONE = 'gone';
const ALPHA_SECRET = 'driftless/git/alpha';
const BETA_PARAMETER = '/driftless/git/beta';
/** Seconds a received fetch job stays invisible (serverless.yml: six times the fetch timeout). */
const FETCH_VISIBILITY_S = 10;
/** Seconds a received apply job stays invisible in the last scenario: less than its apply. */
const APPLY_SHORT_VISIBILITY_S = 4;

const configMap = (name: string, value: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  value: "${value}"\n`;

/** A Pod nothing will run (no kubelet): healthy only once the test marks it Ready. */
const gatePod = (name: string): string =>
  `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${name}\nspec:\n  containers:\n    - name: main\n      image: registry.invalid/gate:1\n`;

/** The job a message body holds. */
const jobOf = (delivery: Delivery): Job => JSON.parse(delivery.body) as Job;

describe('the deployed functions on SQS queues (moto), as serverless.yml declares them', () => {
  let moto: MotoServer;
  let minio: MinioServer;
  let git: GitServer;
  let alphaRepo: GitRepository;
  let betaRepo: GitRepository;
  let ns: string;
  let core: CoreV1Api;
  let dir: string;
  let store: ClosableStore;
  let sqs: SQSClient;
  let declared: DeclaredQueues;
  let queues: Map<string, CreatedQueue>;
  let offline: ServerlessOffline | undefined;
  /** The JSON lines the functions logged so far. */
  let functionLogs: () => Record<string, unknown>[] = () => [];
  let fetchSource: EventSource;
  let applySource: EventSource;
  let jobs: SqsJobQueue;
  const timeline = new Timeline();
  /** The revisions pushed, by name. */
  const revisions: Record<string, string> = {};
  /** The ConfigMap value each of alpha's revisions holds. */
  const alphaValues: Record<string, string> = {};

  const queue = (logicalId: string): CreatedQueue => {
    const created = queues.get(logicalId);
    if (created === undefined) throw new Error(`serverless.yml declares no queue ${logicalId}`);
    return created;
  };
  const deliveries = (): Delivery[] => [...fetchSource.deliveries(), ...applySource.deliveries()];
  const liveValue = async (name: string): Promise<string | undefined> =>
    (await core.readNamespacedConfigMap({ name, namespace: ns }).catch(() => undefined))?.data
      ?.value;
  const podExists = (name: string): Promise<boolean> =>
    core.readNamespacedPod({ name, namespace: ns }).then(
      () => true,
      () => false,
    );
  /** What a kubelet would report once the Pod's containers are up. */
  const markReady = async (name: string): Promise<void> => {
    const pod = await core.readNamespacedPod({ name, namespace: ns });
    pod.status = {
      phase: 'Running',
      conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: new Date() }],
    };
    await core.replaceNamespacedPodStatus({ name, namespace: ns, body: pod });
  };
  const messagesIn = async (logicalId: string): Promise<number> => {
    const attributes = await queueAttributes(sqs, queue(logicalId).url, [
      'ApproximateNumberOfMessages',
      'ApproximateNumberOfMessagesNotVisible',
    ]);
    return (
      Number(attributes.ApproximateNumberOfMessages) +
      Number(attributes.ApproximateNumberOfMessagesNotVisible)
    );
  };
  /** The event sources' record and the functions' last lines, to explain a failed assertion. */
  const explain = (): string =>
    `\ndeliveries:\n${deliveries()
      .map((d) => JSON.stringify({ ...d, body: jobOf(d) }))
      .join('\n')}\nfunction logs:\n${functionLogs()
      .slice(-15)
      .map((line) => JSON.stringify(line))
      .join('\n')}`;

  before(async () => {
    const kc = sharedKubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    [moto, minio, git, ns, declared] = await Promise.all([
      startMoto(),
      startMinio(),
      startGitServer(),
      createTestNamespace(kc, 'sqs'),
      readDeclaredQueues(STAGE),
    ]);
    const aws: SQSClientConfig & SecretsManagerClientConfig = {
      endpoint: moto.endpoint,
      region: MOTO_REGION,
      credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
    };
    sqs = new SQSClient(aws);
    // For the production secret reader, whose SDK clients take all this from the environment.
    Object.assign(process.env, moto.env);
    queues = await createDeclaredQueues(sqs, declared, {
      FetchQueue: { VisibilityTimeout: String(FETCH_VISIBILITY_S) },
    });
    [alphaRepo, betaRepo] = await Promise.all([
      git.createRepository(ALPHA),
      git.createRepository(BETA),
    ]);
    for (const [name, value] of [
      ['c1', 'one'],
      ['c2', 'two'],
      ['c3', 'three'],
    ] as const) {
      const revision = await pushFiles(alphaRepo, { 'settings.yaml': configMap('alpha', value) });
      revisions[name] = revision;
      alphaValues[revision] = value;
    }
    revisions.b1 = await pushFiles(betaRepo, { 'settings.yaml': configMap('beta', 'b1') });

    // The Git credentials, where the deployed functions keep them.
    const credentials = `${git.username}:${git.password}`;
    await new SecretsManagerClient(aws).send(
      new CreateSecretCommand({ Name: ALPHA_SECRET, SecretString: credentials }),
    );
    await new SSMClient(aws).send(
      new PutParameterCommand({ Name: BETA_PARAMETER, Value: credentials, Type: 'SecureString' }),
    );

    const s3 = minio.client();
    const bucket = await minio.createBucket();
    store = createStore(
      { type: 's3', bucket, prefix: PREFIX, endpoint: minio.endpoint, region: minio.region },
      { s3Client: s3 },
    );
    // Under serverless-offline the drift schedule fires every minute and would queue a poll and
    // a drift check of each never-checked track in the middle of the scenarios: checked now.
    for (const track of [ALPHA, BETA]) {
      await updateTrackState(store.state, track, (state) => {
        state.driftCheckedAt = new Date().toISOString();
      });
    }
    await s3.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: `${PREFIX}${stateKey(GHOST)}`,
        Body: '{"appliedRevision": ',
      }),
    );
    dir = await mkdtemp(join(tmpdir(), 'driftless-sqs-e2e-'));
    const configFile = join(dir, 'driftless.yaml');
    await writeFile(
      configFile,
      [
        ...s3StoreLines(minio, bucket, PREFIX),
        'clusters:',
        '  - name: test',
        `    kubeconfig: ${sharedKubeconfigPath()}`,
        'tracks:',
        `  - name: ${ALPHA}`,
        `    repository: ${alphaRepo.url}`,
        `    namespace: ${ns}`,
        '    interval: 1h',
        `    auth: {type: basic, secret: "aws-secretsmanager:${ALPHA_SECRET}"}`,
        `  - name: ${BETA}`,
        `    repository: ${betaRepo.url}`,
        `    namespace: ${ns}`,
        '    interval: 1h',
        '    wait: true',
        '    timeout: 2m',
        `    auth: {type: basic, secret: "aws-ssm:${BETA_PARAMETER}"}`,
        `  - name: ${GHOST}`,
        `    repository: ${alphaRepo.url}`,
        `    namespace: ${ns}`,
        '    interval: 1h',
        `    auth: {type: basic, secret: "aws-secretsmanager:${ALPHA_SECRET}"}`,
        '',
      ].join('\n'),
    );
    // What Lambda gives the fetch and apply functions (serverless.yml's environment).
    const functionEnv = {
      ...moto.env,
      DRIFTLESS_CONFIG: configFile,
      DRIFTLESS_FETCH_QUEUE_URL: queue('FetchQueue').url,
      DRIFTLESS_APPLY_QUEUE_URL: queue('ApplyQueue').url,
      DRIFTLESS_GIT_CACHE_DIR: join(dir, 'git'),
      // The store's S3 client takes MinIO's credentials; moto accepts any.
      AWS_ACCESS_KEY_ID: minio.accessKeyId,
      AWS_SECRET_ACCESS_KEY: minio.secretAccessKey,
      AWS_SESSION_TOKEN: '',
      AWS_PROFILE: '',
      AWS_EC2_METADATA_DISABLED: 'true',
      POWERTOOLS_METRICS_DISABLED: 'true',
    };
    let invoke: (functionName: string) => (event: unknown) => Promise<InvokeAnswer>;
    if (VIA_SERVERLESS_OFFLINE) {
      const started = performance.now();
      offline = await startServerlessOffline({
        configFile,
        stage: STAGE,
        // The deployed entry points, sending to the queues in moto.
        params: {
          handlers: 'handlers',
          fetchQueueUrl: queue('FetchQueue').url,
          applyQueueUrl: queue('ApplyQueue').url,
        },
        env: { ...rendererEnvironment(await rendererBinaries()), ...functionEnv },
      });
      console.error(`# serverless offline ready in ${Math.round(performance.now() - started)} ms`);
      functionLogs = () => offline?.logs() ?? [];
      invoke = (functionName) => (event) => offline!.invoke(functionName, event);
    } else {
      // The entry points' own handlers with their default (SQS) ports, in this process.
      Object.assign(process.env, functionEnv);
      const logged: Record<string, unknown>[] = [];
      const logger = (name: string) =>
        jsonLogger(
          (line) => logged.push(JSON.parse(line) as Record<string, unknown>),
          {},
          {
            function: name,
          },
        );
      const { createFetchHandler } = await import('../../handlers/fetch.ts');
      const { createApplyHandler } = await import('../../handlers/apply.ts');
      const handlers: Record<string, (event: SqsEvent) => Promise<unknown>> = {
        fetch: createFetchHandler(undefined, logger('fetch')),
        apply: createApplyHandler(undefined, logger('apply')),
      };
      functionLogs = () => logged;
      invoke = (functionName) => inProcessInvoke(handlers[functionName]!);
    }

    const sourceOf = (functionName: string): EventSource => {
      const trigger = declared.triggers.find((t) => t.functionName === functionName);
      if (trigger === undefined) throw new Error(`serverless.yml: no sqs event on ${functionName}`);
      assert.equal(trigger.functionResponseType, 'ReportBatchItemFailures');
      const created = queue(trigger.queue);
      return sqsEventSource({
        name: functionName,
        client: sqs,
        queueUrl: created.url,
        queueArn: created.arn,
        region: MOTO_REGION,
        batchSize: trigger.batchSize,
        // Lambda polls a queue with five concurrent batches to begin with.
        concurrency: trigger.maximumConcurrency ?? 5,
        invoke: invoke(functionName),
        timeline,
      });
    };
    fetchSource = sourceOf('fetch');
    applySource = sourceOf('apply');
    jobs = new SqsJobQueue({
      client: sqs,
      fetchQueueUrl: queue('FetchQueue').url,
      applyQueueUrl: queue('ApplyQueue').url,
    });
  });

  after(async () => {
    // Polling stops first; invocations still in flight end with serverless-offline.
    const polling = Promise.all([fetchSource?.stop(), applySource?.stop()]);
    await offline?.stop();
    await polling;
    const keep = process.env.DRIFTLESS_E2E_SQS_LOG;
    if (keep && offline) await writeFile(keep, offline.output());
    store?.close();
    sqs?.destroy();
    await core?.deleteNamespace({ name: ns }).catch(() => undefined);
    await Promise.all([git?.stop(), minio?.stop(), moto?.stop()]);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('creates the queues with the attributes serverless.yml declares', async () => {
    // Prepare
    const apply = queue('ApplyQueue');

    // Act
    const attributes = await queueAttributes(sqs, apply.url);

    // Assess
    assert.equal(attributes.FifoQueue, 'true');
    assert.equal(attributes.ContentBasedDeduplication, 'false');
    assert.equal(attributes.DeduplicationScope, 'messageGroup');
    assert.equal(attributes.FifoThroughputLimit, 'perMessageGroupId');
    assert.equal(attributes.VisibilityTimeout, String(apply.declared.properties.VisibilityTimeout));
    const redrive = JSON.parse(attributes.RedrivePolicy ?? '{}') as Record<string, unknown>;
    assert.deepEqual(redrive, {
      deadLetterTargetArn: queue('ApplyDeadLetterQueue').arn,
      maxReceiveCount: apply.declared.maxReceiveCount,
    });
    assert.ok(queue('ApplyDeadLetterQueue').url.endsWith('.fifo'));
    assert.equal(
      (await queueAttributes(sqs, queue('FetchQueue').url)).VisibilityTimeout,
      String(FETCH_VISIBILITY_S),
    );
  });

  it("delivers each of a person's equal requests once: SQS drops only a retried invocation's", async () => {
    // Prepare: a FIFO queue as the apply queue is declared, which no function polls.
    const fifo = { ...queue('ApplyQueue').attributes };
    delete fifo.RedrivePolicy;
    const { QueueUrl: url } = await sqs.send(
      new CreateQueueCommand({ QueueName: 'driftless-local-requests.fifo', Attributes: fifo }),
    );
    const { createRollbackHandler } = await import('../../handlers/rollback.ts');
    const tracks = parseConfig(
      `tracks: [{name: ${ALPHA}, repository: ${alphaRepo.url}, namespace: ${ns}}]`,
      'driftless.yaml',
    ).tracks;
    const requests = new SqsJobQueue({ client: sqs, applyQueueUrl: url! });
    const rollback = createRollbackHandler(
      async () => ({ tracks, artifacts: store.artifacts, state: store.state, queue: requests }),
      silentLogger,
    );
    const retried = { getRemainingTimeInMillis: () => 60_000, awsRequestId: 'request-1' };

    // Act: suspend, resume, suspend; then one invocation of unpin that Lambda retries.
    await rollback({ track: ALPHA, action: 'suspend' });
    await rollback({ track: ALPHA, action: 'resume' });
    await rollback({ track: ALPHA, action: 'suspend' });
    await rollback({ track: ALPHA, action: 'unpin' }, retried);
    await rollback({ track: ALPHA, action: 'unpin' }, retried);
    const received: string[] = [];
    for (let round = 0; round < 5; round++) {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: url,
          MaxNumberOfMessages: 10,
          VisibilityTimeout: 60,
        }),
      );
      received.push(
        ...Messages.map((m) => (JSON.parse(m.Body ?? '{}') as { action: string }).action),
      );
    }

    // Assess
    assert.deepEqual(received, ['suspend', 'resume', 'suspend', 'unpin']);
  });

  it('reads Secrets Manager and SSM values with the production secret reader', async () => {
    // Prepare
    const read = createAwsSecretReader({ env: {} });
    const credentials = `${git.username}:${git.password}`;

    // Act
    const fromSecretsManager = await read({ scheme: 'aws-secretsmanager', id: ALPHA_SECRET });
    const fromSsm = await read({ scheme: 'aws-ssm', name: BETA_PARAMETER });
    const missing = await read({ scheme: 'aws-ssm', name: '/driftless/git/none' }).then(
      () => undefined,
      (error: unknown) => error,
    );

    // Assess
    assert.equal(fromSecretsManager, credentials);
    assert.equal(fromSsm, credentials);
    assert.ok(missing instanceof SecretUnavailableError, String(missing));
    assert.equal(missing.message, 'secret aws-ssm:/driftless/git/none: not found');
  });

  it('fetches from the fetch queue with credentials from Secrets Manager and SSM; of a batch, only the failed message comes back', async () => {
    // Prepare: six fetch jobs, one of a track whose state cannot be read, one of a track the
    // config does not have; sent before the event sources poll, so they can come as one batch
    // (batchSize 5) and one more.
    const sent: Job[] = [
      { type: 'fetch', track: ALPHA, trigger: 'manual', revision: revisions.c1 },
      { type: 'fetch', track: ALPHA, trigger: 'manual', revision: revisions.c2 },
      { type: 'fetch', track: ALPHA, trigger: 'manual', revision: revisions.c3 },
      { type: 'fetch', track: BETA, trigger: 'manual' },
      { type: 'fetch', track: GHOST, trigger: 'manual' },
      { type: 'fetch', track: GONE, trigger: 'manual' },
    ];
    for (const job of sent) await jobs.enqueue(job);

    // Act
    fetchSource.start();
    applySource.start();
    const ghostDeliveries = (): Delivery[] =>
      fetchSource.deliveries().filter((d) => jobOf(d).track === GHOST);
    const settled = await eventually(async () => {
      const others = fetchSource.deliveries().filter((d) => jobOf(d).track !== GHOST);
      return (
        ghostDeliveries().length >= 2 &&
        others.length === 5 &&
        others.every((d) => d.deleted === true) &&
        // The syncs those fetches queued have run.
        (await messagesIn('ApplyQueue')) === 0 &&
        applySource.deliveries().every((d) => d.finished !== undefined)
      );
    }, 60_000);

    // Assess
    assert.ok(settled, explain());
    const [firstGhost, secondGhost] = ghostDeliveries();
    assert.ok(firstGhost && secondGhost);
    assert.equal(firstGhost.verdict, 'reported failed');
    assert.equal(firstGhost.receiveCount, 1);
    assert.equal(secondGhost.receiveCount, 2);
    assert.equal(secondGhost.messageId, firstGhost.messageId);
    // Its batch held other jobs, which were deleted and never delivered again.
    const batchmates = fetchSource
      .deliveries()
      .filter((d) => d.batch === firstGhost.batch && d !== firstGhost);
    assert.ok(batchmates.length >= 1, explain());
    assert.ok(
      batchmates.every((d) => d.verdict === 'succeeded' && d.deleted === true),
      explain(),
    );
    const others = fetchSource.deliveries().filter((d) => jobOf(d).track !== GHOST);
    assert.deepEqual(
      others.map((d) => d.receiveCount),
      [1, 1, 1, 1, 1],
    );
    // The job of the removed track was deleted at its first receive, not retried until the DLQ.
    const gone = others.find((d) => jobOf(d).track === GONE);
    assert.equal(gone?.verdict, 'succeeded', explain());
    assert.ok(
      functionLogs().some(
        (line) =>
          line.msg === 'job dropped: no retry can run it' &&
          line.messageId === gone?.messageId &&
          line.track === GONE,
      ),
      explain(),
    );
    // Both tracks were fetched: the credentials came from Secrets Manager (alpha) and SSM (beta).
    for (const revision of [revisions.c1, revisions.c2, revisions.c3]) {
      assert.ok(await store.artifacts.has(ALPHA, revision ?? ''), `alpha ${revision} stored`);
    }
    assert.ok(await store.artifacts.has(BETA, revisions.b1 ?? ''), 'beta stored');
    assert.equal((await readTrackState(store.state, BETA)).appliedRevision, revisions.b1);
    assert.equal(await liveValue('beta'), 'b1');
    console.error(
      `# fetch: ${fetchSource.deliveries().length} deliveries; batch of the failed job: ${firstGhost.batchSize}; apply: ${applySource.deliveries().length} deliveries`,
    );
  });

  it('runs one apply job per track at a time, in order, while other tracks run in parallel', async () => {
    // Prepare: beta's next revision waits for a Pod to be Ready, holding its message group.
    revisions.b2 = await pushFiles(betaRepo, {
      'settings.yaml': configMap('beta', 'b2'),
      'gate.yaml': gatePod('gate-2'),
    });
    await jobs.enqueue({ type: 'fetch', track: BETA, trigger: 'manual' });
    assert.ok(await eventually(() => podExists('gate-2'), 60_000), explain());
    // Alpha's three revisions, the one applied now last, so that each sync changes the cluster.
    const { appliedRevision } = await readTrackState(store.state, ALPHA);
    const order = (['c1', 'c2', 'c3'] as const)
      .map((name) => revisions[name] ?? '')
      .sort((a, b) => Number(a === appliedRevision) - Number(b === appliedRevision));
    const syncs = order.map((revision, index) => ({
      type: 'sync' as const,
      track: ALPHA,
      revision,
      // Resolved after every fetch so far, one after the other: none is superseded.
      resolvedAt: new Date(Date.now() + index).toISOString(),
      trigger: 'manual' as const,
    }));

    // Act: a drift check of beta queued behind its sync, then alpha's three syncs in order.
    const driftTick = new Date().toISOString();
    await jobs.enqueue({ type: 'drift', track: BETA, tick: driftTick });
    for (const sync of syncs) await jobs.enqueue(sync);
    const alphaSyncs = (): Delivery[] =>
      applySource
        .deliveries()
        .filter(
          (d) =>
            jobOf(d).type === 'sync' &&
            syncs.some((s) => JSON.stringify(s) === JSON.stringify(jobOf(d))),
        );
    const alphaDone = await eventually(
      async () => alphaSyncs().length === 3 && alphaSyncs().every((d) => d.finished !== undefined),
      60_000,
    );
    const betaSync = applySource
      .deliveries()
      .find(
        (d) =>
          jobOf(d).type === 'sync' &&
          'revision' in jobOf(d) &&
          jobOf(d).track === BETA &&
          (jobOf(d) as { revision: string }).revision === revisions.b2,
      );
    const betaInFlight = betaSync !== undefined && betaSync.finished === undefined;
    const driftBefore = applySource.deliveries().some((d) => jobOf(d).type === 'drift');
    await markReady('gate-2');
    const betaDone = await eventually(
      async () =>
        applySource
          .deliveries()
          .some((d) => jobOf(d).type === 'drift' && d.finished !== undefined) &&
        betaSync?.finished !== undefined,
      60_000,
    );

    // Assess
    assert.ok(alphaDone && betaDone, explain());
    assert.ok(betaInFlight, `beta's sync was in flight while alpha's three ran${explain()}`);
    assert.ok(betaSync);
    const ordered = alphaSyncs();
    // Received in the order sent, each after the one before had finished.
    assert.deepEqual(
      ordered.map((d) => (jobOf(d) as { revision: string }).revision),
      syncs.map((s) => s.revision),
    );
    for (let i = 1; i < ordered.length; i++) {
      assert.ok(ordered[i]!.received > ordered[i - 1]!.finished!, explain());
    }
    // In parallel: all three started and ended while beta's sync ran.
    assert.ok(
      ordered.every((d) => d.received > betaSync.received),
      explain(),
    );
    assert.ok(
      ordered.every((d) => d.finished! < betaSync.finished!),
      explain(),
    );
    // Beta's drift check waited for its group: delivered only after beta's sync ended.
    assert.equal(driftBefore, false);
    const drift = applySource.deliveries().find((d) => jobOf(d).type === 'drift');
    assert.ok(drift && drift.received > betaSync.finished!, explain());
    // Applied in that order: the last one is live, history has them newest first.
    assert.equal(await liveValue('alpha'), alphaValues[order[2] ?? '']);
    const history = await store.state.listHistory(ALPHA, 3);
    assert.deepEqual(
      history.map((entry) => [entry.revision, entry.result]),
      [...order].reverse().map((revision) => [revision, 'applied']),
    );
    assert.equal((await readTrackState(store.state, BETA)).appliedRevision, revisions.b2);
    console.error(
      `# alpha stamps ${ordered.map((d) => `${d.received}-${d.finished}`).join(', ')}; beta sync ${betaSync.received}-${betaSync.finished}; drift ${drift.received}`,
    );
  });

  it('when the visibility timeout is shorter than an apply, redeliveries are refused by the lease and the job ends in the DLQ after maxReceiveCount', async () => {
    // Prepare
    const apply = queue('ApplyQueue');
    await sqs.send(
      new SetQueueAttributesCommand({
        QueueUrl: apply.url,
        Attributes: { VisibilityTimeout: String(APPLY_SHORT_VISIBILITY_S) },
      }),
    );
    revisions.b3 = await pushFiles(betaRepo, {
      'settings.yaml': configMap('beta', 'b3'),
      'gate.yaml': gatePod('gate-2'),
      'gate-3.yaml': gatePod('gate-3'),
    });
    const isB3 = (d: Delivery): boolean =>
      jobOf(d).type === 'sync' && (jobOf(d) as { revision: string }).revision === revisions.b3;

    // Act: the sync of b3 waits for gate-3 until its message has gone to the DLQ.
    await jobs.enqueue({ type: 'fetch', track: BETA, trigger: 'manual' });
    const deadLettered = await eventually(
      async () => (await messagesIn('ApplyDeadLetterQueue')) === 1,
      90_000,
      250,
    );
    const duringWait = applySource
      .deliveries()
      .filter(isB3)
      .map((d) => ({ ...d }));
    await markReady('gate-3');
    const finished = await eventually(
      async () =>
        applySource
          .deliveries()
          .filter(isB3)
          .every((d) => d.finished !== undefined),
      60_000,
    );

    // Assess
    assert.ok(
      deadLettered && finished,
      `${explain()}\nbeta: ${JSON.stringify(await readTrackState(store.state, BETA))}`,
    );
    const b3 = applySource.deliveries().filter(isB3);
    assert.deepEqual(
      b3.map((d) => d.receiveCount),
      Array.from({ length: apply.declared.maxReceiveCount ?? 0 }, (_, i) => i + 1),
      explain(),
    );
    assert.equal(new Set(b3.map((d) => d.messageId)).size, 1);
    // While the first ran, each redelivery was refused (the lease) and reported failed.
    assert.equal(duringWait[0]?.finished, undefined);
    assert.ok(
      b3.slice(1).every((d) => d.verdict === 'reported failed' && d.finished! < b3[0]!.finished!),
      explain(),
    );
    const busy = functionLogs().filter(
      (line) => line.msg === 'job failed' && line.messageId === b3[0]!.messageId,
    );
    assert.equal(busy.length, b3.length - 1, explain());
    assert.ok(
      busy.every((line) => JSON.stringify(line).includes('another apply job runs until')),
      JSON.stringify(busy),
    );
    // The first run applied b3 once; its delete came too late: the message was in the DLQ.
    assert.equal(b3[0]!.verdict, 'succeeded');
    assert.equal(b3[0]!.deleted, false);
    assert.equal(b3[0]!.deleteError, 'ReceiptHandleIsInvalid');
    assert.equal(await liveValue('beta'), 'b3');
    const applied = (await store.state.listHistory(BETA)).filter(
      (entry) => entry.revision === revisions.b3,
    );
    assert.deepEqual(
      applied.map((entry) => entry.result),
      ['applied'],
    );
    const { Messages: dead = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queue('ApplyDeadLetterQueue').url,
        MaxNumberOfMessages: 10,
        MessageSystemAttributeNames: ['All'],
      }),
    );
    assert.equal(dead.length, 1);
    assert.deepEqual(JSON.parse(dead[0]?.Body ?? '{}'), jobOf(b3[0]!));
    assert.equal(dead[0]?.Attributes?.MessageGroupId, BETA);
    console.error(
      `# b3: receives ${b3.map((d) => `${d.receiveCount}:${d.verdict}${d.deleteError ? `/${d.deleteError}` : ''}`).join(', ')}; DLQ receive count ${dead[0]?.Attributes?.ApproximateReceiveCount}`,
    );
  });

  it('dead-letters the fetch job that always fails after maxReceiveCount receives', async () => {
    // Prepare
    const fetch = queue('FetchQueue');
    const ghost = (): Delivery[] =>
      fetchSource.deliveries().filter((d) => jobOf(d).track === GHOST);

    // Act
    const deadLettered = await eventually(
      async () => (await messagesIn('FetchDeadLetterQueue')) === 1,
      90_000,
      250,
    );

    // Assess
    assert.ok(deadLettered, explain());
    assert.deepEqual(
      ghost().map((d) => [d.receiveCount, d.verdict]),
      Array.from({ length: fetch.declared.maxReceiveCount ?? 0 }, (_, i) => [
        i + 1,
        'reported failed',
      ]),
    );
    const { Messages: dead = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queue('FetchDeadLetterQueue').url,
        MaxNumberOfMessages: 10,
      }),
    );
    assert.equal(dead.length, 1);
    assert.deepEqual(JSON.parse(dead[0]?.Body ?? '{}'), {
      type: 'fetch',
      track: GHOST,
      trigger: 'manual',
    });
    assert.equal(await messagesIn('FetchQueue'), 0);
    const fetchJobs = fetchSource.deliveries().filter((d) => jobOf(d).track !== GHOST);
    console.error(
      `# fetch deliveries: ${fetchSource.deliveries().length} (${fetchJobs.length} of other jobs, each received once: ${fetchJobs.every((d) => d.receiveCount === 1)}); ghost receives ${ghost().length}`,
    );
  });
});
