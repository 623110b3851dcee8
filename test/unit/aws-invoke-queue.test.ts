import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, it } from 'node:test';
import { MissingEnvError } from '../../src/config/env.ts';
import {
  InvokeJobQueue,
  invokeJobQueues,
  JobNotSentError,
  sqsEventOf,
} from '../../src/aws/invoke-job-queue.ts';
import type { SqsEvent } from '../../src/aws/lambda-events.ts';
import { parseApplyJob, parseFetchJob } from '../../src/aws/parse-job.ts';
import { processSqsBatch } from '../../src/aws/sqs-batch.ts';
import { QueueNotConfiguredError } from '../../src/aws/sqs-job-queue.ts';
import type { Logger, LogFields } from '../../src/logger.ts';
import type { Job } from '../../src/sync/jobs.ts';
import { freePort } from '../harness/processes.ts';

const SHA = 'a'.repeat(40);
const SYNC: Job = {
  type: 'sync',
  track: 'web',
  revision: SHA,
  resolvedAt: '2026-01-02T03:04:05.000Z',
  trigger: 'webhook',
};
const FETCH: Job = { type: 'fetch', track: 'web', trigger: 'schedule' };

/** One request the fake Invoke API received. */
interface Invocation {
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly event: SqsEvent;
}

/** An answer of the fake Invoke API: status, headers and body. */
interface Answer {
  readonly status?: number;
  readonly headers?: Record<string, string>;
  readonly body?: unknown;
  /** Held back until this resolves. */
  readonly after?: Promise<void>;
}

/**
 * A stand-in for serverless-offline's Lambda Invoke API on a loopback port:
 * records each invocation and answers with the next scripted answer (the
 * last one repeats), so the queue is tested over real HTTP.
 */
function fakeInvokeApi() {
  const invocations: Invocation[] = [];
  let answers: Answer[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      invocations.push({
        url: req.url ?? '',
        headers: req.headers,
        event: JSON.parse(Buffer.concat(chunks).toString('utf8')) as SqsEvent,
      });
      const answer = (answers.length > 1 ? answers.shift() : answers[0]) ?? {};
      void (answer.after ?? Promise.resolve()).then(() => {
        res.writeHead(answer.status ?? 200, answer.headers ?? {});
        res.end(answer.body === undefined ? '' : JSON.stringify(answer.body));
      });
    });
  });
  return {
    server,
    invocations,
    script: (next: Answer[]) => {
      answers = next;
      invocations.length = 0;
    },
    url: () => `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
  };
}

/** A logger keeping what it is told. */
function recordingLogger() {
  const lines: { level: string; msg: string; fields: LogFields }[] = [];
  const at =
    (level: string) =>
    (msg: string, fields: LogFields = {}) =>
      void lines.push({ level, msg, fields });
  const log: Logger = {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: () => log,
  };
  return { log, lines };
}

const NO_FAILURES = { body: { batchItemFailures: [] } };

describe('InvokeJobQueue', () => {
  const api = fakeInvokeApi();

  before(() => new Promise<void>((resolve) => api.server.listen(0, '127.0.0.1', resolve)));
  after(() => new Promise<void>((resolve) => api.server.close(() => resolve())));
  beforeEach(() => api.script([NO_FAILURES]));

  const queue = (log?: Logger, maxAttempts = 3) =>
    new InvokeJobQueue({
      endpoint: api.url(),
      fetchFunction: 'driftless-local-fetch',
      applyFunction: 'driftless-local-apply',
      retryDelayMs: 5,
      maxAttempts,
      ...(log ? { log } : {}),
    });

  it('invokes the fetch function with an SQS event of one standard-queue record', async () => {
    // Prepare
    const jobs = queue();

    // Act
    await jobs.enqueue(FETCH);
    await jobs.idle();

    // Assess
    assert.equal(api.invocations.length, 1);
    const [invocation] = api.invocations;
    assert.equal(invocation?.url, '/2015-03-31/functions/driftless-local-fetch/invocations');
    assert.equal(invocation?.headers['x-amz-invocation-type'], 'RequestResponse');
    const [record] = invocation?.event.Records ?? [];
    assert.deepEqual(parseFetchJob(record?.body ?? ''), FETCH);
    assert.equal(record?.attributes?.MessageGroupId, undefined);
    assert.equal((record as unknown as { eventSource: string }).eventSource, 'aws:sqs');
  });

  it('invokes the apply function with the track as message group, as on the FIFO queue', async () => {
    // Prepare
    const jobs = queue();

    // Act
    await jobs.enqueue(SYNC);
    await jobs.idle();

    // Assess
    const [invocation] = api.invocations;
    assert.equal(invocation?.url, '/2015-03-31/functions/driftless-local-apply/invocations');
    const [record] = invocation?.event.Records ?? [];
    assert.deepEqual(parseApplyJob(record?.body ?? ''), SYNC);
    assert.equal(record?.attributes?.MessageGroupId, 'web');
    assert.match(record?.eventSourceARN ?? '', /:driftless-local-apply\.fifo$/);
  });

  it('resolves once the job is handed over, before the function has run', async () => {
    // Prepare
    let finish!: () => void;
    api.script([{ ...NO_FAILURES, after: new Promise<void>((resolve) => (finish = resolve)) }]);
    const jobs = queue();
    let idle = false;

    // Act
    await jobs.enqueue(SYNC);
    const waiting = jobs.idle().then(() => (idle = true));
    await new Promise((resolve) => setTimeout(resolve, 50));

    // Assess
    assert.equal(idle, false, 'the job is still running');
    finish();
    await waiting;
    assert.equal(api.invocations.length, 1);
  });

  it('runs a job again under the same message id when the function reports it failed', async () => {
    // Prepare
    const { log, lines } = recordingLogger();
    api.script([
      // TrackBusyError in the apply handler: the record comes back in batchItemFailures.
      { body: { batchItemFailures: [{ itemIdentifier: 'x' }] } },
      { headers: { 'x-amz-function-error': 'Unhandled' }, body: { errorMessage: 'boom' } },
      NO_FAILURES,
    ]);
    const jobs = queue(log);

    // Act
    await jobs.enqueue(SYNC);
    await jobs.idle();

    // Assess
    const records = api.invocations.map((invocation) => invocation.event.Records[0]);
    assert.equal(records.length, 3);
    assert.equal(new Set(records.map((record) => record?.messageId)).size, 1);
    assert.deepEqual(
      records.map((record) => record?.attributes?.ApproximateReceiveCount),
      ['1', '2', '3'],
    );
    assert.deepEqual(
      lines.map((line) => [line.level, line.msg]),
      [
        ['warn', 'job retried'],
        ['warn', 'job retried'],
      ],
    );
    assert.match(String(lines[1]?.fields.reason), /boom/);
  });

  it('drops a job that keeps failing after its last attempt, and says so', async () => {
    // Prepare
    const { log, lines } = recordingLogger();
    api.script([{ status: 500, body: { message: 'down' } }]);
    const jobs = queue(log, 2);

    // Act
    await jobs.enqueue(SYNC);
    await jobs.idle();

    // Assess
    assert.equal(api.invocations.length, 2);
    assert.deepEqual(lines.at(-1)?.msg, 'job dropped');
    assert.deepEqual(lines.at(-1)?.fields.track, 'web');
  });

  it('does not retry a function that does not exist', async () => {
    // Prepare
    const { log, lines } = recordingLogger();
    api.script([{ status: 404, body: { Message: 'Function not found' } }]);
    const jobs = queue(log);

    // Act
    await jobs.enqueue(FETCH);
    await jobs.idle();

    // Assess
    assert.equal(api.invocations.length, 1);
    assert.deepEqual(
      lines.map((line) => line.msg),
      ['job dropped'],
    );
  });

  it('rejects a job when the Invoke API cannot be reached', async () => {
    // Prepare
    const jobs = new InvokeJobQueue({
      endpoint: `http://127.0.0.1:${await freePort()}`,
      applyFunction: 'driftless-local-apply',
    });

    // Act
    const enqueued = jobs.enqueue(SYNC);

    // Assess
    await assert.rejects(enqueued, JobNotSentError);
  });

  it('rejects a job for a function it was not given', async () => {
    // Prepare
    const jobs = new InvokeJobQueue({
      endpoint: api.url(),
      fetchFunction: 'driftless-local-fetch',
    });

    // Act
    const enqueued = jobs.enqueue({ type: 'drift', track: 'web' });

    // Assess
    await assert.rejects(enqueued, QueueNotConfiguredError);
    assert.equal(api.invocations.length, 0);
  });
});

