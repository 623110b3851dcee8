/**
 * The functions' metrics: jobs, webhook deliveries and schedule ticks run
 * through the Lambda paths with stdout captured, and the CloudWatch EMF lines
 * Powertools writes there read back — namespace, dimension names equal to
 * `/metrics`' label names, metric names and values equal to what
 * `driftless serve` reports for the same events, and no secret value.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import type { SendMessageCommand } from '@aws-sdk/client-sqs';
import { createDriftHandler } from '../../handlers/drift.ts';
import { createFetchHandler } from '../../handlers/fetch.ts';
import { createWebhookHandler } from '../../handlers/webhook.ts';
import { functionLogger } from '../../src/aws/function-logger.ts';
import {
  DEFAULT_METRICS_NAMESPACE,
  EMPTY_DIMENSION_VALUE,
  functionMetrics,
} from '../../src/aws/function-metrics.ts';
import { sqsEventOf } from '../../src/aws/invoke-job-queue.ts';
import { sqsJobHandler } from '../../src/aws/job-handler.ts';
import type { HttpApiEvent, SqsRecord } from '../../src/aws/lambda-events.ts';
import { parseApplyJob } from '../../src/aws/parse-job.ts';
import { SqsJobQueue } from '../../src/aws/sqs-job-queue.ts';
import {
  currentWebhookArrival,
  WEBHOOK_ARRIVAL_ATTRIBUTE,
  webhookArrivalOf,
  withWebhookArrival,
} from '../../src/aws/webhook-arrival.ts';
import { parseConfig } from '../../src/config/parse-config.ts';
import type { Config, Track } from '../../src/config/types.ts';
import { silentLogger, type Logger } from '../../src/logger.ts';
import { METRIC_NAMES } from '../../src/metric-names.ts';
import { addSecretValues, forgetSecretValuesForTests } from '../../src/redact.ts';
import { ServeMetrics } from '../../src/serve/serve-metrics.ts';
import type { GitSource } from '../../src/source/ports.ts';
import { createStore, type ClosableStore } from '../../src/store/create-store.ts';
import type { ApplyJob, Job, JobQueue } from '../../src/sync/jobs.ts';
import type { ExecuteJob, JobDeps, JobResult } from '../../src/sync/run-job.ts';
import { emptyTrackState, type TrackState } from '../../src/sync/track-state.ts';

const SHA = 'a'.repeat(40);
const REPOSITORY = 'https://git.example.com/org/web.git';
const WEBHOOK_SECRET = 'metrics test webhook secret';
/** Planted in a repository URL, a namespace and error texts; must reach no EMF line. */
const MARKER = 'planted-metrics-marker-5e0c';
const ARRIVAL = Date.parse('2026-03-04T05:06:07Z');

const CONFIG: Config = parseConfig(
  `
webhooks:
  github: {secret: env:GITHUB_WEBHOOK_SECRET}
tracks:
  - name: web
    repository: ${REPOSITORY}
    namespace: apps
  - name: plain
    repository: https://git.example.com/org/plain.git
  - name: marked
    repository: https://git.example.com/${MARKER}/repo.git
    namespace: ns-${MARKER}
`,
  'driftless.yaml',
);

function track(name: string): Track {
  const found = CONFIG.tracks.find((candidate) => candidate.name === name);
  assert.ok(found, name);
  return found;
}

interface EmfLine {
  readonly namespace: string;
  /** The line's one dimension set. */
  readonly dimensions: readonly string[];
  readonly metrics: readonly { readonly name: string; readonly unit: string }[];
  /** Every top-level field: dimension values and metric values. */
  readonly fields: Readonly<Record<string, unknown>>;
}

/**
 * Runs `act` with the JSON lines written to process.stdout captured
 * (Powertools writes EMF there through its own Console, the function logger
 * its lines through console.log): those lines, and the EMF ones among them
 * parsed. Anything else written meanwhile (the test runner's own reports go
 * through stdout) is passed on.
 */
