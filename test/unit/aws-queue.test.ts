import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { SendMessageCommand } from '@aws-sdk/client-sqs';
import {
  InvalidJobError,
  parseApplyJob,
  parseFetchJob,
  parseJob,
} from '../../src/aws/parse-job.ts';
import { withJobOrigin } from '../../src/aws/job-origin.ts';
import { processSqsBatch } from '../../src/aws/sqs-batch.ts';
import {
  deduplicationIdOf,
  JobTooLargeError,
  MAX_INLINE_JOB_BYTES,
  QueueNotConfiguredError,
  readQueuedJob,
  SqsJobQueue,
} from '../../src/aws/sqs-job-queue.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import { largeWriteBackJob } from '../harness/large-jobs.ts';
import type { SqsRecord } from '../../src/aws/lambda-events.ts';
import { canonicalJson } from '../../src/render/canonical-json.ts';
import type { Job } from '../../src/sync/jobs.ts';

const FETCH_URL = 'https://sqs.eu-west-1.amazonaws.com/123456789012/driftless-dev-fetch';
const APPLY_URL = 'https://sqs.eu-west-1.amazonaws.com/123456789012/driftless-dev-apply.fifo';
const SHA = 'a'.repeat(40);

function recordingClient() {
  const sent: SendMessageCommand['input'][] = [];
  return {
    sent,
    client: {
      send: async (command: SendMessageCommand) => {
        sent.push(command.input);
        return {};
      },
    } as unknown as ConstructorParameters<typeof SqsJobQueue>[0]['client'],
  };
}

