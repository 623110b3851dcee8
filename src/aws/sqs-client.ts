import { SQSClient } from '@aws-sdk/client-sqs';
import { AWS_REQUEST_TIMEOUTS } from '../aws-request-timeouts.ts';

let client: SQSClient | undefined;

/** One SQS client per container, so warm invocations reuse its connections. Region from the runtime. */
export function sqsClient(): SQSClient {
  client ??= new SQSClient({ requestHandler: { ...AWS_REQUEST_TIMEOUTS } });
  return client;
}
