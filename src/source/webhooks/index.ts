/**
 * Webhook receivers: verify a Git host's push delivery, parse it into push
 * events, and find the tracks it concerns. Pure logic: the HTTP server, the
 * Lambda handler and de-duplication store call it.
 */
export { WebhookPayloadError, WebhookSignatureError, WebhookTooLargeError } from './errors.ts';
export { matchTracks, type MatchableTrack } from './match-tracks.ts';
export { normaliseRepositoryUrl } from './normalise-repository-url.ts';
export { DEFAULT_MAX_BYTES } from './raw-body.ts';
export { receiveWebhook, type ReceiveOptions } from './receive-webhook.ts';
export type { PushEvent, WebhookOutcome, WebhookRequest } from './types.ts';
