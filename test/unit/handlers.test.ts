import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { checkedApplyDeps, createApplyHandler } from '../../handlers/apply.ts';
import { createDriftHandler } from '../../handlers/drift.ts';
import { createFetchHandler } from '../../handlers/fetch.ts';
import { createRollbackHandler } from '../../handlers/rollback.ts';
import { createWebhookHandler } from '../../handlers/webhook.ts';
import { silentMetrics } from '../../src/aws/function-metrics.ts';
import type { HttpApiEvent, SqsEvent, SqsRecord } from '../../src/aws/lambda-events.ts';
import { SqsJobQueue } from '../../src/aws/sqs-job-queue.ts';
import type { SendMessageCommand } from '@aws-sdk/client-sqs';
import type { KubernetesPort } from '../../src/cluster/kubernetes-port.ts';
import { ConfigError } from '../../src/config/config-error.ts';
import { parseConfig } from '../../src/config/parse-config.ts';
import type { Config } from '../../src/config/types.ts';
import { jsonLogger, silentLogger, type Logger } from '../../src/logger.ts';
import type { GitSource } from '../../src/source/ports.ts';
import { createStore, type ClosableStore } from '../../src/store/create-store.ts';
import { StoreUnavailableError } from '../../src/store/errors.ts';
import type { AcceptWebhookDeps } from '../../src/sync/accept-webhook.ts';
import type { Job, JobQueue } from '../../src/sync/jobs.ts';
import type { JobDeps } from '../../src/sync/run-job.ts';
import { readTrackState } from '../../src/sync/track-state.ts';
import { InMemoryCluster } from './fakes/in-memory-cluster.ts';

const SECRET = 'It is a secret to everybody';
const PUSH = readFileSync('test/fixtures/webhooks/github-push.json', 'utf8');
const PING = readFileSync('test/fixtures/webhooks/github-ping.json', 'utf8');
const PUSHED_SHA = '0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c';
const SHA_A = 'a'.repeat(40);
const SHA_B = 'b'.repeat(40);

const CONFIG: Config = parseConfig(
  `
webhooks:
  github: {secret: env:GITHUB_WEBHOOK_SECRET}
tracks:
  - name: web
    repository: https://github.com/octo-org/manifests
    reference: main
  - name: other
    repository: https://github.com/octo-org/elsewhere.git
  - name: paused
    repository: https://github.com/octo-org/manifests
    suspend: true
`,
  'driftless.yaml',
);

function recordingQueue(): JobQueue & { jobs: Job[] } {
  const jobs: Job[] = [];
  return { jobs, enqueue: async (job) => void jobs.push(job) };
}

const FETCH_URL = 'https://sqs.eu-west-1.amazonaws.com/123456789012/driftless-dev-fetch';
const APPLY_URL = 'https://sqs.eu-west-1.amazonaws.com/123456789012/driftless-dev-apply.fifo';

/** The production SQS queue over a client that keeps each SendMessage's parameters. */
function recordingSqsQueue(): { queue: SqsJobQueue; sent: SendMessageCommand['input'][] } {
  const sent: SendMessageCommand['input'][] = [];
  const client = {
    send: async (command: SendMessageCommand) => {
      sent.push(command.input);
      return {};
    },
  } as unknown as ConstructorParameters<typeof SqsJobQueue>[0]['client'];
  return {
    queue: new SqsJobQueue({ client, fetchQueueUrl: FETCH_URL, applyQueueUrl: APPLY_URL }),
    sent,
  };
}

