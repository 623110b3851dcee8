/**
 * The AWS receivers against real AWS APIs: moto's server (PyPI) playing SNS,
 * EventBridge and SQS. An SQS queue subscribed to the topic, and another
 * that an EventBridge rule matching `source: driftless` targets, show what a
 * subscriber of each would receive. A topic that does not exist is a
 * delivery failure, reported, not thrown.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  CreateEventBusCommand,
  EventBridgeClient,
  PutRuleCommand,
  PutTargetsCommand,
} from '@aws-sdk/client-eventbridge';
import { CreateTopicCommand, SNSClient, SubscribeCommand } from '@aws-sdk/client-sns';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { parseConfig } from '../../src/config/index.ts';
import { deliver, type NotifiedTrack } from '../../src/notify/deliver.ts';
import type { NotificationEvent } from '../../src/notify/events.ts';
import { startMoto, type MotoServer } from '../harness/moto.ts';

const EVENT: NotificationEvent = {
  track: 'prod-web',
  event: 'failed',
  revision: 'b'.repeat(40),
  result: 'failed',
  message: 'Deployment/apps/web: admission webhook refused it',
  subjects: [],
  time: '2026-11-25T03:00:00.000Z',
};
const TRACK: NotifiedTrack = {
  name: 'prod-web',
  repository: 'https://github.com/acme/web',
  wait: true,
};

describe('SNS and EventBridge receivers (moto server)', () => {
  let moto: MotoServer;
  let sqs: SQSClient;
  const saved = { ...process.env };

  before(async () => {
    moto = await startMoto();
    // The SDK reads its endpoint, region and credentials from the environment, as in Lambda.
    Object.assign(process.env, moto.env);
    sqs = new SQSClient({});
  });
  after(async () => {
    process.env = saved;
    await moto?.stop();
  });

  async function queue(name: string): Promise<{ url: string; arn: string }> {
    const { QueueUrl: url } = await sqs.send(new CreateQueueCommand({ QueueName: name }));
    const attributes = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }),
    );
    return { url: url!, arn: attributes.Attributes!.QueueArn! };
  }

  async function received(url: string): Promise<string[]> {
    const answer = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 2 }),
    );
    return (answer.Messages ?? []).map((message) => message.Body ?? '');
  }

  it('publishes the event to the topic, with track and event as message attributes', async () => {
    const sns = new SNSClient({});
    const { TopicArn } = await sns.send(new CreateTopicCommand({ Name: 'driftless-deploys' }));
    const subscriber = await queue('sns-subscriber');
    await sns.send(new SubscribeCommand({ TopicArn, Protocol: 'sqs', Endpoint: subscriber.arn }));
    const failures: string[] = [];
    const receivers = parseConfig(
      `notifications: [{name: deploys, type: sns, topicArn: "${TopicArn}"}]`,
      'driftless.yaml',
    ).notifications;

    await deliver(receivers, TRACK, [EVENT], {
      readSecret: () => assert.fail('an SNS receiver has no secret'),
      onFailure: (_name, _event, error) => failures.push(error),
    });

    assert.deepEqual(failures, []);
    const [body] = await received(subscriber.url);
    // An SQS subscription gets SNS's envelope; the event is its Message.
    const envelope = JSON.parse(body!) as {
      Subject: string;
      Message: string;
      MessageAttributes: Record<string, { Value: string }>;
    };
    assert.deepEqual(JSON.parse(envelope.Message), EVENT);
    assert.equal(envelope.Subject, 'driftless prod-web: failed');
    assert.equal(envelope.MessageAttributes.track?.Value, 'prod-web');
    assert.equal(envelope.MessageAttributes.event?.Value, 'failed');
  });

  it('puts the event on the bus, where a rule on source driftless routes it', async () => {
    const events = new EventBridgeClient({});
    await events.send(new CreateEventBusCommand({ Name: 'deploys' }));
    const target = await queue('bus-target');
    await events.send(
      new PutRuleCommand({
        Name: 'driftless-failures',
        EventBusName: 'deploys',
        EventPattern: JSON.stringify({ source: ['driftless'], 'detail-type': ['Track failed'] }),
      }),
    );
    await events.send(
      new PutTargetsCommand({
        Rule: 'driftless-failures',
        EventBusName: 'deploys',
        Targets: [{ Id: 'queue', Arn: target.arn }],
      }),
    );
    const failures: string[] = [];
    const receivers = parseConfig(
      'notifications: [{name: bus, type: eventbridge, eventBus: deploys}]',
      'driftless.yaml',
    ).notifications;

    await deliver(receivers, TRACK, [EVENT, { ...EVENT, event: 'applied', message: 'applied' }], {
      readSecret: () => assert.fail('an EventBridge receiver has no secret'),
      onFailure: (_name, _event, error) => failures.push(error),
    });

    assert.deepEqual(failures, []);
    const bodies = await received(target.url);
    // Only the failure matches the rule's detail-type.
    assert.equal(bodies.length, 1);
    const routed = JSON.parse(bodies[0]!) as {
      source: string;
      'detail-type': string;
      detail: unknown;
    };
    assert.equal(routed.source, 'driftless');
    assert.equal(routed['detail-type'], 'Track failed');
    assert.deepEqual(routed.detail, EVENT);
  });

  it('tells a drift of 10,000 objects on a topic and a bus, within their 256 KiB limits', async () => {
    // Prepare
    const sns = new SNSClient({});
    const { TopicArn } = await sns.send(new CreateTopicCommand({ Name: 'driftless-drift' }));
    const subscriber = await queue('sns-drift-subscriber');
    await sns.send(new SubscribeCommand({ TopicArn, Protocol: 'sqs', Endpoint: subscriber.arn }));
    const events = new EventBridgeClient({});
    const target = await queue('bus-drift-target');
    await events.send(
      new PutRuleCommand({
        Name: 'driftless-drift',
        EventPattern: JSON.stringify({ source: ['driftless'], 'detail-type': ['Track drifted'] }),
      }),
    );
    await events.send(
      new PutTargetsCommand({ Rule: 'driftless-drift', Targets: [{ Id: 'q', Arn: target.arn }] }),
    );
    const subjects = Array.from(
      { length: 10_000 },
      (_, i) => `Deployment/team-${i % 40}/service-${String(i).padStart(5, '0')}`,
    );
    const drifted: NotificationEvent = {
      ...EVENT,
      event: 'drifted',
      result: 'drifted',
      message: 'changed in the cluster',
      subjects,
    };
    const failures: string[] = [];
    const receivers = parseConfig(
      `notifications: [{name: deploys, type: sns, topicArn: "${TopicArn}"}, {name: bus, type: eventbridge}]`,
      'driftless.yaml',
    ).notifications;

    // Act
    await deliver(receivers, TRACK, [drifted], {
      readSecret: () => assert.fail('no secret'),
      onFailure: (name, _event, error) => failures.push(`${name}: ${error}`),
    });

    // Assess
    assert.deepEqual(failures, []);
    const [envelope] = await received(subscriber.url);
    const [routed] = await received(target.url);
    const told = [
      JSON.parse((JSON.parse(envelope!) as { Message: string }).Message),
      (JSON.parse(routed!) as { detail: unknown }).detail,
    ] as NotificationEvent[];
    for (const event of told) {
      assert.equal(event.event, 'drifted');
      assert.ok(event.subjects.length > 500, `${event.subjects.length} subjects kept`);
      assert.deepEqual(event.subjects, subjects.slice(0, event.subjects.length));
      assert.equal(event.subjectsOmitted, subjects.length - event.subjects.length);
    }
  });

  it('reports a topic that does not exist, and does not throw', async () => {
    const failures: string[] = [];
    const receivers = parseConfig(
      'notifications: [{name: gone, type: sns, topicArn: "arn:aws:sns:eu-west-1:123456789012:no-such-topic"}]',
      'driftless.yaml',
    ).notifications;
    await deliver(receivers, TRACK, [EVENT], {
      readSecret: () => assert.fail('no secret'),
      onFailure: (name, _event, error) => failures.push(`${name}: ${error}`),
    });
    assert.equal(failures.length, 1);
    assert.match(failures[0]!, /^gone: .*(not found|does not exist)/i);
  });
});
