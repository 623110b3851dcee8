/**
 * The {@link JobQueue} of the deployed functions, over SQS.
 *
 * - fetch jobs go to the fetch queue (standard or FIFO);
 * - sync, drift and rollback jobs go to the apply queue, a FIFO queue with
 *   one message group per track: SQS hands out at most one message of a
 *   group at a time, so at most one apply job per track is in flight while
 *   different tracks run in parallel (DESIGN.md safety rules);
 * - on a FIFO queue the deduplication id is the sha256 of the job's content,
 *   so a job sent twice within SQS' five-minute window (a redelivered
 *   webhook, a retried send) runs once; scheduled jobs carry their tick, so
 *   the next tick's check of the same track is not mistaken for a repeat;
 * - a job sent while a webhook's work runs carries the webhook's arrival as
 *   a message attribute (webhook-arrival.ts), for time-to-deploy.
 */
import { createHash } from 'node:crypto';
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { DriftlessError } from '../errors.ts';
import { canonicalJson } from '../render/canonical-json.ts';
import { runsInFetch, type Job, type JobQueue } from '../sync/jobs.ts';
import { currentWebhookArrival, WEBHOOK_ARRIVAL_ATTRIBUTE } from './webhook-arrival.ts';

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
}

/** A FIFO queue's URL ends in `.fifo`: SQS requires the suffix in the name. */
export function isFifoQueueUrl(url: string): boolean {
  return url.endsWith('.fifo');
}

/**
 * The FIFO deduplication id of a job: sha256 hex of its canonical JSON (64 of
 * the 128 characters allowed), so equal jobs give equal ids whatever order
 * their fields were set in.
 */
export function deduplicationIdOf(job: Job): string {
  return createHash('sha256').update(canonicalJson(job), 'utf8').digest('hex');
}

/** Sends jobs to the fetch and apply queues; see the module comment. */
export class SqsJobQueue implements JobQueue {
  readonly #client: Pick<SQSClient, 'send'>;
  readonly #fetchQueueUrl: string | undefined;
  readonly #applyQueueUrl: string | undefined;

  constructor(options: SqsJobQueueOptions) {
    this.#client = options.client;
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
        MessageBody: JSON.stringify(job),
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
          ? { MessageGroupId: job.track, MessageDeduplicationId: deduplicationIdOf(job) }
          : {}),
      }),
    );
  }
}
