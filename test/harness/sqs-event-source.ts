/**
 * What Lambda's SQS event source mapping does, for functions run locally
 * (serverless-offline's Invoke API, or a handler in the test's process):
 * pollers receive batches from a real SQS endpoint (moto), invoke the
 * function with the SQS event Lambda builds, and delete what the function
 * handled:
 *
 * - the function failed (threw, timed out): nothing is deleted, the whole
 *   batch comes back when its visibility timeout ends;
 * - it answered `batchItemFailures` (`ReportBatchItemFailures`): every other
 *   message is deleted; an answer naming a message not in the batch fails
 *   the whole batch, as Lambda treats it;
 * - `concurrency` pollers at most (`maximumConcurrency`), each with one
 *   batch in flight; a FIFO queue hands out one message group to one poller
 *   at a time, which is what keeps a track's jobs in order.
 *
 * serverless-offline-sqs (npm 8.0.0) does the polling part but deletes the
 * whole batch whenever the handler returns, whatever `batchItemFailures`
 * says, and polls each queue with one loop; hence this small stand-in.
 *
 * On a FIFO queue the pollers receive one call at a time (their invocations
 * still overlap): moto 5.2.5 reads which message groups are in flight once
 * per ReceiveMessage call, before its long-poll wait, so concurrent long
 * polls were handed two messages of one group at once (seen here: three syncs
 * of one track received together; the apply lease refused the overlapping
 * ones). SQS itself keeps a group to one receiver; this keeps moto to it.
 *
 * Every delivery is recorded with stamps from a shared counter, so tests
 * reason about order (this started after that finished) and never time.
 */
