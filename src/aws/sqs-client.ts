import { SQSClient } from '@aws-sdk/client-sqs';

let client: SQSClient | undefined;

/** One SQS client per container, so warm invocations reuse its connections. Region from the runtime. */
export function sqsClient(): SQSClient {
  client ??= new SQSClient({});
  return client;
}