/** A logger keeping the JSON lines it writes, as CloudWatch would get them. */
function jsonLines(): { log: Logger; lines: () => Record<string, unknown>[] } {
  const written: string[] = [];
  return {
    log: jsonLogger((line) => void written.push(line)),
    lines: () => written.map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

function githubEvent(body: string, headers: Record<string, string>, secret = SECRET): HttpApiEvent {
  const signature = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
  return {
    pathParameters: { provider: 'github' },
    headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature, ...headers },
    // API Gateway hands binary-safe bodies over base64-encoded.
    body: Buffer.from(body).toString('base64'),
    isBase64Encoded: true,
  };
}

function webhookFixture(queue: JobQueue & { jobs: Job[] } = recordingQueue()) {
  const marked: string[] = [];
  const deps: AcceptWebhookDeps = {
    tracks: CONFIG.tracks,
    secretsOf: async (host) => (CONFIG.webhooks[host] ? [SECRET] : undefined),
    deliveries: {
      markDelivery: async (id) => {
        if (marked.includes(id)) return false;
        marked.push(id);
        return true;
      },
      isDelivered: async (id) => marked.includes(id),
    },
    queue,
  };
  return {
    marked,
    queue,
    handler: createWebhookHandler(async () => deps, silentLogger, silentMetrics),
  };
}

const PUSH_HEADERS = { 'x-github-event': 'push', 'x-github-delivery': 'delivery-1' };

describe('webhook handler', () => {
  it('queues a fetch job per matching track with the pushed sha as a hint, and answers 202', async () => {
    // Prepare
    const { handler, queue, marked } = webhookFixture();

    // Act
    const result = await handler(githubEvent(PUSH, PUSH_HEADERS));

    // Assess
    assert.equal(result.statusCode, 202);
    assert.deepEqual(JSON.parse(result.body).tracks, ['web']);
    assert.deepEqual(queue.jobs, [
      {
        type: 'fetch',
        track: 'web',
        trigger: 'webhook',
        hint: { revision: PUSHED_SHA, ref: 'refs/heads/main' },
        deliveryId: 'delivery-1',
      },
    ]);
    assert.deepEqual(marked, ['github:delivery-1']);
  });

  it('marks a delivery once its jobs are queued, not before', async () => {
    // Prepare: a queue that notes whether the delivery was marked when a job arrived.
    const markedWhenQueued: boolean[] = [];
    const jobs: Job[] = [];
    const fixture = webhookFixture({
      jobs,
      enqueue: async (job) => {
        markedWhenQueued.push(fixture.marked.includes('github:delivery-1'));
        jobs.push(job);
      },
    });

    // Act
    const result = await fixture.handler(githubEvent(PUSH, PUSH_HEADERS));

    // Assess
    assert.equal(result.statusCode, 202);
    assert.deepEqual(markedWhenQueued, [false]);
    assert.deepEqual(fixture.marked, ['github:delivery-1']);
  });

  it('answers 202 when its jobs are queued but the mark cannot be written; a retry is queued again', async () => {
    // Prepare: a delivery log whose writes fail (the store unreachable after the queueing).
    const queue = recordingQueue();
    const handler = createWebhookHandler(
      async () => ({
        tracks: CONFIG.tracks,
        secretsOf: async () => [SECRET],
        deliveries: {
          isDelivered: async () => false,
          markDelivery: async () => Promise.reject(new Error('S3: SlowDown')),
        },
        queue,
      }),
      silentLogger,
      silentMetrics,
    );

    // Act
    const first = await handler(githubEvent(PUSH, PUSH_HEADERS));
    const retry = await handler(githubEvent(PUSH, PUSH_HEADERS));

    // Assess: nothing lost; the retry's job is one more fetch of the same push.
    assert.deepEqual([first.statusCode, retry.statusCode], [202, 202]);
    assert.equal(JSON.parse(first.body).kind, 'push');
    assert.match(
      JSON.parse(first.body).reason,
      /; the delivery id could not be recorded: a redelivery is queued again$/,
    );
    assert.doesNotMatch(first.body, /SlowDown/);
    assert.equal(queue.jobs.length, 2);
  });

  it('answers 401 to a bad signature, and queues and marks nothing', async () => {
    // Prepare
    const { handler, queue, marked } = webhookFixture();

    // Act
    const result = await handler(githubEvent(PUSH, PUSH_HEADERS, 'not the secret'));

    // Assess
    assert.equal(result.statusCode, 401);
    assert.equal(queue.jobs.length, 0);
    assert.equal(marked.length, 0);
  });

  it('answers 401 to a missing signature', async () => {
    // Prepare
    const { handler, queue } = webhookFixture();
    const event = githubEvent(PUSH, PUSH_HEADERS);
    const headers = { ...event.headers, 'x-hub-signature-256': undefined };

    // Act
    const result = await handler({ ...event, headers });

    // Assess
    assert.equal(result.statusCode, 401);
    assert.equal(queue.jobs.length, 0);
  });

  it('answers 202 to a redelivery without queueing again', async () => {
    // Prepare
    const { handler, queue } = webhookFixture();
    await handler(githubEvent(PUSH, PUSH_HEADERS));

    // Act
    const result = await handler(githubEvent(PUSH, PUSH_HEADERS));

    // Assess
    assert.equal(result.statusCode, 202);
    assert.equal(JSON.parse(result.body).kind, 'duplicate');
    assert.equal(queue.jobs.length, 1);
  });

  it('answers 200 to a ping, marking and queueing nothing', async () => {
    // Prepare
    const { handler, queue, marked } = webhookFixture();

    // Act
    const result = await handler(
      githubEvent(PING, { 'x-github-event': 'ping', 'x-github-delivery': 'p' }),
    );

    // Assess
    assert.equal(result.statusCode, 200);
    assert.equal(queue.jobs.length, 0);
    assert.equal(marked.length, 0);
  });

  it('answers 404 for a provider that is not configured', async () => {
    // Prepare
    const { handler, queue } = webhookFixture();
    const event = { ...githubEvent(PUSH, PUSH_HEADERS), pathParameters: { provider: 'gitlab' } };

    // Act
    const result = await handler(event);

    // Assess
    assert.equal(result.statusCode, 404);
    assert.equal(queue.jobs.length, 0);
  });

  it('answers 500 without details when the queue is unreachable, and queues the retry', async () => {
    // Prepare: a queue that refuses the first attempt and takes the next.
    const jobs: Job[] = [];
    let refused = false;
    const { handler, marked } = webhookFixture({
      jobs,
      enqueue: async (job) => {
        if (!refused) {
          refused = true;
          throw new Error('SQS: AccessDenied for arn:...');
        }
        jobs.push(job);
      },
    });

    // Act: the delivery, then the host's retry of it (the same delivery id).
    const result = await handler(githubEvent(PUSH, PUSH_HEADERS));
    const markedAfterFailure = [...marked];
    const retry = await handler(githubEvent(PUSH, PUSH_HEADERS));

    // Assess
    assert.equal(result.statusCode, 500);
    assert.doesNotMatch(result.body, /AccessDenied/);
    assert.deepEqual(markedAfterFailure, [], 'not marked: its jobs were not queued');
    assert.equal(retry.statusCode, 202);
    assert.equal(JSON.parse(retry.body).kind, 'push');
    assert.deepEqual(
      jobs.map((job) => job.track),
      ['web'],
    );
  });
});

describe('queue and trigger handlers', () => {
  let dir: string;
  let store: ClosableStore;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-handlers-'));
    store = createStore({ type: 'fs', path: dir });
  });
  after(async () => {
    store.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** Messages of `bodies`; a job's with the type and track attributes SqsJobQueue sets. */
  function sqs(...bodies: unknown[]): SqsEvent {
    return {
      Records: bodies.map((body, index) => ({
        messageId: `m${index}`,
        body: typeof body === 'string' ? body : JSON.stringify(body),
        ...(typeof body === 'string'
          ? {}
          : {
              messageAttributes: {
                type: { dataType: 'String', stringValue: (body as Job).type },
                track: { dataType: 'String', stringValue: (body as Job).track },
              },
            }),
        eventSourceARN: 'arn:aws:sqs:eu-west-1:123456789012:driftless-dev-fetch',
      })),
    };
  }

  it('fetch: stores the revision and queues its sync job; a malformed message is dropped alone', async () => {
    // Prepare
    const queue = recordingQueue();
    const { log, lines } = jsonLines();
    const source: GitSource = {
      resolve: async () => ({ revision: SHA_A, ref: 'refs/heads/main' }),
      readFiles: async () => [
        {
          path: 'cm.yaml',
          content: new TextEncoder().encode(
            'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n',
          ),
        },
      ],
    };
    const handler = createFetchHandler(
      async () => ({
        tracks: CONFIG.tracks,
        source: async () => source,
        artifacts: store.artifacts,
        state: store.state,
        queue,
      }),
      log,
      silentMetrics,
    );

    // Act
    const response = await handler(
      sqs({ type: 'fetch', track: 'web', trigger: 'webhook' }, 'not json'),
    );

    // Assess: no retry would parse it; it is deleted, not retried until the DLQ.
    assert.deepEqual(response.batchItemFailures, []);
    assert.deepEqual(
      lines()
        .filter((line) => line.level === 'error')
        .map((line) => line.messageId),
      ['m1'],
    );
    assert.equal(await store.artifacts.has('web', SHA_A), true);
    assert.equal(queue.jobs.length, 1);
    assert.deepEqual(
      { ...queue.jobs[0], resolvedAt: undefined },
      {
        type: 'sync',
        track: 'web',
        revision: SHA_A,
        resolvedAt: undefined,
        trigger: 'webhook',
      },
    );
  });

  it("apply: runs a drift job against the track's cluster; drops a fetch job and an unknown track", async () => {
    // Prepare
    const connected: string[] = [];
    const { log, lines } = jsonLines();
    const handler = createApplyHandler(
      async () => ({
        tracks: CONFIG.tracks,
        cluster: async (track) => {
          connected.push(track.cluster);
          return {} as KubernetesPort;
        },
        artifacts: store.artifacts,
        state: store.state,
        queue: recordingQueue(),
      }),
      log,
      silentMetrics,
    );

    // Act: `other` never applied anything, so its drift check needs nothing from the cluster.
    const response = await handler(
      sqs(
        { type: 'drift', track: 'other' },
        { type: 'fetch', track: 'web', trigger: 'webhook' },
        { type: 'drift', track: 'gone' },
      ),
    );

    // Assess: neither can ever run here; both are deleted, logged with their type and track.
    assert.deepEqual(response.batchItemFailures, []);
    assert.deepEqual(
      lines()
        .filter((line) => line.level === 'error')
        .map((line) => [line.messageId, line.type, line.track]),
      [
        ['m1', 'fetch', 'web'],
        ['m2', 'drift', 'gone'],
      ],
    );
    assert.deepEqual(connected, [CONFIG.clusters[0]?.name]);
  });

  it("apply: a job still running near the function's timeout stops, records what it did and frees its track", async () => {
    // Prepare: a track that waits 10 minutes for a Deployment, which never becomes available here.
    const tracks = parseConfig(
      'tracks: [{name: slow, repository: https://github.com/octo-org/slow.git, namespace: apps, wait: true, timeout: 10m}]',
      'driftless.yaml',
    ).tracks;
    const deployment = [
      'apiVersion: apps/v1',
      'kind: Deployment',
      'metadata: {name: web}',
      'spec: {selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}}}',
      '',
    ].join('\n');
    const source: GitSource = {
      resolve: async () => ({ revision: SHA_A, ref: 'refs/heads/main' }),
      readFiles: async () => [{ path: 'web.yaml', content: new TextEncoder().encode(deployment) }],
    };
    const fetched = recordingQueue();
    // A store of its own: the other tests here see no track beyond their config.
    const own = createStore({ type: 'fs', path: join(dir, 'deadline') });
    const shared = { tracks, artifacts: own.artifacts, state: own.state };
    await createFetchHandler(
      async () => ({ ...shared, source: async () => source, queue: fetched }),
      silentLogger,
      silentMetrics,
    )(sqs({ type: 'fetch', track: 'slow', trigger: 'webhook' }));
    const cluster = new InMemoryCluster();
    const handler = createApplyHandler(
      async () => ({ ...shared, cluster: async () => cluster, queue: recordingQueue() }),
      silentLogger,
      silentMetrics,
    );

    // Act: the invocation has 2 s more than the 20 s a job is given to stop: time enough to
    // apply, even on a loaded CI machine (100 ms may not be), and then the health wait is stopped.
    const response = await handler(sqs(fetched.jobs[0]), {
      getRemainingTimeInMillis: () => 22_000,
    });
    const state = await readTrackState(own.state, 'slow');
    own.close();

    // Assess: applied, its health not known, the lease given back.
    assert.deepEqual(response.batchItemFailures, []);
    assert.equal(cluster.objects.size, 1);
    assert.equal(state.appliedRevision, SHA_A);
    assert.equal(state.applyLease, null);
    const healthy = state.conditions.find((condition) => condition.type === 'Healthy');
    assert.equal(healthy?.reason, 'HealthCheckCanceled');
    assert.match(healthy?.message ?? '', /cancelled: stopped 20 s before the function's timeout$/);
  });

  it('drift: queues a ref poll and a drift check for each due track, none for suspended ones', async () => {
    // Prepare
    const queue = recordingQueue();
    const handler = createDriftHandler(
      async () => ({
        tracks: CONFIG.tracks,
        artifacts: store.artifacts,
        state: store.state,
        queue,
      }),
      silentLogger,
      () => new Date('2026-01-02T03:04:05Z'),
      silentMetrics,
    );

    // Act
    const result = await handler({ time: '2026-01-02T03:04:00Z' });

    // Assess
    assert.ok(result.tracks.includes('web'));
    assert.ok(!result.tracks.includes('paused'));
    assert.deepEqual(
      queue.jobs.filter((job) => job.track === 'web'),
      [
        { type: 'fetch', track: 'web', trigger: 'schedule', tick: '2026-01-02T03:04:05.000Z' },
        { type: 'drift', track: 'web', tick: '2026-01-02T03:04:05.000Z' },
      ],
    );
  });

  it('drift: logs every tick a track that left the config but still has state, and queues nothing for it', async () => {
    // Prepare
    await store.state.write('retired', { inventory: [] }, undefined);
    const queue = recordingQueue();
    const warnings: [string, unknown][] = [];
    const log: Logger = {
      ...silentLogger,
      warn: (message, fields) => void warnings.push([message, fields]),
    };
    const handler = createDriftHandler(
      async () => ({
        tracks: CONFIG.tracks,
        artifacts: store.artifacts,
        state: store.state,
        queue,
      }),
      log,
      () => new Date('2026-01-02T03:04:05Z'),
      silentMetrics,
    );

    // Act
    const first = await handler({ time: '2026-01-02T03:04:00Z' });
    const second = await handler({ time: '2026-01-02T03:05:00Z' });

    // Assess
    assert.deepEqual(first.removed, ['retired']);
    assert.deepEqual(second.removed, ['retired']);
    assert.deepEqual(
      warnings.map(([message, fields]) => [
        message.startsWith('track removed from the config'),
        fields,
      ]),
      [
        [true, { track: 'retired' }],
        [true, { track: 'retired' }],
      ],
    );
    assert.ok(!queue.jobs.some((job) => job.track === 'retired'));
  });

  it('rollback: queues a rollback to a stored revision named by a unique prefix', async () => {
    // Prepare
    await store.artifacts.put('other', SHA_B, new TextEncoder().encode('{"objects":[]}'));
    const queue = recordingQueue();
    const handler = createRollbackHandler(
      async () => ({
        tracks: CONFIG.tracks,
        artifacts: store.artifacts,
        state: store.state,
        queue,
      }),
      silentLogger,
    );

    // Act
    const result = await handler({ track: 'other', revision: 'bbbbbbb' });

    // Assess
    assert.deepEqual(result, { track: 'other', revision: SHA_B, queued: true });
    assert.deepEqual(queue.jobs, [{ type: 'rollback', track: 'other', revision: SHA_B }]);
  });

  it('rollback: refuses a revision that is not stored, listing the stored ones, and queues nothing', async () => {
    // Prepare
    const queue = recordingQueue();
    const handler = createRollbackHandler(
      async () => ({
        tracks: CONFIG.tracks,
        artifacts: store.artifacts,
        state: store.state,
        queue,
      }),
      silentLogger,
    );

    // Act + Assess
    await assert.rejects(handler({ track: 'other', revision: 'cccccccc' }), (error: unknown) => {
      assert.match(
        (error as Error).message,
        /revision cccccccc is not stored; stored revisions \(newest first\): bbbbbbbbbbbb/,
      );
      assert.equal((error as { code?: string }).code, 'ROLLBACK_TARGET');
      return true;
    });
    await assert.rejects(
      handler({ track: 'nope', previous: true }),
      /track "nope" is not configured/,
    );
    await assert.rejects(handler({ track: 'other' }), /exactly one of revision and previous/);
    await assert.rejects(handler({ track: 'other', previous: false }), /previous must be true/);
    assert.equal(queue.jobs.length, 0);
  });

  it('rollback: queues the lifecycle actions for apply and a sync as a fetch, refusing bad ones', async () => {
    // Prepare
    const queue = recordingQueue();
    const handler = createRollbackHandler(
      async () => ({
        tracks: CONFIG.tracks,
        artifacts: store.artifacts,
        state: store.state,
        queue,
      }),
      silentLogger,
    );

    // Act
    const answers = [
      await handler({ track: 'web', action: 'suspend' }),
      await handler({ track: 'web', action: 'resume' }),
      await handler({ track: 'web', action: 'unpin' }),
      await handler({ track: 'web', action: 'sync' }),
      await handler({ track: 'web', action: 'delete', policy: 'Orphan' }),
    ];

    // Assess
    assert.deepEqual(
      answers.map((a) => ('action' in a ? a.action : undefined)),
      ['suspend', 'resume', 'unpin', 'sync', 'delete'],
    );
    assert.deepEqual(queue.jobs, [
      { type: 'lifecycle', track: 'web', action: 'suspend' },
      { type: 'lifecycle', track: 'web', action: 'resume' },
      { type: 'lifecycle', track: 'web', action: 'unpin' },
      { type: 'fetch', track: 'web', trigger: 'manual' },
      { type: 'lifecycle', track: 'web', action: 'delete', policy: 'Orphan' },
    ]);
    await assert.rejects(handler({ track: 'web', action: 'pause' }), /"pause" is not one of/);
    await assert.rejects(
      handler({ track: 'web', action: 'suspend', policy: 'Delete' }),
      /policy is for the delete action only/,
    );
    await assert.rejects(
      handler({ track: 'web', action: 'delete', policy: 'delete' }),
      /policy "delete" is not one of Delete, Orphan, MirrorPrune/,
    );
    await assert.rejects(
      handler({ track: 'web', action: 'sync', previous: true }),
      /takes no revision or previous/,
    );
    await assert.rejects(handler({ track: 'nope', action: 'suspend' }), /"nope" is not configured/);
    assert.equal(queue.jobs.length, 5);
  });

  it('apply: runs a lifecycle job from the queue and drops a malformed one', async () => {
    // Prepare
    const queue = recordingQueue();
    const { log, lines } = jsonLines();
    const handler = createApplyHandler(
      async () => ({
        tracks: CONFIG.tracks,
        cluster: async () => ({}) as KubernetesPort,
        artifacts: store.artifacts,
        state: store.state,
        queue,
      }),
      log,
      silentMetrics,
    );

    // Act
    const response = await handler(
      sqs(
        { type: 'lifecycle', track: 'web', action: 'suspend' },
        { type: 'lifecycle', track: 'web', action: 'explode' },
      ),
    );

    // Assess
    assert.deepEqual(response.batchItemFailures, []);
    assert.deepEqual(
      lines()
        .filter((line) => line.level === 'error')
        .map((line) => [line.messageId, line.type, line.track]),
      [['m1', 'lifecycle', 'web']],
    );
    const state = await store.state.read<{ suspended?: boolean }>('web');
    assert.equal(state?.value.suspended, true);
    assert.deepEqual(queue.jobs, []);
  });

  it('rollback: sends equal requests (suspend, resume, suspend) under their own deduplication ids, a retried invocation under one', async () => {
    // Prepare
    const { queue, sent } = recordingSqsQueue();
    const handler = createRollbackHandler(
      async () => ({
        tracks: CONFIG.tracks,
        artifacts: store.artifacts,
        state: store.state,
        queue,
      }),
      silentLogger,
    );
    // Lambda retries an asynchronous invocation under its request id.
    const invocation = { getRemainingTimeInMillis: () => 60_000, awsRequestId: 'request-1' };

    // Act
    await handler({ track: 'web', action: 'suspend' });
    await handler({ track: 'web', action: 'resume' });
    await handler({ track: 'web', action: 'suspend' });
    await handler({ track: 'web', action: 'unpin' }, invocation);
    await handler({ track: 'web', action: 'unpin' }, invocation);

    // Assess: SQS drops a message whose id it saw in the last 5 minutes.
    assert.deepEqual(
      sent.map((input) => [input.QueueUrl, JSON.parse(input.MessageBody ?? '{}').action]),
      [
        [APPLY_URL, 'suspend'],
        [APPLY_URL, 'resume'],
        [APPLY_URL, 'suspend'],
        [APPLY_URL, 'unpin'],
        [APPLY_URL, 'unpin'],
      ],
    );
    const ids = sent.map((input) => input.MessageDeduplicationId);
    assert.equal(sent[0]?.MessageBody, sent[2]?.MessageBody);
    assert.notEqual(ids[0], ids[2], 'the second suspend is delivered');
    assert.equal(ids[3], ids[4], 'a retried invocation is delivered once');
  });

  it('apply: sends the resumed sync of a dependent under another deduplication id than the refused one', async () => {
    // Prepare: app waits for base; each job travels as SQS would carry it.
    const tracks = parseConfig(
      [
        'tracks:',
        '  - {name: base, repository: https://github.com/octo-org/base.git, namespace: infra}',
        '  - {name: app, repository: https://github.com/octo-org/app.git, namespace: apps, dependsOn: [base]}',
      ].join('\n'),
      'driftless.yaml',
    ).tracks;
    const source: GitSource = {
      resolve: async () => ({ revision: SHA_A, ref: 'refs/heads/main' }),
      readFiles: async () => [
        {
          path: 'cm.yaml',
          content: new TextEncoder().encode(
            'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n',
          ),
        },
      ],
    };
    const own = createStore({ type: 'fs', path: join(dir, 'resume') });
    const { queue, sent } = recordingSqsQueue();
    const shared = { tracks, artifacts: own.artifacts, state: own.state, queue };
    const fetch = createFetchHandler(
      async () => ({ ...shared, source: async () => source }),
      silentLogger,
      silentMetrics,
    );
    const cluster = new InMemoryCluster();
    const apply = createApplyHandler(
      async () => ({ ...shared, cluster: async () => cluster }),
      silentLogger,
      silentMetrics,
    );
    /** The last message sent, as the queue's trigger hands it over. */
    const received = (messageId: string): SqsEvent => {
      const input = sent.at(-1)!;
      return {
        Records: [
          {
            messageId,
            body: input.MessageBody ?? '',
            attributes: { MessageGroupId: input.MessageGroupId },
            eventSourceARN: 'arn:aws:sqs:eu-west-1:123456789012:driftless-dev-apply.fifo',
          },
        ],
      };
    };
    await fetch(sqs({ type: 'fetch', track: 'app', trigger: 'webhook' }));
    const refused = sent.at(-1)!;
    await apply(received('sync-app'));
    const refusedState = await readTrackState(own.state, 'app');
    await fetch(sqs({ type: 'fetch', track: 'base', trigger: 'webhook' }));
    const baseSync = received('sync-base');

    // Act: base becomes Ready; then its message comes again (its delete was lost).
    await apply(baseSync);
    const resumed = sent.at(-1)!;
    await apply(baseSync);
    const resumedAgain = sent.at(-1)!;
    own.close();

    // Assess
    assert.equal(
      refusedState.conditions.find((c) => c.type === 'Ready')?.reason,
      'DependencyNotReady',
    );
    assert.equal(resumed.MessageGroupId, 'app');
    assert.equal(resumed.MessageBody, refused.MessageBody, 'the same job as the refused one');
    assert.notEqual(resumed.MessageDeduplicationId, refused.MessageDeduplicationId);
    assert.equal(resumedAgain.MessageBody, resumed.MessageBody);
    assert.equal(resumedAgain.MessageDeduplicationId, resumed.MessageDeduplicationId);
  });

  it('apply: deletes a message no retry can run, logging its type and track, and runs the next job of its group', async () => {
    // Prepare: one FIFO group, a poison message first.
    const { log, lines } = jsonLines();
    const handler = createApplyHandler(
      async () => ({
        tracks: CONFIG.tracks,
        cluster: async () => ({}) as KubernetesPort,
        artifacts: store.artifacts,
        state: store.state,
        queue: recordingQueue(),
      }),
      log,
      silentMetrics,
    );
    const record = (messageId: string, body: unknown, type: string, track: string): SqsRecord => ({
      messageId,
      body: typeof body === 'string' ? body : JSON.stringify(body),
      attributes: { MessageGroupId: 'other', ApproximateReceiveCount: '1' },
      messageAttributes: {
        type: { dataType: 'String', stringValue: type },
        track: { dataType: 'String', stringValue: track },
      },
      eventSourceARN: 'arn:aws:sqs:eu-west-1:123456789012:driftless-dev-apply.fifo',
    });

    // Act
    const response = await handler({
      Records: [
        // Not JSON; what it holds must not reach the log.
        record('bad', '{"type": "sync", "token": "hunter2"', 'sync', 'other'),
        record('fetch', { type: 'fetch', track: 'other', trigger: 'webhook' }, 'fetch', 'other'),
        record('gone', { type: 'drift', track: 'gone' }, 'drift', 'gone'),
        // A stored write-back, which only fetch can read.
        record(
          'stored',
          { type: 'writeBack', track: 'other', storedJob: 'a'.repeat(64) },
          'writeBack',
          'other',
        ),
        record('next', { type: 'drift', track: 'other' }, 'drift', 'other'),
      ],
    });

    // Assess
    assert.deepEqual(response.batchItemFailures, []);
    const dropped = lines().filter((line) => line.level === 'error');
    assert.deepEqual(
      dropped.map((line) => [line.msg, line.messageId, line.type, line.track]),
      [
        ['job dropped: no retry can run it', 'bad', 'sync', 'other'],
        ['job dropped: no retry can run it', 'fetch', 'fetch', 'other'],
        ['job dropped: no retry can run it', 'gone', 'drift', 'gone'],
        ['job dropped: no retry can run it', 'stored', 'writeBack', 'other'],
      ],
    );
    assert.match(String(dropped[0]?.error), /not JSON/);
    assert.match(String(dropped[2]?.error), /"gone" is not configured/);
    assert.ok(!JSON.stringify(lines()).includes('hunter2'));
    assert.ok(
      lines().some((line) => line.msg === 'drift finished' && line.track === 'other'),
      JSON.stringify(lines()),
    );
  });

  it('apply: still reports failed a job that could not run for a reason that may pass', async () => {
    // Prepare: the store cannot be reached.
    const handler = createApplyHandler(
      async () => {
        throw new StoreUnavailableError('s3://bucket/state/other.json: connect ECONNREFUSED');
      },
      silentLogger,
      silentMetrics,
    );

    // Act
    const response = await handler(sqs({ type: 'drift', track: 'other' }));

    // Assess
    assert.deepEqual(response.batchItemFailures, [{ itemIdentifier: 'm0' }]);
  });
});

describe("apply function's config check", () => {
  const withExprs = (current: string): JobDeps =>
    ({
      tracks: parseConfig(
        [
          'tracks:',
          '  - name: web',
          '    repository: https://github.com/octo-org/manifests',
          '    healthCheckExprs:',
          '      - apiVersion: example.com/v1',
          '        kind: Widget',
          `        current: ${JSON.stringify(current)}`,
        ].join('\n'),
        'driftless.yaml',
      ).tracks,
    }) as unknown as JobDeps;

  it('refuses a CEL expression that does not parse, naming the field, before any job runs', async () => {
    // Act + Assess
    await assert.rejects(
      checkedApplyDeps(async () => withExprs("self.status.phase === 'Ready'")),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.match(
          error.message,
          /tracks\[0\]\.healthCheckExprs\[0\]\.current: .* is not a CEL expression/,
        );
        return true;
      },
    );
    const good = withExprs("self.status.phase == 'Ready'");
    assert.equal(await checkedApplyDeps(async () => good), good);
  });
});
