/**
 * The job queue of the functions run by serverless-offline, selected by
 * `DRIFTLESS_INVOKE_ENDPOINT`. serverless-offline serves the HTTP API route,
 * fires the schedule and exposes the Lambda Invoke API, but drives no SQS
 * triggers: offline, SQS is replaced, not emulated. Each job is delivered by
 * invoking the target function (fetch or apply) through the Invoke API with
 * an SQS-shaped event of one record, so the handlers run unchanged. SQS itself
 * ({@link SqsJobQueue}, the batch handling) is covered by unit tests only.
 *
 * What SQS gives in AWS, and what stands in for it here:
 * - `enqueue` resolves once the invocation request is sent, and a refused
 *   connection rejects it (as a failed SendMessage does); the job runs
 *   afterwards, so a sender is never held up by the job it queued;
 * - a run that fails — the function threw, reported the record in
 *   `batchItemFailures` (e.g. TrackBusyError: another apply job of the track
 *   holds its lease), or could not be reached — is retried after a growing
 *   delay, a bounded number of times (the visibility timeout and
 *   maxReceiveCount), then logged as dropped (the dead-letter queue);
 * - no message groups: at most one apply job per track rests on the apply
 *   lease in the track's state, and a refused job is retried as above;
 * - no deduplication: a job sent twice runs twice, which the use-cases
 *   tolerate (a revision resolved earlier never replaces a later one);
 * - the webhook's arrival travels as the same message attribute
 *   (webhook-arrival.ts), so time-to-deploy is reported offline too.
 *
 * Pending retries live in the sending function's memory, which
 * serverless-offline keeps alive between invocations: fine for a local run,
 * which is all this is for. Only the local stage's entry points
 * (handlers/offline/) use it; the deployed bundles do not contain it.
 */