describe('SqsJobQueue', () => {
  it('sends fetch jobs to the standard fetch queue without FIFO fields', async () => {
    // Prepare
    const { client, sent } = recordingClient();
    const queue = new SqsJobQueue({ client, fetchQueueUrl: FETCH_URL, applyQueueUrl: APPLY_URL });
    const job: Job = {
      type: 'fetch',
      track: 'web',
      trigger: 'webhook',
      hint: { revision: SHA, ref: 'refs/heads/main' },
    };

    // Act
    await queue.enqueue(job);

    // Assess
    assert.equal(sent.length, 1);
    assert.equal(sent[0]?.QueueUrl, FETCH_URL);
    assert.deepEqual(JSON.parse(sent[0]?.MessageBody ?? ''), job);
    assert.equal(sent[0]?.MessageGroupId, undefined);
    assert.equal(sent[0]?.MessageDeduplicationId, undefined);
  });

  it('sends apply jobs to the FIFO queue grouped by track, deduplicated by content', async () => {
    // Prepare
    const { client, sent } = recordingClient();
    const queue = new SqsJobQueue({ client, applyQueueUrl: APPLY_URL });
    const sync: Job = {
      type: 'sync',
      track: 'web',
      revision: SHA,
      resolvedAt: '2026-01-02T03:04:05.000Z',
      trigger: 'webhook',
    };

    // Act
    await queue.enqueue(sync);
    await queue.enqueue({ type: 'drift', track: 'api' });
    await queue.enqueue({ type: 'rollback', track: 'web', revision: SHA });

    // Assess
    assert.deepEqual(
      sent.map((input) => [input.QueueUrl, input.MessageGroupId]),
      [
        [APPLY_URL, 'web'],
        [APPLY_URL, 'api'],
        [APPLY_URL, 'web'],
      ],
    );
    const expected = createHash('sha256').update(canonicalJson(sync)).digest('hex');
    assert.equal(sent[0]?.MessageDeduplicationId, expected);
    assert.equal(new Set(sent.map((input) => input.MessageDeduplicationId)).size, 3);
  });

  it('derives the same deduplication id whatever the order of the fields', () => {
    // Prepare
    const a: Job = { type: 'rollback', track: 'web', revision: SHA };
    const b = JSON.parse(`{"revision":"${SHA}","track":"web","type":"rollback"}`) as Job;

    // Assess
    assert.equal(deduplicationIdOf(a), deduplicationIdOf(b));
    assert.match(deduplicationIdOf(a), /^[0-9a-f]{64}$/);
  });

  it("tells two schedule ticks' drift checks apart, and a job re-sent for one tick not", () => {
    // Prepare
    const first: Job = { type: 'drift', track: 'web', tick: '2026-01-02T03:04:00.000Z' };
    const next: Job = { type: 'drift', track: 'web', tick: '2026-01-02T03:05:00.000Z' };

    // Assess
    assert.notEqual(deduplicationIdOf(first), deduplicationIdOf(next));
    assert.equal(deduplicationIdOf(first), deduplicationIdOf({ ...first }));
  });

  it('tells equal jobs of two origins apart, and not those of one origin or of none', async () => {
    // Prepare
    const { client, sent } = recordingClient();
    const queue = new SqsJobQueue({ client, applyQueueUrl: APPLY_URL });
    const suspend: Job = { type: 'lifecycle', track: 'web', action: 'suspend' };

    // Act
    await withJobOrigin('invocation:a', () => queue.enqueue(suspend));
    await withJobOrigin('invocation:a', () => queue.enqueue(suspend));
    await withJobOrigin('invocation:b', () => queue.enqueue(suspend));
    await queue.enqueue(suspend);

    // Assess
    const ids = sent.map((input) => input.MessageDeduplicationId);
    assert.equal(ids[0], ids[1]);
    assert.notEqual(ids[0], ids[2]);
    assert.equal(ids[3], deduplicationIdOf(suspend));
    assert.equal(new Set(ids).size, 3);
  });

  it('groups fetch jobs by track too when the fetch queue is FIFO', async () => {
    // Prepare
    const { client, sent } = recordingClient();
    const queue = new SqsJobQueue({ client, fetchQueueUrl: `${FETCH_URL}.fifo` });

    // Act
    await queue.enqueue({ type: 'fetch', track: 'web', trigger: 'schedule' });

    // Assess
    assert.equal(sent[0]?.MessageGroupId, 'web');
    assert.ok(sent[0]?.MessageDeduplicationId);
  });

  it('refuses a job for a queue it was not given, and a standard apply queue', async () => {
    // Prepare
    const { client, sent } = recordingClient();
    const webhookQueue = new SqsJobQueue({ client, fetchQueueUrl: FETCH_URL });

    // Act + Assess
    await assert.rejects(
      webhookQueue.enqueue({ type: 'drift', track: 'web' }),
      QueueNotConfiguredError,
    );
    assert.equal(sent.length, 0);
    assert.throws(() => new SqsJobQueue({ client, applyQueueUrl: FETCH_URL }), /not a FIFO queue/);
  });
});

