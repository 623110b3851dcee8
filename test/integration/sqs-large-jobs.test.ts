/**
 * A job too large for an SQS message, against moto's SQS, which refuses a
 * message over the queue's maximum as SQS does (1 MiB at most; 256 KiB on
 * queues made before 2025, and our threshold): the job queue stores the job and sends
 * its name, and the receiving side (`readQueuedJob`, as the fetch function's
 * handler runs it) reads the job back whole from the message it receives.
 * The store is the filesystem one here; the S3 store's job bodies pass the
 * same contract against MinIO (store-contract.ts).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  CreateQueueCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { parseFetchJob } from '../../src/aws/parse-job.ts';
import { readQueuedJob, SqsJobQueue } from '../../src/aws/sqs-job-queue.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import { largeWriteBackJob } from '../harness/large-jobs.ts';
import { startMoto, type MotoServer } from '../harness/moto.ts';

describe('jobs larger than an SQS message (moto server)', () => {
  let moto: MotoServer;
  let sqs: SQSClient;
  let dir: string;
  const saved = { ...process.env };

  before(async () => {
    moto = await startMoto();
    Object.assign(process.env, moto.env);
    sqs = new SQSClient({});
    dir = await mkdtemp(join(tmpdir(), 'driftless-large-jobs-'));
  });
  after(async () => {
    process.env = saved;
    await moto?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('sends a write-back of a large ConfigMap as its name in the store, read back whole', async () => {
    // Prepare: a Grafana dashboard changed in the cluster, 600,000 characters of JSON before and
    // after (a ConfigMap holds up to 1 MiB): more than any SQS queue takes (1 MiB at most).
    const { QueueUrl: url } = await sqs.send(new CreateQueueCommand({ QueueName: 'fetch' }));
    const store = new FsStore({ path: dir });
    const job = largeWriteBackJob(600_000);
    // SQS itself refuses the job's JSON as a message.
    await assert.rejects(
      sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: JSON.stringify(job) })),
      /shorter than|too long/i,
    );
    const queue = new SqsJobQueue({ client: sqs, fetchQueueUrl: url!, bodies: store });

    // Act
    await queue.enqueue(job);
    const { Messages } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 2 }),
    );
    const body = Messages?.[0]?.Body ?? '';
    const received = parseFetchJob(await readQueuedJob(body, async () => store));

    // Assess
    assert.ok(Buffer.byteLength(body) < 200, `${Buffer.byteLength(body)} bytes sent`);
    assert.deepEqual(received, job);
  });
});