import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { readEnv } from '../config/env.ts';
import { DriftlessError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { runsInFetch, type Job, type JobQueue } from '../sync/jobs.ts';
import type { JobQueueFactory } from './function-deps.ts';
import { functionLogger } from './function-logger.ts';
import { FUNCTION_ENV } from './function-env.ts';
import type { SqsEvent, SqsRecord } from './lambda-events.ts';
import { deduplicationIdOf, QueueNotConfiguredError } from './sqs-job-queue.ts';
import { currentWebhookArrival, WEBHOOK_ARRIVAL_ATTRIBUTE } from './webhook-arrival.ts';

/** The Invoke API could not be reached: the job was not handed over (a failed SendMessage, in SQS terms). */
export class JobNotSentError extends DriftlessError {
  readonly code = 'JOB_NOT_SENT';
}

export interface InvokeJobQueueOptions {
  /** Base URL of the Lambda Invoke API, e.g. `http://127.0.0.1:3002` (serverless-offline's `--lambdaPort`). */
  readonly endpoint: string;
  /** The function that runs fetch jobs, e.g. `driftless-local-fetch`. */
  readonly fetchFunction?: string;
  /** The function that runs sync, drift and rollback jobs, e.g. `driftless-local-apply`. */
  readonly applyFunction?: string;
  /** Runs of a job before it is dropped; default 8 (with the delays below, about a minute). */
  readonly maxAttempts?: number;
  /** Wait before the first retry, doubled for each next one up to 15 s; default 1 s. */
  readonly retryDelayMs?: number;
  /** Where retries and dropped jobs are reported. */
  readonly log?: Logger;
}

/** One SQS record as Lambda hands it over, with the fields the handlers do not read. */
interface InvokedSqsRecord extends SqsRecord {
  readonly receiptHandle: string;
  readonly messageAttributes: Record<
    string,
    { stringValue: string; dataType: 'String' | 'Number' }
  >;
  readonly eventSource: 'aws:sqs';
  readonly awsRegion: string;
}

const MAX_RETRY_DELAY_MS = 15_000;

/**
 * The SQS event the queue's trigger would hand `functionName` for `job`, on
 * its `attempt`th receive. Apply jobs carry their track as message group, as
 * on the FIFO apply queue, so the batch handling sees the same record.
 * `webhookArrival`: the message attribute SqsJobQueue would set.
 */
export function sqsEventOf(
  job: Job,
  functionName: string,
  messageId: string,
  attempt: number,
  webhookArrival?: number,
): SqsEvent {
  const fifo = !runsInFetch(job);
  const record: InvokedSqsRecord = {
    messageId,
    receiptHandle: messageId,
    body: JSON.stringify(job),
    attributes: {
      ApproximateReceiveCount: String(attempt),
      SentTimestamp: String(Date.now()),
      ...(fifo
        ? { MessageGroupId: job.track, MessageDeduplicationId: deduplicationIdOf(job) }
        : {}),
    },
    messageAttributes: {
      type: { stringValue: job.type, dataType: 'String' },
      track: { stringValue: job.track, dataType: 'String' },
      ...(webhookArrival === undefined
        ? {}
        : {
            [WEBHOOK_ARRIVAL_ATTRIBUTE]: {
              stringValue: String(webhookArrival),
              dataType: 'Number',
            },
          }),
    },
    eventSource: 'aws:sqs',
    // No queue exists offline: the ARN names the function, `.fifo` as on the apply queue.
    eventSourceARN: `arn:aws:sqs:offline:000000000000:${functionName}${fifo ? '.fifo' : ''}`,
    awsRegion: 'offline',
  };
  return { Records: [record] };
}

/** How one invocation ended: `retry` false when trying again cannot help (no such function). */
type Outcome = { readonly ok: true } | { readonly ok: false; reason: string; retry: boolean };

/** One invocation in flight: `sent` once the request is written, `outcome` once the function has run. */
interface Invocation {
  readonly sent: Promise<void>;
  readonly outcome: Promise<Outcome>;
}

/** How the job ran, from the Invoke API's answer. */
function failureOf(status: number, functionError: boolean, body: string): Outcome {
  if (status === 404) return { ok: false, reason: `no such function (${body})`, retry: false };
  if (status < 200 || status >= 300) {
    return { ok: false, reason: `Invoke API answered ${status}: ${body}`, retry: true };
  }
  let payload: unknown;
  try {
    payload = body === '' ? undefined : JSON.parse(body);
  } catch {
    payload = body;
  }
  if (functionError) {
    const message = (payload as { errorMessage?: unknown } | undefined)?.errorMessage;
    return { ok: false, reason: `the function failed: ${String(message ?? body)}`, retry: true };
  }
  const failures = (payload as { batchItemFailures?: unknown } | undefined)?.batchItemFailures;
  if (Array.isArray(failures) && failures.length > 0) {
    return { ok: false, reason: 'the function reported the job failed', retry: true };
  }
  return { ok: true };
}

/** Delivers jobs by invoking the fetch and apply functions; see the module comment. */
export class InvokeJobQueue implements JobQueue {
  readonly #endpoint: URL;
  readonly #fetchFunction: string | undefined;
  readonly #applyFunction: string | undefined;
  readonly #maxAttempts: number;
  readonly #retryDelayMs: number;
  readonly #log: Logger | undefined;
  readonly #deliveries = new Set<Promise<void>>();

  constructor(options: InvokeJobQueueOptions) {
    this.#endpoint = new URL(options.endpoint);
    this.#fetchFunction = options.fetchFunction;
    this.#applyFunction = options.applyFunction;
    this.#maxAttempts = Math.max(1, options.maxAttempts ?? 8);
    this.#retryDelayMs = Math.max(0, options.retryDelayMs ?? 1_000);
    this.#log = options.log;
  }

  async enqueue(job: Job): Promise<void> {
    const apply = !runsInFetch(job);
    const functionName = apply ? this.#applyFunction : this.#fetchFunction;
    if (functionName === undefined) {
      throw new QueueNotConfiguredError(
        `${job.type} job for track "${job.track}": this function has no ${apply ? 'apply' : 'fetch'} function to invoke`,
      );
    }
    // The same message id on every run, as SQS redelivers a message under its id.
    const messageId = randomUUID();
    const arrival = currentWebhookArrival();
    const first = this.#invoke(functionName, sqsEventOf(job, functionName, messageId, 1, arrival));
    await first.sent;
    const delivery = this.#deliver(job, functionName, messageId, first, arrival).finally(() =>
      this.#deliveries.delete(delivery),
    );
    this.#deliveries.add(delivery);
  }

  /** Resolves once every job queued so far has run or been dropped (for tests). */
  async idle(): Promise<void> {
    while (this.#deliveries.size > 0) await Promise.all([...this.#deliveries]);
  }

  async #deliver(
    job: Job,
    functionName: string,
    messageId: string,
    first: Invocation,
    arrival: number | undefined,
  ): Promise<void> {
    let invocation = first;
    for (let attempt = 1; ; attempt++) {
      const outcome = await invocation.outcome;
      if (outcome.ok) return;
      const fields = { job: job.type, track: job.track, target: functionName, attempt };
      if (!outcome.retry || attempt >= this.#maxAttempts) {
        this.#log?.error('job dropped', { ...fields, reason: outcome.reason });
        return;
      }
      const delay = Math.min(this.#retryDelayMs * 2 ** (attempt - 1), MAX_RETRY_DELAY_MS);
      this.#log?.warn('job retried', { ...fields, reason: outcome.reason, delayMs: delay });
      await sleep(delay);
      invocation = this.#invoke(
        functionName,
        sqsEventOf(job, functionName, messageId, attempt + 1, arrival),
      );
      // A connection refused now shows in the outcome, and counts as a failed run.
      invocation.sent.catch(() => undefined);
    }
  }

  /** POSTs `event` to the function's `invocations` resource, RequestResponse, to learn how it ran. */
  #invoke(functionName: string, event: SqsEvent): Invocation {
    const url = new URL(
      `2015-03-31/functions/${encodeURIComponent(functionName)}/invocations`,
      this.#endpoint.href.endsWith('/') ? this.#endpoint : `${this.#endpoint.href}/`,
    );
    const body = JSON.stringify(event);
    let markSent!: () => void;
    let failSend!: (error: Error) => void;
    const sent = new Promise<void>((resolve, reject) => {
      markSent = resolve;
      failSend = reject;
    });
    const outcome = new Promise<Outcome>((resolve) => {
      const req = request(
        url,
        {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            'x-amz-invocation-type': 'RequestResponse',
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('error', (error) => resolve({ ok: false, reason: error.message, retry: true }));
          res.on('end', () =>
            resolve(
              failureOf(
                res.statusCode ?? 0,
                res.headers['x-amz-function-error'] !== undefined,
                Buffer.concat(chunks).toString('utf8'),
              ),
            ),
          );
        },
      );
      req.on('finish', () => markSent());
      req.on('error', (error) => {
        failSend(
          new JobNotSentError(`cannot invoke ${functionName} at ${url.origin}: ${error.message}`, {
            cause: error,
          }),
        );
        resolve({ ok: false, reason: error.message, retry: true });
      });
      req.end(body);
    });
    return { sent, outcome };
  }
}

/**
 * The local stage's queues (handlers/offline/): an {@link InvokeJobQueue} at
 * `DRIFTLESS_INVOKE_ENDPOINT`, invoking `DRIFTLESS_FETCH_FUNCTION` for fetch
 * jobs and `DRIFTLESS_APPLY_FUNCTION` for the others, as `targets` needs.
 */
export const invokeJobQueues: JobQueueFactory = (targets, env) =>
  new InvokeJobQueue({
    endpoint: readEnv(FUNCTION_ENV.invokeEndpoint, env),
    ...(targets.fetch ? { fetchFunction: readEnv(FUNCTION_ENV.fetchFunction, env) } : {}),
    ...(targets.apply ? { applyFunction: readEnv(FUNCTION_ENV.applyFunction, env) } : {}),
    log: functionLogger('job-queue', env),
  });
