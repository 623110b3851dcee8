/**
 * The {@link JobQueue} of the deployed functions, over SQS.
 *
 * - fetch jobs go to the fetch queue (standard or FIFO);
 * - sync, drift and rollback jobs go to the apply queue, a FIFO queue with
 *   one message group per track: SQS hands out at most one message of a
 *   group at a time, so at most one apply job per track is in flight while
 *   different tracks run in parallel (DESIGN.md safety rules);
 * - on a FIFO queue the deduplication id is the sha256 of the job's content
 *   and of its origin (job-origin.ts), so a job sent twice within SQS'
 *   five-minute window for one request (a redelivered webhook, a retried
 *   send or message) runs once, while an equal job of another request (a
 *   person's second suspend, a resumed sync) runs too; scheduled jobs carry
 *   their tick, so the next tick's check of the same track is not mistaken
 *   for a repeat;
 * - a job sent while a webhook's work runs carries the webhook's arrival as
 *   a message attribute (webhook-arrival.ts), for time-to-deploy;
 * - a job too large for a message (a write-back of a large ConfigMap) waits
 *   in the store under the sha256 of its JSON, and the message carries only
 *   its type, track and that name (a claim check, {@link readQueuedJob}).
 */
import { createHash } from 'node:crypto';
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { DriftlessError } from '../errors.ts';
import type { JobBodyStore } from '../store/ports.ts';
import { canonicalJson } from '../render/canonical-json.ts';
import { runsInFetch, type Job, type JobQueue } from '../sync/jobs.ts';
import { currentJobOrigin } from './job-origin.ts';
import { currentWebhookArrival, WEBHOOK_ARRIVAL_ATTRIBUTE } from './webhook-arrival.ts';

/** A job too large for a queue message, where no store was given to hold it. */
export class JobTooLargeError extends DriftlessError {
  readonly code = 'JOB_TOO_LARGE';
}

/**
 * The most bytes of JSON a job is sent inline; a larger job waits in the
 * store. SQS takes at most 1 MiB in a message with its attributes, and
 * 256 KiB on queues made before 2025, which keep that limit.
 */
export const MAX_INLINE_JOB_BYTES = 200 * 1024;

/** The message of a job that waits in the store: its type and track, and where its JSON is. */
export interface StoredJobMessage {
  readonly type: Job['type'];
  readonly track: string;
  /** The sha256 hex of the job's JSON, its name in the store's `jobs/`. */
  readonly storedJob: string;
}

/** A job was sent to a queue this function has not been given (its role could not send there either). */
export class QueueNotConfiguredError extends DriftlessError {
  readonly code = 'QUEUE_NOT_CONFIGURED';
}

export interface SqsJobQueueOptions {
  /** An SQS client; only `send` is used. */
  readonly client: Pick<SQSClient, 'send'>;
  /** Where fetch jobs go; a `.fifo` URL is treated as a FIFO queue. */
  readonly fetchQueueUrl?: string;
  /** Where sync, drift and rollback jobs go; must be a FIFO queue. */
  readonly applyQueueUrl?: string;
  /** Where a job larger than {@link MAX_INLINE_JOB_BYTES} waits; without it such a job is refused. */
  readonly bodies?: JobBodyStore;
}

/** A FIFO queue's URL ends in `.fifo`: SQS requires the suffix in the name. */
export function isFifoQueueUrl(url: string): boolean {
  return url.endsWith('.fifo');
}

/**
 * The FIFO deduplication id of a job: sha256 hex of its canonical JSON (64 of
 * the 128 characters allowed), so equal jobs give equal ids whatever order
 * their fields were set in; with `origin` (job-origin.ts), of the origin too,
 * so equal jobs of two requests give two ids.
 */
export function deduplicationIdOf(job: Job, origin?: string): string {
  const hash = createHash('sha256').update(canonicalJson(job), 'utf8');
  // Canonical JSON holds no raw newline, so the origin cannot run into the job.
  if (origin !== undefined) hash.update(`\n${origin}`, 'utf8');
  return hash.digest('hex');
}

/** Sends jobs to the fetch and apply queues; see the module comment. */
export class SqsJobQueue implements JobQueue {
  readonly #client: Pick<SQSClient, 'send'>;
  readonly #fetchQueueUrl: string | undefined;
  readonly #applyQueueUrl: string | undefined;
  readonly #bodies: JobBodyStore | undefined;

  constructor(options: SqsJobQueueOptions) {
    this.#client = options.client;
    this.#bodies = options.bodies;
    this.#fetchQueueUrl = options.fetchQueueUrl;
    this.#applyQueueUrl = options.applyQueueUrl;
    if (this.#applyQueueUrl !== undefined && !isFifoQueueUrl(this.#applyQueueUrl)) {
      // Without message groups nothing keeps two apply jobs of a track apart.
      throw new QueueNotConfiguredError(
        `apply queue ${this.#applyQueueUrl} is not a FIFO queue (its name must end in .fifo)`,
      );
    }
  }

  async enqueue(job: Job): Promise<void> {
    const apply = !runsInFetch(job);
    const url = apply ? this.#applyQueueUrl : this.#fetchQueueUrl;
    if (url === undefined) {
      throw new QueueNotConfiguredError(
        `${job.type} job for track "${job.track}": this function has no ${apply ? 'apply' : 'fetch'} queue`,
      );
    }
    const fifo = isFifoQueueUrl(url);
    const arrival = currentWebhookArrival();
    await this.#client.send(
      new SendMessageCommand({
        QueueUrl: url,
        MessageBody: await this.#bodyOf(job),
        MessageAttributes: {
          type: { DataType: 'String', StringValue: job.type },
          track: { DataType: 'String', StringValue: job.track },
          ...(arrival === undefined
            ? {}
            : {
                [WEBHOOK_ARRIVAL_ATTRIBUTE]: { DataType: 'Number', StringValue: String(arrival) },
              }),
        },
        ...(fifo
          ? {
              MessageGroupId: job.track,
              MessageDeduplicationId: deduplicationIdOf(job, currentJobOrigin()),
            }
          : {}),
      }),
    );
  }

  /** The job's JSON, or a {@link StoredJobMessage} when the JSON is too large to send. */
  async #bodyOf(job: Job): Promise<string> {
    const json = JSON.stringify(job);
    const bytes = Buffer.byteLength(json, 'utf8');
    if (bytes <= MAX_INLINE_JOB_BYTES) return json;
    if (this.#bodies === undefined) {
      throw new JobTooLargeError(
        `${job.type} job for track "${job.track}" is ${bytes} bytes, more than a queue message holds, and this function has no store for it`,
      );
    }
    const stored: StoredJobMessage = {
      type: job.type,
      track: job.track,
      storedJob: await this.#bodies.putJobBody(json),
    };
    return JSON.stringify(stored);
  }
}

/**
 * A queue message's job JSON: the message itself, or, for a
 * {@link StoredJobMessage}, the JSON it names, read from `bodies`.
 */
export async function readQueuedJob(
  message: string,
  bodies: (() => Promise<JobBodyStore>) | undefined,
): Promise<string> {
  let name: unknown;
  try {
    name = (JSON.parse(message) as { storedJob?: unknown } | null)?.storedJob;
  } catch {
    return message; // Not JSON: the job's parser says so, naming the message.
  }
  if (name === undefined) return message;
  if (bodies === undefined) {
    throw new JobTooLargeError(
      `a stored job (${String(name)}) reached a function that cannot read the store's jobs`,
    );
  }
  return (await bodies()).readJobBody(String(name));
}
