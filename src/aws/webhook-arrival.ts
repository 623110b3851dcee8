/**
 * When the webhook behind a job arrived, carried from function to function
 * so the apply function can report time-to-deploy
 * (`driftless_time_to_deploy_seconds`) as `driftless serve` does: serve
 * keeps the arrival time with each queued job and its follow-ups in memory;
 * here it travels as an SQS message attribute, outside the job's JSON (the
 * job and its FIFO deduplication id stay as they are).
 *
 * The webhook function runs the webhook use-case inside
 * {@link withWebhookArrival}; a job function runs each job inside it, with
 * the time its message carried. The job queues ({@link SqsJobQueue},
 * InvokeJobQueue) stamp every job they send from inside such a run, so a
 * fetch queued by a webhook, the sync that fetch queues and the syncs of
 * dependents that sync unblocks all carry the webhook's arrival; jobs the
 * schedule or a person queued carry none.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { SqsRecord } from './lambda-events.ts';

/** The message attribute: milliseconds since the epoch, as an SQS `Number`. */
export const WEBHOOK_ARRIVAL_ATTRIBUTE = 'webhookReceivedAt';

const arrival = new AsyncLocalStorage<number | undefined>();

/** Runs `run` with `receivedAt` (ms since the epoch) as the arrival of the webhook behind it. */
export function withWebhookArrival<T>(receivedAt: number | undefined, run: () => T): T {
  return arrival.run(receivedAt, run);
}

/** The arrival of the webhook behind the job or delivery running now, if any. */
export function currentWebhookArrival(): number | undefined {
  return arrival.getStore();
}

/** The arrival a job's message carries; none when absent or not a plausible time. */
export function webhookArrivalOf(record: SqsRecord): number | undefined {
  const text = record.messageAttributes?.[WEBHOOK_ARRIVAL_ATTRIBUTE]?.stringValue;
  const ms = text === undefined ? NaN : Number(text);
  return Number.isSafeInteger(ms) && ms > 0 ? ms : undefined;
}
