/**
 * The AWS receivers: an SNS topic and an EventBridge bus, reached with the
 * credentials of whoever runs the job (a function's role in AWS). Clients
 * are imported by name (so a bundle keeps two commands, not the services'
 * hundreds) and made on first use, one per region. Bounded like the HTTP
 * receivers: two attempts, each cut off after the delivery timeout.
 *
 * The SDK's own endpoint variables (`AWS_ENDPOINT_URL_SNS`,
 * `AWS_ENDPOINT_URL_EVENTBRIDGE`) point them at a local server in tests.
 */
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { PublishCommand, SNSClient } from '@aws-sdk/client-sns';
import type { NotificationEvent } from './events.ts';

/** The event's `source` on EventBridge; rules match on it. */
export const EVENT_SOURCE = 'driftless';

export interface AwsReceivers {
  publishToSns(topicArn: string, event: NotificationEvent): Promise<void>;
  putEvent(eventBus: string, event: NotificationEvent): Promise<void>;
}

/** Region of an ARN (`arn:aws:sns:<region>:...`); undefined for a plain name. */
function regionOf(arnOrName: string): string | undefined {
  return arnOrName.startsWith('arn:') ? arnOrName.split(':')[3] : undefined;
}

export function awsReceivers(attemptTimeoutMs: number): AwsReceivers {
  const options = (region: string | undefined) => ({
    maxAttempts: 2,
    requestHandler: { requestTimeout: attemptTimeoutMs, connectionTimeout: attemptTimeoutMs },
    ...(region === undefined ? {} : { region }),
  });
  const sns = new Map<string, SNSClient>();
  const events = new Map<string, EventBridgeClient>();
  const clientOf = <C>(clients: Map<string, C>, region: string | undefined, make: () => C): C => {
    const key = region ?? '';
    let client = clients.get(key);
    if (client === undefined) {
      client = make();
      clients.set(key, client);
    }
    return client;
  };
  return {
    async publishToSns(topicArn, event) {
      const region = regionOf(topicArn);
      const client = clientOf(sns, region, () => new SNSClient(options(region)));
      await client.send(
        new PublishCommand({
          TopicArn: topicArn,
          // Subjects are limited to 100 printable ASCII characters.
          Subject: `driftless ${event.track}: ${event.event}`.slice(0, 100),
          Message: JSON.stringify(event),
          // Subscriptions can filter on these without reading the body.
          MessageAttributes: {
            track: { DataType: 'String', StringValue: event.track },
            event: { DataType: 'String', StringValue: event.event },
          },
          ...(topicArn.endsWith('.fifo')
            ? { MessageGroupId: event.track, MessageDeduplicationId: dedupeId(event) }
            : {}),
        }),
      );
    },
    async putEvent(eventBus, event) {
      const region = regionOf(eventBus);
      const client = clientOf(events, region, () => new EventBridgeClient(options(region)));
      const answer = await client.send(
        new PutEventsCommand({
          Entries: [
            {
              EventBusName: eventBus,
              Source: EVENT_SOURCE,
              DetailType: `Track ${event.event}`,
              Detail: JSON.stringify(event),
              Time: new Date(event.time),
            },
          ],
        }),
      );
      // PutEvents answers 200 with per-entry failures.
      const failed = answer.Entries?.[0];
      if ((answer.FailedEntryCount ?? 0) > 0) {
        throw new Error(`EventBridge refused the event: ${failed?.ErrorCode ?? 'unknown error'}`);
      }
    },
  };
}

function dedupeId(event: NotificationEvent): string {
  return `${event.track}.${event.event}.${event.time}`
    .replace(/[^A-Za-z0-9._-]/g, '-')
    .slice(0, 128);
}