import {
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  type Message,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { InvokeAnswer } from './serverless-offline.ts';

/** Hands out increasing stamps; shared by the event sources of one test. */
export class Timeline {
  #now = 0;
  next(): number {
    return ++this.#now;
  }
}

/** One message handed to the function once. */
export interface Delivery {
  /** The event source's name (its function). */
  readonly source: string;
  /** Which batch (invocation) of this event source it came in, and how many messages that had. */
  readonly batch: number;
  readonly batchSize: number;
  readonly messageId: string;
  readonly body: string;
  readonly groupId: string | undefined;
  /** FIFO queues: the order SQS gave the message in its group. */
  readonly sequenceNumber: string | undefined;
  /** `ApproximateReceiveCount` on this receive. */
  readonly receiveCount: number;
  /** Timeline stamp when it was received. */
  readonly received: number;
  /** Timeline stamp when the invocation ended; undefined while it runs. */
  finished?: number;
  /** What the invocation made of it. */
  verdict?: 'succeeded' | 'reported failed' | 'function failed';
  /** Whether DeleteMessageBatch removed it; set for succeeded messages only. */
  deleted?: boolean;
  /** The error code SQS gave for its delete. */
  deleteError?: string;
}

export interface EventSourceOptions {
  /** Names the deliveries (`fetch`, `apply`). */
  readonly name: string;
  readonly client: SQSClient;
  readonly queueUrl: string;
  readonly queueArn: string;
  readonly region: string;
  readonly batchSize: number;
  /** Pollers, each with at most one invocation in flight. */
  readonly concurrency: number;
  /** Invokes the function with an SQS event (RequestResponse). */
  readonly invoke: (event: unknown) => Promise<InvokeAnswer>;
  readonly timeline: Timeline;
}

export interface EventSource {
  /** Starts the pollers. */
  start(): void;
  /** Every delivery so far, in the order they were received. */
  deliveries(): readonly Delivery[];
  /** Stops polling and waits for the invocations in flight. */
  stop(): Promise<void>;
}

/** The record Lambda puts in the event for `message`. */
function recordOf(message: Message, arn: string, region: string) {
  return {
    messageId: message.MessageId,
    receiptHandle: message.ReceiptHandle,
    body: message.Body,
    attributes: message.Attributes ?? {},
    messageAttributes: Object.fromEntries(
      Object.entries(message.MessageAttributes ?? {}).map(([name, value]) => [
        name,
        {
          ...(value.StringValue === undefined ? {} : { stringValue: value.StringValue }),
          ...(value.BinaryValue === undefined
            ? {}
            : { binaryValue: Buffer.from(value.BinaryValue).toString('base64') }),
          stringListValues: value.StringListValues ?? [],
          binaryListValues: [],
          dataType: value.DataType,
        },
      ]),
    ),
    md5OfBody: message.MD5OfBody,
    eventSource: 'aws:sqs',
    eventSourceARN: arn,
    awsRegion: region,
  };
}

/**
 * The ids the function reported failed, or `undefined` when the answer fails
 * the whole batch (the function failed, or named a message not in it).
 */
function failedIds(answer: InvokeAnswer, ids: ReadonlySet<string>): Set<string> | undefined {
  if (answer.status < 200 || answer.status >= 300 || answer.functionError !== undefined) {
    return undefined;
  }
  const reported = (answer.payload as { batchItemFailures?: unknown } | null | undefined)
    ?.batchItemFailures;
  if (reported === undefined || reported === null) return new Set();
  if (!Array.isArray(reported)) return undefined;
  const failed = new Set<string>();
  for (const item of reported) {
    const id = (item as { itemIdentifier?: unknown } | null)?.itemIdentifier;
    if (typeof id !== 'string' || !ids.has(id)) return undefined;
    failed.add(id);
  }
  return failed;
}

/**
 * Invokes `handler` in this process as Lambda would: its answer is the
 * payload, a throw a function error.
 */
export function inProcessInvoke(
  handler: (event: never) => Promise<unknown>,
): (event: unknown) => Promise<InvokeAnswer> {
  return async (event) => {
    try {
      return { status: 200, functionError: undefined, payload: await handler(event as never) };
    } catch (error) {
      return {
        status: 200,
        functionError: 'Unhandled',
        payload: { errorMessage: error instanceof Error ? error.message : String(error) },
      };
    }
  };
}

/** Starts nothing until {@link EventSource.start}; see the module comment. */
export function sqsEventSource(options: EventSourceOptions): EventSource {
  const { client, queueUrl, timeline } = options;
  const recorded: Delivery[] = [];
  let running = false;
  let batches = 0;
  const pollers: Promise<void>[] = [];

  const handleBatch = async (messages: Message[]): Promise<void> => {
    const batch = ++batches;
    const received = timeline.next();
    const deliveries = messages.map((message): Delivery => {
      const attributes = message.Attributes ?? {};
      return {
        source: options.name,
        batch,
        batchSize: messages.length,
        messageId: message.MessageId ?? '',
        body: message.Body ?? '',
        groupId: attributes.MessageGroupId,
        sequenceNumber: attributes.SequenceNumber,
        receiveCount: Number(attributes.ApproximateReceiveCount),
        received,
      };
    });
    recorded.push(...deliveries);
    let answer: InvokeAnswer;
    try {
      answer = await options.invoke({
        Records: messages.map((message) => recordOf(message, options.queueArn, options.region)),
      });
    } catch (error) {
      answer = { status: 0, functionError: String(error), payload: undefined };
    }
    const failed = failedIds(answer, new Set(deliveries.map((d) => d.messageId)));
    const toDelete = messages.filter(
      (message) => failed !== undefined && !failed.has(message.MessageId ?? ''),
    );
    const deleteErrors = new Map<string, string>();
    if (toDelete.length > 0) {
      try {
        const result = await client.send(
          new DeleteMessageBatchCommand({
            QueueUrl: queueUrl,
            Entries: toDelete.map((message, index) => ({
              Id: String(index),
              ReceiptHandle: message.ReceiptHandle,
            })),
          }),
        );
        for (const error of result.Failed ?? []) {
          const message = toDelete[Number(error.Id)];
          deleteErrors.set(message?.MessageId ?? '', error.Code ?? 'failed');
        }
      } catch (error) {
        for (const message of toDelete) deleteErrors.set(message.MessageId ?? '', String(error));
      }
    }
    const finished = timeline.next();
    for (const delivery of deliveries) {
      delivery.finished = finished;
      if (failed === undefined) {
        delivery.verdict = 'function failed';
      } else if (failed.has(delivery.messageId)) {
        delivery.verdict = 'reported failed';
      } else {
        delivery.verdict = 'succeeded';
        const error = deleteErrors.get(delivery.messageId);
        delivery.deleted = error === undefined;
        if (error !== undefined) delivery.deleteError = error;
      }
    }
  };

  const receiveNow = () =>
    client.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: Math.min(options.batchSize, 10),
        // Short long-polls, so stop() does not wait long.
        WaitTimeSeconds: 1,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }),
    );
  // FIFO: one ReceiveMessage at a time (see the module comment).
  let lastReceive: Promise<unknown> = Promise.resolve();
  const receive = queueUrl.endsWith('.fifo')
    ? () => {
        const next = lastReceive.then(receiveNow);
        lastReceive = next.catch(() => undefined);
        return next;
      }
    : receiveNow;

  const poll = async (received?: () => void): Promise<void> => {
    while (running) {
      let messages: Message[];
      try {
        ({ Messages: messages = [] } = await receive());
      } catch {
        // The endpoint went away (test teardown) or hiccuped: poll again.
        received?.();
        await sleep(200);
        continue;
      }
      received?.();
      if (messages.length > 0) await handleBatch(messages);
    }
  };

  return {
    start() {
      if (running) return;
      running = true;
      // The first poller receives alone, and the others start once it has: jobs queued before
      // start() then come as one batch, which a test of partial batch failures needs. moto's
      // threaded server splits concurrent first receives arbitrarily (seen: one job and four).
      let firstReceived = (): void => undefined;
      const first = new Promise<void>((resolve) => (firstReceived = resolve));
      pollers.push(poll(firstReceived));
      for (let i = 1; i < options.concurrency; i++) pollers.push(first.then(() => poll()));
    },
    deliveries: () => recorded,
    async stop() {
      running = false;
      await Promise.all(pollers);
    },
  };
}
