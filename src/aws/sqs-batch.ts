/**
 * Runs the messages of an SQS batch and reports the failed ones
 * (`ReportBatchItemFailures`), so one bad message is retried (and finally
 * dead-lettered) alone instead of with the whole batch.
 *
 * On a FIFO queue order matters within a message group (a track): once a
 * message of a group fails, the group's later messages in the batch are not
 * run and are reported failed too, so they are retried after it and never
 * overtake it. Other groups go on. On a standard queue messages run
 * concurrently.
 */
import type { SqsBatchResponse, SqsEvent, SqsRecord } from './lambda-events.ts';

/** Told about each message that failed, for the logs. */
export type BatchFailureReporter = (record: SqsRecord, error: unknown) => void;

function isFifo(record: SqsRecord): boolean {
  return (
    record.eventSourceARN?.endsWith('.fifo') === true ||
    typeof record.attributes?.MessageGroupId === 'string'
  );
}

/** Runs `handle` on every message of `event`; see the module comment. */
export async function processSqsBatch(
  event: SqsEvent,
  handle: (record: SqsRecord) => Promise<void>,
  onFailure: BatchFailureReporter = () => undefined,
): Promise<SqsBatchResponse> {
  const records = Array.isArray(event?.Records) ? event.Records : [];
  const failed: SqsRecord[] = [];
  const run = async (record: SqsRecord): Promise<void> => {
    try {
      await handle(record);
    } catch (error) {
      failed.push(record);
      onFailure(record, error);
    }
  };

  if (records.some(isFifo)) {
    const blockedGroups = new Set<string>();
    for (const record of records) {
      const group = record.attributes?.MessageGroupId ?? '';
      if (blockedGroups.has(group)) {
        failed.push(record);
        continue;
      }
      const before = failed.length;
      await run(record);
      if (failed.length > before) blockedGroups.add(group);
    }
  } else {
    await Promise.all(records.map(run));
  }
  // In the batch's order, which keeps the answer stable for tests and logs.
  const order = new Map(records.map((record, index) => [record.messageId, index]));
  return {
    batchItemFailures: failed
      .sort((a, b) => (order.get(a.messageId) ?? 0) - (order.get(b.messageId) ?? 0))
      .map((record) => ({ itemIdentifier: record.messageId })),
  };
}