describe('jobs too large for a queue message', () => {
  // ~450 KB of job: more than a message takes inline.
  const largeWriteBack = () => largeWriteBackJob(150_000);

  it('sends one as its name in the store, which the receiving side reads back whole', async (t) => {
    // Prepare
    const dir = await mkdtemp(join(tmpdir(), 'driftless-job-bodies-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const store = new FsStore({ path: dir });
    const { client, sent } = recordingClient();
    const queue = new SqsJobQueue({ client, fetchQueueUrl: `${FETCH_URL}.fifo`, bodies: store });
    const job = largeWriteBack();

    // Act
    await queue.enqueue(job);
    const body = sent[0]?.MessageBody ?? '';
    const read = parseFetchJob(await readQueuedJob(body, async () => store));

    // Assess
    assert.ok(Buffer.byteLength(JSON.stringify(job)) > MAX_INLINE_JOB_BYTES);
    assert.deepEqual(JSON.parse(body), {
      type: 'writeBack',
      track: 'dashboards',
      storedJob: createHash('sha256').update(JSON.stringify(job), 'utf8').digest('hex'),
    });
    assert.deepEqual(read, job);
    // De-duplicated by the job's content, as if it had been sent whole.
    assert.equal(sent[0]?.MessageDeduplicationId, deduplicationIdOf(job));
    assert.equal(sent[0]?.MessageAttributes?.type?.StringValue, 'writeBack');
  });

  it('refuses one without a store, and a stored job where the store cannot be read', async () => {
    // Prepare
    const { client, sent } = recordingClient();
    const queue = new SqsJobQueue({ client, fetchQueueUrl: FETCH_URL });
    const stored = JSON.stringify({ type: 'writeBack', track: 'web', storedJob: 'f'.repeat(64) });

    // Assess
    await assert.rejects(
      queue.enqueue(largeWriteBack()),
      (error: Error) =>
        error instanceof JobTooLargeError &&
        /^writeBack job for track "dashboards" is \d+ bytes, more than a queue message holds/.test(
          error.message,
        ),
    );
    assert.equal(sent.length, 0);
    await assert.rejects(readQueuedJob(stored, undefined), JobTooLargeError);
    // A small job, or what is not JSON at all, is the message itself.
    assert.equal(await readQueuedJob('{"type":"fetch"}', undefined), '{"type":"fetch"}');
    assert.equal(await readQueuedJob('{', undefined), '{');
  });
});

describe('parseJob', () => {
  it('sends each discovery where its source can be read: a cluster to apply, Git to fetch', async () => {
    // Prepare
    const { client, sent } = recordingClient();
    const queue = new SqsJobQueue({ client, fetchQueueUrl: FETCH_URL, applyQueueUrl: APPLY_URL });
    const cluster: Job = { type: 'discover', track: 'cluster-prod', runsIn: 'apply', tick: 't1' };
    const git: Job = { type: 'discover', track: 'repository-0123456789ab', runsIn: 'fetch' };

    // Act
    await queue.enqueue(cluster);
    await queue.enqueue(git);

    // Assess: one lane per source on the FIFO queue; each parses only on its own queue.
    assert.equal(sent[0]?.QueueUrl, APPLY_URL);
    assert.equal(sent[0]?.MessageGroupId, 'cluster-prod');
    assert.equal(sent[1]?.QueueUrl, FETCH_URL);
    assert.deepEqual(parseApplyJob(JSON.stringify(cluster)), cluster);
    assert.deepEqual(parseFetchJob(JSON.stringify(git)), git);
    assert.throws(
      () => parseFetchJob(JSON.stringify(cluster)),
      /discover job .* on the fetch queue/,
    );
    assert.throws(() => parseApplyJob(JSON.stringify(git)), /discover job .* on the apply queue/);
    assert.throws(() => parseJob(JSON.stringify({ ...cluster, runsIn: 'webhook' })), /runsIn/);
  });

  it('reads back every kind of job', () => {
    // Prepare
    const jobs: Job[] = [
      { type: 'fetch', track: 'web', trigger: 'schedule' },
      {
        type: 'sync',
        track: 'web',
        revision: SHA,
        resolvedAt: '2026-01-02T03:04:05.000Z',
        trigger: 'manual',
      },
      { type: 'drift', track: 'web', detectOnly: true, trigger: 'manual' },
      { type: 'rollback', track: 'web', revision: SHA },
      {
        type: 'writeBack',
        track: 'web',
        revision: SHA,
        trigger: 'schedule',
        changes: [
          {
            subject: 'ConfigMap/apps/settings',
            apiVersion: 'v1',
            kind: 'ConfigMap',
            name: 'settings',
            namespace: 'apps',
            file: 'settings.yaml',
            line: 1,
            fields: [{ path: '/data/mode', value: 'fast', base: 'slow' }],
          },
          {
            subject: 'ConfigMap/apps/added',
            apiVersion: 'v1',
            kind: 'ConfigMap',
            name: 'added',
            namespace: 'apps',
            file: 'added.yaml',
            line: 1,
            // writeBack.include: the whole object travels, to be added to Git.
            add: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'added' } },
            fields: [],
          },
          {
            subject: 'Secret/apps/token',
            apiVersion: 'v1',
            kind: 'Secret',
            name: 'token',
            namespace: 'apps',
            file: 'token.sops.yaml',
            line: 1,
            // A SOPS file encrypted anew in apply: ciphertext only.
            replace: { content: 'data: ENC[AES256_GCM,data:new]', base: 'data: ENC[old]' },
            fields: [],
          },
        ],
      },
      {
        type: 'notify',
        track: 'web',
        events: [
          {
            track: 'web',
            event: 'healthy',
            revision: SHA,
            result: 'applied',
            message: 'all checked objects are ready',
            subjects: [],
            time: '2026-01-02T03:04:05.000Z',
          },
          {
            track: 'web',
            event: 'drifted',
            revision: SHA,
            result: 'drifted',
            message: 'changed in the cluster',
            subjects: ['ConfigMap/apps/a'],
            time: '2026-01-02T03:04:05.000Z',
            // A bounded event (notify/events.ts): the subjects that did not fit, counted.
            subjectsOmitted: 4_999,
          },
        ],
        receivers: ['status-back'],
      },
    ];

    // Assess
    for (const job of jobs) assert.deepEqual(parseJob(JSON.stringify(job)), job);
    // A commit status is set where the Git token is: notify jobs belong to the fetch queue.
    assert.deepEqual(parseFetchJob(JSON.stringify(jobs[5])), jobs[5]);
    assert.throws(() => parseApplyJob(JSON.stringify(jobs[5])), /notify job .* on the apply queue/);
    // A write-back runs where the Git credentials are, with every change as apply sent it.
    assert.deepEqual(parseFetchJob(JSON.stringify(jobs[4])), jobs[4]);
  });

  it('refuses what is not a job, naming the field', () => {
    // Assess
    assert.throws(() => parseJob('{'), InvalidJobError);
    assert.throws(() => parseJob('{"type":"deploy","track":"web"}'), InvalidJobError);
    assert.throws(
      () => parseJob('{"type":"sync","track":"web","revision":"x","trigger":"webhook"}'),
      /resolvedAt/,
    );
    assert.throws(
      () => parseFetchJob('{"type":"drift","track":"web"}'),
      /drift job for track "web" on the fetch queue/,
    );
    assert.throws(
      () => parseApplyJob('{"type":"fetch","track":"web","trigger":"webhook"}'),
      /on the apply queue/,
    );
  });
});

