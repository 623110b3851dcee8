/**
 * What a job is sent on behalf of — its origin — for the FIFO queues'
 * deduplication id (sqs-job-queue.ts). SQS drops a message whose id it saw
 * in the last five minutes. The job's content alone is the right id where
 * an equal job is the same request: two deliveries of one webhook, the
 * schedule fired twice for one tick. It is the wrong one where an equal job
 * is a new request: a person's suspend, resume, suspend (the second suspend
 * would be dropped while the rollback function answers `queued: true`), or
 * the sync of a dependent resumed when its dependency becomes Ready, equal
 * to the sync that was refused minutes before (resume-dependents.ts).
 *
 * So the functions whose every run is one request run it inside
 * {@link withJobOrigin}, and what they send is told apart by it:
 * - the fetch and apply functions, per message: the message's id, which
 *   SQS keeps across redeliveries, so a job re-sent by a retried message is
 *   still dropped, while the same job sent for another message is not;
 * - the rollback and dashboard functions, per invocation: Lambda's request
 *   id, which an asynchronous invocation keeps across its retries.
 *
 * The webhook and drift functions set none: their duplicates are the same
 * request, and their jobs' content (a delivery's hint, a tick) already tells
 * two requests apart. The origin travels outside the job's JSON, so the job
 * itself, what parses it and its history are as before.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';

const origin = new AsyncLocalStorage<string | undefined>();

/** Runs `run` with `id` as the origin of every job it sends. */
export function withJobOrigin<T>(id: string, run: () => T): T {
  return origin.run(id, run);
}

/** The origin of the message or invocation running now, if any. */
export function currentJobOrigin(): string | undefined {
  return origin.getStore();
}

/** The origin of a queue message's run: its id, kept by SQS across redeliveries. */
export function messageOrigin(messageId: string): string {
  return `message:${messageId}`;
}

/**
 * The origin of an invocation's run: Lambda's request id, kept across the
 * retries of an asynchronous invocation; a fresh id without one (a handler
 * called directly, as tests and the local stage do), so each call is a
 * request of its own.
 */
export function invocationOrigin(context: { readonly awsRequestId?: string } | undefined): string {
  return `invocation:${context?.awsRequestId ?? randomUUID()}`;
}
