/**
 * Errors of the webhook receivers. `receiveWebhook` turns each into an HTTP
 * status in one place; nothing else decides a status.
 */
import { DriftlessError } from '../../errors.ts';

/** The signature (or GitLab token) is missing, or no configured secret produces it. HTTP 401. */
export class WebhookSignatureError extends DriftlessError {
  readonly code = 'WEBHOOK_SIGNATURE';
}

/** The body is larger than the configured limit; it was not verified. HTTP 413. */
export class WebhookTooLargeError extends DriftlessError {
  readonly code = 'WEBHOOK_TOO_LARGE';
}

/** A correctly signed delivery that is not valid JSON or lacks a field a push needs. HTTP 400. */
export class WebhookPayloadError extends DriftlessError {
  readonly code = 'WEBHOOK_PAYLOAD_INVALID';
}
