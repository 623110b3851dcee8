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

/** The fields of Lambda's context object the handlers read. */
export interface LambdaContext {
  /** Milliseconds left before Lambda stops the invocation (its configured timeout). */
  getRemainingTimeInMillis(): number;
  /** The invocation's id, the same in each retry of an asynchronous invocation (job-origin.ts). */
  readonly awsRequestId?: string;
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
  /** The path as requested, with the stage's prefix when the stage is not `$default`. */
  readonly rawPath?: string;
  /** The query string without `?`; '' when none. */
  readonly rawQueryString?: string;
  /** Lower-case names; repeated headers joined with commas. */
  readonly headers?: Readonly<Record<string, string | undefined>>;
  /** The `Cookie` header's cookies, which payload 2.0 moves out of `headers`. */
  readonly cookies?: readonly string[];
  readonly body?: string;
  readonly isBase64Encoded?: boolean;
  readonly pathParameters?: Readonly<Record<string, string | undefined>>;
  readonly requestContext?: {
    readonly requestId?: string;
    /** `$default`, or the stage's name, which then prefixes `rawPath`. */
    readonly stage?: string;
    readonly domainName?: string;
    readonly http?: { readonly method?: string; readonly path?: string };
    /** Set by the route's authorizer, when the route has one; never by the client. */
    readonly authorizer?: HttpApiAuthorizerContext;
  };
}

/** What the route's authorizer established (API Gateway checked it before the function ran). */
export interface HttpApiAuthorizerContext {
  /** `authorizer: {type: aws_iam}`: the SigV4 signer. */
  readonly iam?: {
    readonly userArn?: string;
    readonly userId?: string;
    readonly accountId?: string;
  };
  /** A JWT authorizer: the token's claims (API Gateway passes every value as a string). */
  readonly jwt?: {
    readonly claims?: Readonly<Record<string, string | number | boolean | undefined>>;
    readonly scopes?: readonly string[] | null;
  };
}

/** An API Gateway HTTP API (payload format 2.0) response. */
export interface HttpApiResult {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
  /** Whether `body` is base64 (binary); text when absent. */
  isBase64Encoded?: boolean;
}

/** An EventBridge schedule event; only its time is read. */
export interface ScheduleEvent {
  readonly time?: string;
}
