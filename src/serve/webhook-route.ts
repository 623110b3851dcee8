/**
 * `POST /webhook/<provider>`: verify the delivery, drop repeats, queue a
 * fetch job per matching track, answer. Everything slow (fetch, render,
 * apply) happens after the answer, on the queue: hosts wait 10 s at most.
 */
import type { Track, WebhookHost } from '../config/types.ts';
import {
  matchTracks,
  receiveWebhook,
  type WebhookOutcome,
  type WebhookRequest,
} from '../source/webhooks/index.ts';
import type { DeliveryLog } from '../store/ports.ts';
import type { FetchJob } from '../sync/jobs.ts';
import type { Logger } from '../logger.ts';
import type { JobContext } from './track-queue.ts';

export const WEBHOOK_HOSTS: readonly WebhookHost[] = [
  'github',
  'gitlab',
  'gitea',
  'bitbucket',
  'generic',
];

export function isWebhookHost(name: string): name is WebhookHost {
  return (WEBHOOK_HOSTS as readonly string[]).includes(name);
}

export interface WebhookRouteDeps {
  /** Resolved signing secrets per configured host; a host without an entry is not served. */
  readonly secrets: Partial<Record<WebhookHost, readonly string[]>>;
  readonly deliveries: DeliveryLog;
  readonly tracks: readonly Track[];
  /** Whether jobs are still taken (false while shutting down). */
  readonly accepting: () => boolean;
  readonly enqueue: (job: FetchJob, context: JobContext) => Promise<void>;
  readonly logger: Logger;
  readonly maxBytes: number;
  readonly now?: () => number;
}

/** The HTTP answer: a status and a JSON body for people and hosts' delivery logs. */
export interface WebhookAnswer {
  readonly status: number;
  readonly body: Readonly<Record<string, unknown>>;
}

/**
 * Handles one delivery to `provider`. Nothing is read from the body and
 * nothing is recorded before the signature is verified.
 */
export async function handleWebhook(
  provider: string,
  request: WebhookRequest,
  deps: WebhookRouteDeps,
): Promise<WebhookAnswer> {
  const receivedAt = (deps.now ?? Date.now)();
  const secrets = isWebhookHost(provider) ? deps.secrets[provider] : undefined;
  if (!isWebhookHost(provider) || secrets === undefined) {
    return { status: 404, body: { error: `no webhook is configured for "${provider}"` } };
  }
  if (!deps.accepting()) {
    // Before marking the delivery: the host retries a 503, and the retry must not look like a repeat.
    return { status: 503, body: { error: 'shutting down' } };
  }
  const outcome: WebhookOutcome = await receiveWebhook(provider, request, secrets, {
    maxBytes: deps.maxBytes,
  });
  const log = deps.logger.child({ provider, deliveryId: outcome.deliveryId });
  if (outcome.kind === 'rejected') {
    log.warn('webhook rejected', {
      status: outcome.status,
      code: outcome.code,
      reason: outcome.reason,
    });
    return { status: outcome.status, body: { error: outcome.reason } };
  }
  if (outcome.kind !== 'push' || outcome.deliveryId === undefined) {
    log.info('webhook answered', {
      status: outcome.status,
      kind: outcome.kind,
      reason: outcome.reason,
    });
    return { status: outcome.status, body: { kind: outcome.kind, reason: outcome.reason } };
  }
  const deliveryId = outcome.deliveryId;
  if (!(await deps.deliveries.markDelivery(deliveryId))) {
    log.info('webhook delivery seen before; ignored');
    return { status: 202, body: { kind: 'duplicate', deliveryId, reason: 'delivery seen before' } };
  }
  const queued: string[] = [];
  for (const event of outcome.events ?? []) {
    for (const track of matchTracks(event, deps.tracks)) {
      // Several refs of one delivery may match one track: one fetch resolves it.
      if (queued.includes(track)) continue;
      await deps.enqueue(
        {
          type: 'fetch',
          track,
          trigger: 'webhook',
          hint: { revision: event.after, ref: event.ref },
          deliveryId,
        },
        { receivedAt },
      );
      queued.push(track);
      log.info('fetch queued', { track, ref: event.ref, hint: event.after });
    }
  }
  if (queued.length === 0) log.info('push matches no track', { reason: outcome.reason });
  return {
    status: 202,
    body: { kind: 'push', deliveryId, reason: outcome.reason, tracks: queued },
  };
}