async function captureStdout<T>(
  act: () => Promise<T>,
): Promise<{ result: T; lines: string[]; emf: EmfLine[] }> {
  const lines: string[] = [];
  const write = process.stdout.write;
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    if (typeof chunk !== 'string' || !chunk.startsWith('{')) {
      return (write as (...args: unknown[]) => boolean).call(process.stdout, chunk, ...rest);
    }
    lines.push(...chunk.split('\n').filter(Boolean));
    return true;
  }) as typeof process.stdout.write;
  let result: T;
  try {
    result = await act();
  } finally {
    process.stdout.write = write;
  }
  const emf = lines
    .filter((line) => line.startsWith('{"_aws"'))
    .map((line): EmfLine => {
      const parsed = JSON.parse(line) as {
        _aws: {
          CloudWatchMetrics: {
            Namespace: string;
            Dimensions: string[][];
            Metrics: { Name: string; Unit: string }[];
          }[];
        };
      } & Record<string, unknown>;
      const [directive, ...others] = parsed._aws.CloudWatchMetrics;
      assert.ok(directive);
      assert.equal(others.length, 0, 'one metric directive per line');
      assert.equal(directive.Dimensions.length, 1, 'one dimension set per line');
      return {
        namespace: directive.Namespace,
        dimensions: directive.Dimensions[0] ?? [],
        metrics: directive.Metrics.map((metric) => ({ name: metric.Name, unit: metric.Unit })),
        fields: parsed,
      };
    });
  return { result, lines, emf };
}

/** One sample per EMF metric: its name, unit, value and dimensions (name -> value). */
function samplesOf(emf: readonly EmfLine[]) {
  return emf.flatMap((line) =>
    line.metrics.map((metric) => ({
      name: metric.name,
      unit: metric.unit,
      value: line.fields[metric.name],
      dimensions: Object.fromEntries(
        line.dimensions.map((dimension) => [dimension, line.fields[dimension]]),
      ) as Record<string, string>,
    })),
  );
}

/** The samples of a Prometheus exposition document: name, labels, value. */
function prometheusSamples(text: string) {
  return text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      assert.ok(match, line);
      const labels = Object.fromEntries(
        [...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((pair) => [
          pair[1],
          pair[2],
        ]),
      );
      return { name: match[1] ?? '', labels, value: Number(match[3]) };
    });
}

/** An SQS record of `job`, carrying a webhook arrival when given one. */
function record(job: unknown, arrival?: number, index = 0): SqsRecord {
  return {
    messageId: `m${index}`,
    body: JSON.stringify(job),
    attributes: { MessageGroupId: 'web' },
    eventSourceARN: 'arn:aws:sqs:eu-west-1:123456789012:driftless-dev-apply.fifo',
    ...(arrival === undefined
      ? {}
      : {
          messageAttributes: {
            [WEBHOOK_ARRIVAL_ATTRIBUTE]: { stringValue: String(arrival), dataType: 'Number' },
          },
        }),
  };
}

const STATE: TrackState = {
  ...emptyTrackState(),
  objectsDiscovered: 5,
  objectsApplied: 2,
  objectsIgnored: 1,
  objectsInSync: 4,
};

/** Apply use-cases that report `outcome` for syncs (with {@link STATE}) and fail drift checks. */
function fakeApply(outcome: 'applied' | 'failed' | 'throws', error = 'no'): ExecuteJob<ApplyJob> {
  return async (_track, job): Promise<JobResult> => {
    if (outcome === 'throws') throw new Error(`cluster unreachable: ${error}`);
    if (job.type !== 'sync') throw new Error(`no ${job.type} jobs in these tests`);
    const result = {
      track: job.track,
      revision: SHA,
      changeset: [],
      state: STATE,
      result: outcome,
      ...(outcome === 'failed' ? { error } : {}),
    };
    return { type: 'sync', job, result, next: [] };
  };
}

function syncJob(name: string) {
  return {
    type: 'sync',
    track: name,
    revision: SHA,
    resolvedAt: '2026-03-04T05:06:08Z',
    trigger: 'webhook',
  };
}

