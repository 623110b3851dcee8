/**
 * The SQS queues and SQS triggers serverless.yml declares, read from the file
 * itself (its CloudFormation resources and the functions' `sqs` events), so a
 * test creates its queues with the attributes a deployment gets instead of
 * numbers typed again: FIFO, de-duplication scope, visibility timeout,
 * retention, redrive policy (dead-letter queue and maxReceiveCount), and each
 * trigger's batch size, response type and maximum concurrency.
 */
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  type QueueAttributeName,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { readServerlessYml } from './serverless-yml.ts';

/** One `AWS::SQS::Queue` resource: its logical id, name and properties as declared. */
export interface DeclaredQueue {
  readonly logicalId: string;
  /** QueueName with `${self:service}` and `${sls:stage}` filled in. */
  readonly name: string;
  /** The other properties, as serverless.yml has them (RedrivePolicy still names its DLQ by logical id). */
  readonly properties: Readonly<Record<string, unknown>>;
  /** The logical id of the dead-letter queue its RedrivePolicy names. */
  readonly deadLetterQueue?: string;
  readonly maxReceiveCount?: number;
}

/** A function's `sqs` event: what Lambda's event source mapping is given. */
export interface DeclaredTrigger {
  /** The function's key in serverless.yml (`fetch`, `apply`). */
  readonly functionName: string;
  /** The logical id of the queue (`arn: !GetAtt <queue>.Arn`). */
  readonly queue: string;
  readonly batchSize: number;
  readonly functionResponseType?: string;
  /** `maximumConcurrency`, with `${param:...}` read from the default params; absent when not set. */
  readonly maximumConcurrency?: number;
}

export interface DeclaredQueues {
  readonly queues: readonly DeclaredQueue[];
  readonly triggers: readonly DeclaredTrigger[];
}

/** A queue created in an SQS endpoint from its declaration. */
export interface CreatedQueue {
  readonly declared: DeclaredQueue;
  readonly url: string;
  readonly arn: string;
  /** The attributes it was created with (strings, as SQS takes them). */
  readonly attributes: Readonly<Record<string, string>>;
}

interface ServerlessYml {
  service: string;
  params?: { default?: Record<string, unknown> };
  functions: Record<string, { events?: Record<string, unknown>[] }>;
  resources: (string | { Resources?: Record<string, { Type?: string; Properties?: unknown }> })[];
}

function getAttOf(value: unknown, attribute: string): string | undefined {
  const getAtt = (value as { 'Fn::GetAtt'?: unknown } | null)?.['Fn::GetAtt'];
  return Array.isArray(getAtt) && getAtt[1] === attribute ? String(getAtt[0]) : undefined;
}

/** `${self:service}`, `${sls:stage}` and `${param:x}` (default params); anything else is refused. */
function resolveVariables(text: string, yml: ServerlessYml, stage: string): string {
  return text.replace(/\$\{([^}]+)\}/g, (whole, name: string) => {
    if (name === 'self:service') return yml.service;
    if (name === 'sls:stage') return stage;
    const param = /^param:(\w+)$/.exec(name)?.[1];
    const value = param === undefined ? undefined : yml.params?.default?.[param];
    if (value === undefined) throw new Error(`serverless.yml: cannot resolve ${whole} here`);
    return String(value);
  });
}

/** Reads the queues and SQS triggers of serverless.yml for `stage`. */
export async function readDeclaredQueues(stage: string): Promise<DeclaredQueues> {
  const yml = await readServerlessYml<ServerlessYml>();
  const queues: DeclaredQueue[] = [];
  for (const block of yml.resources) {
    if (typeof block === 'string') continue;
    for (const [logicalId, resource] of Object.entries(block.Resources ?? {})) {
      if (resource.Type !== 'AWS::SQS::Queue') continue;
      const { QueueName, RedrivePolicy, ...properties } = resource.Properties as Record<
        string,
        unknown
      >;
      const redrive = RedrivePolicy as
        { deadLetterTargetArn?: unknown; maxReceiveCount?: number } | undefined;
      const deadLetterQueue = getAttOf(redrive?.deadLetterTargetArn, 'Arn');
      queues.push({
        logicalId,
        name: resolveVariables(String(QueueName), yml, stage),
        properties,
        ...(deadLetterQueue === undefined
          ? {}
          : { deadLetterQueue, maxReceiveCount: Number(redrive?.maxReceiveCount) }),
      });
    }
  }
  const triggers: DeclaredTrigger[] = [];
  for (const [functionName, definition] of Object.entries(yml.functions)) {
    for (const event of definition.events ?? []) {
      const sqs = event.sqs as Record<string, unknown> | undefined;
      if (sqs === undefined) continue;
      const queue = getAttOf(sqs.arn, 'Arn');
      if (queue === undefined) throw new Error(`serverless.yml: ${functionName}'s sqs arn`);
      const concurrency = sqs.maximumConcurrency;
      triggers.push({
        functionName,
        queue,
        // Lambda's default for SQS triggers.
        batchSize: Number(sqs.batchSize ?? 10),
        ...(typeof sqs.functionResponseType === 'string'
          ? { functionResponseType: sqs.functionResponseType }
          : {}),
        ...(concurrency === undefined
          ? {}
          : { maximumConcurrency: Number(resolveVariables(String(concurrency), yml, stage)) }),
      });
    }
  }
  return { queues, triggers };
}

/**
 * Creates every declared queue (dead-letter queues first, so a RedrivePolicy
 * can name its queue's ARN), with its declared properties as SQS attributes.
 * `overrides` replaces attributes by queue logical id — a test states each one.
 */
export async function createDeclaredQueues(
  client: SQSClient,
  declared: DeclaredQueues,
  overrides: Readonly<Record<string, Readonly<Record<string, string>>>> = {},
): Promise<Map<string, CreatedQueue>> {
  const created = new Map<string, CreatedQueue>();
  const pending = [...declared.queues];
  while (pending.length > 0) {
    const index = pending.findIndex(
      (queue) => queue.deadLetterQueue === undefined || created.has(queue.deadLetterQueue),
    );
    if (index < 0) throw new Error('serverless.yml: a RedrivePolicy names no declared queue');
    const [queue] = pending.splice(index, 1) as [DeclaredQueue];
    const attributes: Record<string, string> = Object.fromEntries(
      Object.entries(queue.properties).map(([name, value]) => [name, String(value)]),
    );
    if (queue.deadLetterQueue !== undefined) {
      attributes.RedrivePolicy = JSON.stringify({
        deadLetterTargetArn: created.get(queue.deadLetterQueue)?.arn,
        maxReceiveCount: queue.maxReceiveCount,
      });
    }
    Object.assign(attributes, overrides[queue.logicalId]);
    const { QueueUrl: url } = await client.send(
      new CreateQueueCommand({ QueueName: queue.name, Attributes: attributes }),
    );
    if (url === undefined) throw new Error(`no URL for queue ${queue.name}`);
    const { Attributes } = await client.send(
      new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }),
    );
    const arn = Attributes?.QueueArn;
    if (arn === undefined) throw new Error(`no ARN for queue ${queue.name}`);
    created.set(queue.logicalId, { declared: queue, url, arn, attributes });
  }
  return created;
}

/** The queue's current attributes, e.g. to check what the endpoint made of the declared ones. */
export async function queueAttributes(
  client: SQSClient,
  url: string,
  names: QueueAttributeName[] = ['All'],
): Promise<Record<string, string>> {
  const { Attributes } = await client.send(
    new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: names }),
  );
  return Attributes ?? {};
}
