/**
 * API Gateway HTTP API (payload 2.0) in and out for the webhook function.
 */
import type { WebhookRequest } from '../source/webhooks/index.ts';
import type { HttpApiEvent, HttpApiResult } from './lambda-events.ts';

/** The raw delivery: the body exactly as received (maybe base64), for the signature check. */
export function webhookRequestOf(event: HttpApiEvent): WebhookRequest {
  return {
    headers: event.headers ?? {},
    body: event.body ?? '',
    isBase64Encoded: event.isBase64Encoded === true,
  };
}

/** The `{provider}` path parameter, or `''`. */
export function providerOf(event: HttpApiEvent): string {
  return event.pathParameters?.provider ?? '';
}

/** A JSON response. */
export function jsonResult(statusCode: number, body: unknown): HttpApiResult {
  return {
    statusCode,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  };
}