describe('sqsEventOf', () => {
  it('gives the apply handler a FIFO record it runs once', async () => {
    // Prepare
    const event = sqsEventOf(SYNC, 'driftless-local-apply', 'm-1', 1);
    const seen: Job[] = [];

    // Act
    const answer = await processSqsBatch(event, async (record) => {
      seen.push(parseApplyJob(record.body));
    });

    // Assess
    assert.deepEqual(seen, [SYNC]);
    assert.deepEqual(answer, { batchItemFailures: [] });
  });
});

describe('invokeJobQueues (the local stage only)', () => {
  it('names the endpoint variable when it is missing', () => {
    // Act
    const select = () => invokeJobQueues({ apply: true }, {});

    // Assess
    assert.throws(
      select,
      (error: unknown) =>
        error instanceof MissingEnvError && error.variable === 'DRIFTLESS_INVOKE_ENDPOINT',
    );
  });

  it('names the function variable that is missing', () => {
    // Act
    const select = () =>
      invokeJobQueues(
        { fetch: true, apply: true },
        {
          DRIFTLESS_INVOKE_ENDPOINT: 'http://127.0.0.1:3002',
          DRIFTLESS_FETCH_FUNCTION: 'driftless-local-fetch',
        },
      );

    // Assess
    assert.throws(
      select,
      (error: unknown) =>
        error instanceof MissingEnvError && error.variable === 'DRIFTLESS_APPLY_FUNCTION',
    );
  });

  it('builds the queue from the endpoint and function names', () => {
    // Act
    const queue = invokeJobQueues(
      { apply: true },
      {
        DRIFTLESS_INVOKE_ENDPOINT: 'http://127.0.0.1:3002',
        DRIFTLESS_APPLY_FUNCTION: 'driftless-local-apply',
      },
    );

    // Assess
    assert.ok(queue instanceof InvokeJobQueue);
  });
});