function record(id: string, group?: string): SqsRecord {
  return {
    messageId: id,
    body: id,
    ...(group === undefined
      ? { eventSourceARN: 'arn:aws:sqs:eu-west-1:1:fetch' }
      : {
          eventSourceARN: 'arn:aws:sqs:eu-west-1:1:apply.fifo',
          attributes: { MessageGroupId: group },
        }),
  };
}

describe('processSqsBatch', () => {
  it('reports only the failed messages of a standard queue batch', async () => {
    // Prepare
    const seen: string[] = [];
    const event = { Records: [record('1'), record('2'), record('3')] };

    // Act
    const response = await processSqsBatch(event, async (r) => {
      seen.push(r.body);
      if (r.body === '2') throw new Error('boom');
    });

    // Assess
    assert.deepEqual(response, { batchItemFailures: [{ itemIdentifier: '2' }] });
    assert.deepEqual(seen.sort(), ['1', '2', '3']);
  });

  it('on a FIFO queue, holds back the rest of a failed message group and runs other groups', async () => {
    // Prepare
    const seen: string[] = [];
    const reported: string[] = [];
    const event = {
      Records: [record('a1', 'a'), record('b1', 'b'), record('a2', 'a'), record('b2', 'b')],
    };

    // Act
    const response = await processSqsBatch(
      event,
      async (r) => {
        seen.push(r.body);
        if (r.body === 'a1') throw new Error('cluster unreachable');
      },
      (r) => reported.push(r.messageId),
    );

    // Assess
    assert.deepEqual(seen, ['a1', 'b1', 'b2']);
    assert.deepEqual(response.batchItemFailures, [
      { itemIdentifier: 'a1' },
      { itemIdentifier: 'a2' },
    ]);
    assert.deepEqual(reported, ['a1']);
  });
});
