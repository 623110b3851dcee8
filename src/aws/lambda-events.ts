/**
 * The few fields of Lambda events the handlers read. Declared here rather
 * than taken from @types/aws-lambda: the handlers validate what they read,
 * and these say exactly which fields that is.
 */

/** One message of an SQS event. */
export interface SqsRecord {
  readonly messageId: string;
  readonly body: string;
  readonly attributes?: { readonly MessageGroupId?: string; readonly [name: string]: unknown };
  /** The message attributes the sender set (webhook-arrival.ts reads one). */
  readonly messageAttributes?: Readonly<
    Record<string, { readonly stringValue?: string; readonly dataType?: string } | undefined>
  >;
  readonly eventSourceARN?: string;
}

/** What SQS hands a function (event source mapping). */
export interface SqsEvent {
  readonly Records: readonly SqsRecord[];
}

/** The answer that retries only the failed messages (`ReportBatchItemFailures`). */
export interface SqsBatchResponse {
  batchItemFailures: { itemIdentifier: string }[];
}

/** An API Gateway HTTP API (payload format 2.0) request. */
export interface HttpApiEvent {
  readonly headers?: Readonly<Record<string, string | undefined>>;
  readonly body?: string;
  readonly isBase64Encoded?: boolean;
  readonly pathParameters?: Readonly<Record<string, string | undefined>>;
  readonly requestContext?: {
    readonly requestId?: string;
    readonly http?: { readonly method?: string };
  };
}

/** An API Gateway HTTP API (payload format 2.0) response. */
export interface HttpApiResult {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
}

/** An EventBridge schedule event; only its time is read. */
export interface ScheduleEvent {
  readonly time?: string;
}