describe('function metrics (CloudWatch EMF through Powertools)', () => {
  let dir: string;
  let store: ClosableStore;
  let deps: () => Promise<JobDeps>;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-function-metrics-'));
    store = createStore({ type: 'fs', path: dir });
    deps = async () => ({
      tracks: CONFIG.tracks,
      artifacts: store.artifacts,
      state: store.state,
      queue: { enqueue: async () => undefined },
    });
  });
  after(async () => {
    store.close();
    await rm(dir, { recursive: true, force: true });
  });
  afterEach(() => forgetSecretValuesForTests());

  it("writes a webhook-triggered sync's metrics with /metrics' names, labels and values", async () => {
    // Prepare
    const metrics = functionMetrics(silentLogger);
    const handler = sqsJobHandler(parseApplyJob, fakeApply('applied'), deps, {
      log: silentLogger,
      metrics,
      now: () => ARRIVAL + 4_500,
    });
    const serve = new ServeMetrics();

    // Act
    const { result, emf } = await captureStdout(() =>
      handler({ Records: [record(syncJob('web'), ARRIVAL)] }),
    );
    serve.countJob('web', 'sync', 'applied');
    serve.observeDeploy(track('web'), 4.5);
    const scrape = prometheusSamples(
      serve.render({
        tracks: [track('web')],
        states: new Map([['web', STATE]]),
        queueLength: 0,
        jobsRunning: 0,
      }),
    );

    // Assess
    assert.deepEqual(result.batchItemFailures, []);
    assert.ok(emf.length > 0);
    for (const line of emf) assert.equal(line.namespace, DEFAULT_METRICS_NAMESPACE);
    const samples = samplesOf(emf);
    assert.deepEqual(
      [...new Set(samples.map((sample) => sample.name))].sort(),
      [
        METRIC_NAMES.childStatus,
        METRIC_NAMES.farosChildStatus,
        METRIC_NAMES.farosTimeToDeploy,
        METRIC_NAMES.jobs,
        METRIC_NAMES.objectsInSync,
        METRIC_NAMES.suspended,
        METRIC_NAMES.timeToDeploy,
      ].sort(),
    );
    // Each EMF sample is a /metrics sample: same name (a histogram's through its _sum), same
    // labels as dimensions (names and values), same value.
    for (const sample of samples) {
      const histogram = sample.unit === 'Seconds';
      const peer = scrape.find(
        (candidate) =>
          candidate.name === (histogram ? `${sample.name}_sum` : sample.name) &&
          JSON.stringify(candidate.labels) === JSON.stringify(sample.dimensions),
      );
      assert.ok(peer, `${sample.name} ${JSON.stringify(sample.dimensions)} is not in /metrics`);
      assert.equal(sample.value, peer.value, sample.name);
      assert.equal(
        sample.unit,
        histogram ? 'Seconds' : sample.name.endsWith('suspended') ? 'None' : 'Count',
      );
    }
    const byName = (name: string) => samples.filter((sample) => sample.name === name);
    assert.deepEqual(byName(METRIC_NAMES.jobs), [
      {
        name: METRIC_NAMES.jobs,
        unit: 'Count',
        value: 1,
        dimensions: { track: 'web', job: 'sync', result: 'applied' },
      },
    ]);
    assert.deepEqual(byName(METRIC_NAMES.timeToDeploy), [
      {
        name: METRIC_NAMES.timeToDeploy,
        unit: 'Seconds',
        value: 4.5,
        dimensions: { track: 'web' },
      },
    ]);
    assert.deepEqual(byName(METRIC_NAMES.farosTimeToDeploy)[0]?.dimensions, {
      name: 'web',
      namespace: 'apps',
      repository: REPOSITORY,
    });
    assert.deepEqual(
      byName(METRIC_NAMES.childStatus).map((sample) => [sample.dimensions.status, sample.value]),
      [
        ['discovered', 5],
        ['applied', 2],
        ['ignored', 1],
        ['inSync', 4],
      ],
    );
    assert.deepEqual(byName(METRIC_NAMES.suspended)[0]?.value, 0);
    assert.equal(emf.filter((line) => line.dimensions.includes('service')).length, 0);
  });

  it('reports no time-to-deploy for a sync no webhook caused, and `-` for an empty namespace', async () => {
    // Prepare
    const handler = sqsJobHandler(parseApplyJob, fakeApply('applied'), deps, {
      log: silentLogger,
      metrics: functionMetrics(silentLogger),
    });

    // Act
    const { emf } = await captureStdout(() => handler({ Records: [record(syncJob('plain'))] }));

    // Assess
    const samples = samplesOf(emf);
    assert.ok(!samples.some((sample) => sample.name === METRIC_NAMES.timeToDeploy));
    assert.deepEqual(
      samples.find((sample) => sample.name === METRIC_NAMES.farosChildStatus)?.dimensions,
      { name: 'plain', namespace: EMPTY_DIMENSION_VALUE, status: 'discovered' },
    );
  });

  it('counts a failed job and one that could not run as reconcile errors', async () => {
    // Prepare
    const failing = sqsJobHandler(parseApplyJob, fakeApply('failed'), deps, {
      log: silentLogger,
      metrics: functionMetrics(silentLogger),
    });
    const throwing = sqsJobHandler(parseApplyJob, fakeApply('throws'), deps, {
      log: silentLogger,
      metrics: functionMetrics(silentLogger),
    });

    // Act
    const { emf } = await captureStdout(async () => {
      await failing({ Records: [record(syncJob('web'), ARRIVAL)] });
      return throwing({ Records: [record(syncJob('web'))] });
    });

    // Assess
    const counted = samplesOf(emf)
      .filter(
        (sample) =>
          sample.name === METRIC_NAMES.jobs || sample.name === METRIC_NAMES.reconcileErrors,
      )
      .map((sample) => [sample.name, sample.dimensions, sample.value]);
    assert.deepEqual(counted, [
      [METRIC_NAMES.jobs, { track: 'web', job: 'sync', result: 'failed' }, 1],
      [METRIC_NAMES.reconcileErrors, { track: 'web', job: 'sync' }, 1],
      [METRIC_NAMES.reconcileErrors, { track: 'web', job: 'sync' }, 1],
      [METRIC_NAMES.jobs, { track: 'web', job: 'sync', result: 'error' }, 1],
    ]);
    // A failed sync is not a deploy.
    assert.ok(!samplesOf(emf).some((sample) => sample.name === METRIC_NAMES.timeToDeploy));
  });

  it('counts webhook answers by provider and status, any other path as `other`, and stamps the jobs it queues', async () => {
    // Prepare
    const arrivals: (number | undefined)[] = [];
    const queue: JobQueue = { enqueue: async () => void arrivals.push(currentWebhookArrival()) };
    const handler = createWebhookHandler(
      async () => ({
        tracks: CONFIG.tracks,
        secretsOf: async (host) => (host === 'github' ? [WEBHOOK_SECRET] : undefined),
        deliveries: { markDelivery: async () => true, isDelivered: async () => false },
        queue,
      }),
      silentLogger,
      functionMetrics(silentLogger),
      () => ARRIVAL,
    );
    const push = JSON.stringify({
      ref: 'refs/heads/main',
      before: '0'.repeat(39) + '1',
      after: SHA,
      repository: { clone_url: REPOSITORY, default_branch: 'main' },
    });
    const event = (provider: string): HttpApiEvent => ({
      pathParameters: { provider },
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'push',
        'x-github-delivery': 'd1',
        'x-hub-signature-256': `sha256=${createHmac('sha256', WEBHOOK_SECRET).update(push).digest('hex')}`,
      },
      body: push,
    });

    // Act
    const { emf } = await captureStdout(async () => {
      await handler(event('github'));
      return handler(event(`nothing-${MARKER}`));
    });

    // Assess
    assert.deepEqual(arrivals, [ARRIVAL]);
    assert.deepEqual(
      samplesOf(emf).map((sample) => [sample.name, sample.dimensions, sample.value]),
      [
        [METRIC_NAMES.webhookDeliveries, { provider: 'github', status: '202' }, 1],
        [METRIC_NAMES.webhookDeliveries, { provider: 'other', status: '404' }, 1],
      ],
    );
  });

  it("passes a webhook's arrival from message to message: SQS attribute in, SQS attribute out", async () => {
    // Prepare
    const sent: SendMessageCommand['input'][] = [];
    const queue = new SqsJobQueue({
      client: {
        send: async (command: SendMessageCommand) => void sent.push(command.input),
      } as unknown as ConstructorParameters<typeof SqsJobQueue>[0]['client'],
      fetchQueueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/driftless-dev-fetch',
      applyQueueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/driftless-dev-apply.fifo',
    });
    const source: GitSource = {
      resolve: async () => ({ revision: SHA, ref: 'refs/heads/main' }),
      readFiles: async () => [
        {
          path: 'cm.yaml',
          content: new TextEncoder().encode(
            'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n',
          ),
        },
      ],
    };
    const fetch = createFetchHandler(
      async () => ({ ...(await deps()), source: async () => source, queue }),
      silentLogger,
      functionMetrics(silentLogger),
    );
    const fetchJob = { type: 'fetch', track: 'web', trigger: 'webhook' };

    // Act
    await captureStdout(() =>
      fetch({ Records: [{ ...record(fetchJob, ARRIVAL), attributes: {}, eventSourceARN: 'x' }] }),
    );
    await queue.enqueue({ type: 'drift', track: 'web' });

    // Assess: the sync carries the webhook's arrival; a job sent outside any webhook's work none.
    assert.equal(sent.length, 2);
    assert.equal(JSON.parse(sent[0]?.MessageBody ?? '{}').type, 'sync');
    assert.deepEqual(sent[0]?.MessageAttributes?.[WEBHOOK_ARRIVAL_ATTRIBUTE], {
      DataType: 'Number',
      StringValue: String(ARRIVAL),
    });
    assert.equal(sent[1]?.MessageAttributes?.[WEBHOOK_ARRIVAL_ATTRIBUTE], undefined);
    // The offline stage's invoker builds the same record.
    const job: Job = { type: 'drift', track: 'web' };
    const [invoked] = sqsEventOf(job, 'driftless-local-apply', 'id', 1, ARRIVAL).Records;
    assert.ok(invoked);
    assert.equal(webhookArrivalOf(invoked), ARRIVAL);
    assert.equal(
      withWebhookArrival(7, () => currentWebhookArrival()),
      7,
    );
    assert.equal(webhookArrivalOf(record(job)), undefined);
  });

  it('counts tracks removed from the config on each schedule tick', async () => {
    // Prepare
    await store.state.write('retired', { inventory: [] }, undefined);
    const handler = createDriftHandler(
      async () => ({ ...(await deps()), queue: { enqueue: async () => undefined } }),
      silentLogger,
      () => new Date('2026-01-02T03:04:05Z'),
      functionMetrics(silentLogger),
    );

    // Act
    const { emf } = await captureStdout(() => handler({ time: '2026-01-02T03:04:00Z' }));

    // Assess
    assert.deepEqual(
      samplesOf(emf).map((sample) => [sample.name, sample.dimensions, sample.value, sample.unit]),
      [[METRIC_NAMES.removedFromConfig, { track: 'retired' }, 1, 'None']],
    );
  });

  it('writes no secret value: not from a repository URL, a namespace or an error text', async () => {
    // Prepare
    addSecretValues([MARKER]);
    const log = functionLogger('apply');
    const handler = sqsJobHandler(parseApplyJob, fakeApply('failed', `rejected ${MARKER}`), deps, {
      log,
      metrics: functionMetrics(log),
      now: () => ARRIVAL + 1_000,
    });
    const throwing = sqsJobHandler(parseApplyJob, fakeApply('throws', MARKER), deps, {
      log,
      metrics: functionMetrics(log),
    });
    const metrics = functionMetrics(log);

    // Act
    const { lines, emf } = await captureStdout(async () => {
      await handler({ Records: [record(syncJob('marked'), ARRIVAL)] });
      await throwing({ Records: [record(syncJob('marked'), ARRIVAL)] });
      metrics.observeDeploy(track('marked'), 1);
      metrics.countWebhook(MARKER, 404);
    });

    // Assess
    assert.ok(emf.length >= 10);
    assert.ok(
      lines.some((line) => line.includes('"level":"warn"')),
      'the failure was logged',
    );
    for (const line of lines) assert.doesNotMatch(line, new RegExp(MARKER));
    const faros = samplesOf(emf).find((sample) => sample.name === METRIC_NAMES.farosTimeToDeploy);
    assert.deepEqual(faros?.dimensions, {
      name: 'marked',
      namespace: 'ns-***',
      repository: 'https://git.example.com/***/repo.git',
    });
  });

  it('logs a metric it cannot write, drops it, and goes on writing the next', async () => {
    // Prepare
    const warnings: string[] = [];
    const log: Logger = { ...silentLogger, warn: (message) => void warnings.push(message) };
    const metrics = functionMetrics(log);

    // Act: a state without counters (as no reader would hand over) has no numbers to write.
    const { emf } = await captureStdout(async () => {
      metrics.trackGauges(track('web'), {} as TrackState);
      metrics.countJob('web', 'drift', 'clean');
    });

    // Assess
    assert.ok(warnings.includes('metrics not written'));
    assert.deepEqual(
      samplesOf(emf).map((sample) => [sample.name, sample.dimensions]),
      [[METRIC_NAMES.jobs, { track: 'web', job: 'drift', result: 'clean' }]],
    );
  });
});

describe('the shared metric names', () => {
  it("are /metrics' families, so serve and the functions cannot drift apart", () => {
    // Act
    const families = new ServeMetrics()
      .render({ tracks: [], states: new Map(), queueLength: 0, jobsRunning: 0 })
      .split('\n')
      .filter((line) => line.startsWith('# TYPE '))
      .map((line) => line.split(' ')[2]);

    // Assess
    assert.deepEqual(families.sort(), Object.values(METRIC_NAMES).sort());
  });
});
