/**
 * The one entry point of webhook deliveries, shared by the local server and
 * the Lambda handler, and the one place where failures become HTTP statuses.
 */
import type { WebhookHost } from '../../config/types.ts';
import { DriftlessError } from '../../errors.ts';
import { bitbucketReceiver } from './bitbucket.ts';
import { deliveryIdOf } from './delivery-id.ts';
import { WebhookPayloadError, WebhookSignatureError, WebhookTooLargeError } from './errors.ts';
import { genericReceiver } from './generic.ts';
import { giteaReceiver } from './gitea.ts';
import { githubReceiver } from './github.ts';
import { gitlabReceiver } from './gitlab.ts';
import { DEFAULT_MAX_BYTES, rawBody } from './raw-body.ts';
import type { HostReceiver, WebhookOutcome, WebhookRequest } from './types.ts';

const RECEIVERS: Readonly<Record<WebhookHost, HostReceiver>> = {
  github: githubReceiver,
  gitlab: gitlabReceiver,
  gitea: giteaReceiver,
  bitbucket: bitbucketReceiver,
  generic: genericReceiver,
};

export interface ReceiveOptions {
  /** Largest body accepted, in bytes (after base64 decoding); default 1 MiB. */
  readonly maxBytes?: number;
}

/**
 * Verifies a delivery from `host` against `secrets` (any one may sign it,
 * so a secret can be rotated without downtime), then parses it.
 *
 * In order: the size limit (413), the signature over the raw bytes (401; the
 * body is not parsed, so nothing in an unsigned body is ever read), then the
 * payload (400 when malformed). Pings answer 200, pushes 202 with their
 * events (work happens asynchronously), anything else 202 `ignored` with the
 * reason — a 2xx, so hosts do not retry or disable the hook.
 *
 * Never throws for a bad delivery; an unexpected exception (a bug) propagates.
 */
export async function receiveWebhook(
  host: WebhookHost,
  request: WebhookRequest,
  secrets: readonly string[],
  options: ReceiveOptions = {},
): Promise<WebhookOutcome> {
  const receiver = RECEIVERS[host];
  let deliveryId: string | undefined;
  try {
    const headers = lowerCaseHeaders(request.headers);
    const body = rawBody(
      request.body,
      request.isBase64Encoded,
      options.maxBytes ?? DEFAULT_MAX_BYTES,
    );
    // An empty secret would make every HMAC computable by anyone: it counts as no secret.
    await receiver.verify(
      headers,
      body,
      secrets.filter((secret) => secret !== ''),
    );
    deliveryId = deliveryIdOf(host, headers, receiver.deliveryHeaders, body);
    const parsed = receiver.parse({ headers, text: body.toString('utf8'), deliveryId });
    switch (parsed.kind) {
      case 'ping':
        return { status: 200, kind: 'ping', reason: parsed.reason, deliveryId };
      case 'ignored':
        return { status: 202, kind: 'ignored', reason: parsed.reason, deliveryId };
      case 'push': {
        const refs = parsed.events.map((event) => event.ref).join(', ');
        return {
          status: 202,
          kind: 'push',
          reason: `push to ${refs}`,
          event: parsed.events[0],
          events: parsed.events,
          deliveryId,
        };
      }
    }
  } catch (error) {
    const status = statusOf(error);
    if (status === undefined || !(error instanceof DriftlessError)) throw error;
    return { status, kind: 'rejected', reason: error.message, code: error.code, deliveryId };
  }
}

function statusOf(error: unknown): 400 | 401 | 413 | undefined {
  if (error instanceof WebhookSignatureError) return 401;
  if (error instanceof WebhookTooLargeError) return 413;
  if (error instanceof WebhookPayloadError) return 400;
  return undefined;
}

/** API Gateway v1 and some proxies keep the sender's header case. */
function lowerCaseHeaders(
  headers: Readonly<Record<string, string | undefined>>,
): Record<string, string | undefined> {
  const lower: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) lower[name.toLowerCase()] = value;
  }
  return lower;
}
