/**
 * A webhook delivery, from request to queued fetch jobs: verify (401 and
 * nothing else on a bad signature), record the delivery id once (a
 * redelivery answers 202 and queues nothing), match tracks, queue one fetch
 * job per track with the pushed sha as a hint. It writes nothing but the
 * delivery marker: fetching, rendering and storing happen in `fetch`.
 *
 * The marker is written before the jobs are queued: if queueing then fails
 * the host's retry is taken for a duplicate, and the track's scheduled ref
 * poll catches the push up within its interval. The other order could queue
 * a delivery twice, which is harmless but makes the marker pointless.
 */
import type { Config, WebhookHost } from '../config/types.ts';
import { matchTracks, receiveWebhook, type WebhookRequest } from '../source/webhooks/index.ts';
import type { DeliveryLog } from '../store/ports.ts';
import type { FetchJob, JobQueue } from '../sync/jobs.ts';
import type { SecretReader } from './secrets.ts';

const HOSTS: readonly WebhookHost[] = ['github', 'gitlab', 'gitea', 'bitbucket', 'generic'];

export interface AcceptWebhookDeps {
  readonly config: Pick<Config, 'webhooks' | 'tracks'>;
  readonly readSecret: SecretReader;
  readonly deliveries: DeliveryLog;
  readonly queue: JobQueue;
  /** Largest body accepted, in bytes; default that of receiveWebhook (1 MiB). */
  readonly maxBytes?: number;
}

/** What to answer the Git host, and what was done. Never holds a secret. */
export interface WebhookAnswer {
  readonly status: 200 | 202 | 400 | 401 | 404 | 413;
  readonly kind: 'ping' | 'push' | 'ignored' | 'rejected' | 'duplicate' | 'unknown-provider';
  readonly reason: string;
  readonly deliveryId?: string;
  /** Tracks a fetch job was queued for. */
  readonly tracks?: readonly string[];
}

function isHost(provider: string): provider is WebhookHost {
  return (HOSTS as readonly string[]).includes(provider);
}

/** Handles one delivery for `provider` (the `{provider}` of `POST /webhook/{provider}`). */
export async function acceptWebhook(
  provider: string,
  request: WebhookRequest,
  deps: AcceptWebhookDeps,
): Promise<WebhookAnswer> {
  const webhook = isHost(provider) ? deps.config.webhooks[provider] : undefined;
  if (!isHost(provider) || webhook === undefined) {
    // Same answer for unknown and unconfigured: no hint which hosts are set up.
    return { status: 404, kind: 'unknown-provider', reason: 'no webhook is configured here' };
  }
  const secrets = await Promise.all(webhook.secrets.map((ref) => deps.readSecret(ref)));
  const outcome = await receiveWebhook(provider, request, secrets, {
    ...(deps.maxBytes === undefined ? {} : { maxBytes: deps.maxBytes }),
  });
  const deliveryId = outcome.deliveryId;
  const base = { reason: outcome.reason, ...(deliveryId === undefined ? {} : { deliveryId }) };
  if (outcome.kind !== 'push' || deliveryId === undefined) {
    return { status: outcome.status, kind: outcome.kind, ...base };
  }

  if (!(await deps.deliveries.markDelivery(deliveryId))) {
    return { status: 202, kind: 'duplicate', ...base, reason: 'delivery already received' };
  }

  // One job per track, the first matching ref's sha as its hint: the fetch resolves the ref anyway.
  const jobs = new Map<string, FetchJob>();
  for (const event of outcome.events ?? []) {
    for (const track of matchTracks(event, deps.config.tracks)) {
      if (!jobs.has(track)) {
        jobs.set(track, {
          type: 'fetch',
          track,
          trigger: 'webhook',
          hint: { revision: event.after, ref: event.ref },
          deliveryId,
        });
      }
    }
  }
  await Promise.all([...jobs.values()].map((job) => deps.queue.enqueue(job)));
  return { status: 202, kind: 'push', ...base, tracks: [...jobs.keys()] };
}
