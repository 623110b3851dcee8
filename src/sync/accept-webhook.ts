/**
 * A webhook delivery, from request to queued fetch jobs — the one use-case
 * behind `POST /webhook/<host>` in `driftless serve` and in the webhook
 * function: verify (401 and nothing else on a bad signature), skip a
 * delivery id marked before (a redelivery answers 202 and queues nothing),
 * match tracks, queue one fetch job per track with the pushed sha as a hint,
 * then mark the delivery id. It writes nothing but the delivery marker:
 * fetching, rendering and storing happen in the fetch job.
 *
 * The marker is written after the jobs are queued, so no push is lost to it:
 * a delivery whose jobs were not queued (the queue unreachable, or the
 * process killed half-way, as a function at its timeout) is not marked, and
 * the host's retry queues them. The price is a fetch queued twice when two
 * attempts of one delivery overlap, or one dies between queueing and
 * marking: harmless, the second fetch finds the revision stored. (Marking
 * first, as this did before, left such a push to the track's next poll.)
 */
import { isWebhookHost, type Track, type WebhookHost } from '../config/types.ts';
import { matchTracks, receiveWebhook, type WebhookRequest } from '../source/webhooks/index.ts';
import type { DeliveryLog } from '../store/ports.ts';
import type { FetchJob, JobQueue } from './jobs.ts';

/** What a delivery came to; the `kind` of every webhook answer, wherever it is served. */
export type WebhookAnswerKind =
  | 'push'
  | 'ping'
  | 'ignored'
  | 'duplicate'
  | 'rejected'
  | 'unknown-provider'
  | 'unavailable'
  | 'error';

/** The JSON body of every webhook answer (serve and Lambda alike). Never holds a secret. */
export interface WebhookAnswerBody {
  readonly kind: WebhookAnswerKind;
  /** For people reading the host's delivery log: what happened, or why not. */
  readonly reason: string;
  readonly deliveryId?: string;
  /** Tracks a fetch job was queued for (pushes only). */
  readonly tracks?: readonly string[];
}

/** An HTTP status and the body to answer it with. */
export interface WebhookAnswer {
  readonly status: number;
  readonly body: WebhookAnswerBody;
}

export interface AcceptWebhookDeps {
  /**
   * The tracks pushes are matched with, or how to read them (the webhook function reads the
   * published ones from its store): read only for a verified push not delivered before.
   */
  readonly tracks: readonly Track[] | (() => Promise<readonly Track[]>);
  /** The signing secrets of a configured host; undefined when the host is not configured. */
  readonly secretsOf: (host: WebhookHost) => Promise<readonly string[] | undefined>;
  readonly deliveries: DeliveryLog;
  /** Where the fetch jobs go. */
  readonly queue: JobQueue;
  /** Largest body accepted, in bytes; default that of receiveWebhook (1 MiB). */
  readonly maxBytes?: number;
  /** False while the process shuts down: the delivery is answered 503 before anything is recorded. */
  readonly accepting?: () => boolean;
}

/**
 * What the delivery log records for a delivery: its id within its host. Hosts
 * choose ids independently (GitHub and Gitea UUIDs, GitLab's idempotency key,
 * Bitbucket's request UUID, whatever a generic sender puts in its header),
 * so an id one host sent must not make another host's delivery a repeat.
 */
export function deliveryMarker(provider: string, deliveryId: string): string {
  return `${provider}:${deliveryId}`;
}

/** Handles one delivery for `provider` (the `<host>` of `POST /webhook/<host>`). */
export async function acceptWebhook(
  provider: string,
  request: WebhookRequest,
  deps: AcceptWebhookDeps,
): Promise<WebhookAnswer> {
  const secrets = isWebhookHost(provider) ? await deps.secretsOf(provider) : undefined;
  if (!isWebhookHost(provider) || secrets === undefined) {
    // Same answer for unknown and unconfigured: no hint which hosts are set up.
    return answer(404, 'unknown-provider', 'no webhook is configured here');
  }
  if (deps.accepting?.() === false) {
    // Before marking the delivery: the host retries a 503, and the retry must not look like a repeat.
    return answer(503, 'unavailable', 'shutting down; deliver again later');
  }
  const outcome = await receiveWebhook(provider, request, secrets, {
    ...(deps.maxBytes === undefined ? {} : { maxBytes: deps.maxBytes }),
  });
  const { deliveryId } = outcome;
  if (outcome.kind !== 'push' || deliveryId === undefined) {
    return answer(outcome.status, outcome.kind, outcome.reason, deliveryId);
  }
  const marker = deliveryMarker(provider, deliveryId);
  if (await deps.deliveries.isDelivered(marker)) {
    return answer(202, 'duplicate', 'delivery already received', deliveryId);
  }

  // One job per track, the first matching ref's sha as its hint: the fetch resolves the ref anyway.
  const tracks = typeof deps.tracks === 'function' ? await deps.tracks() : deps.tracks;
  const jobs = new Map<string, FetchJob>();
  for (const event of outcome.events ?? []) {
    for (const track of matchTracks(event, tracks)) {
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
  // The push is taken once its jobs are queued: a mark that cannot be written only means a
  // redelivery is queued once more. The answer (which hosts show, and our log line keeps)
  // says so, so that a store failing every time does not go unseen.
  const recorded = await deps.deliveries.markDelivery(marker).then(
    () => true,
    () => false,
  );
  const reason = recorded
    ? outcome.reason
    : `${outcome.reason}; the delivery id could not be recorded: a redelivery is queued again`;
  return {
    status: 202,
    body: { kind: 'push', reason, deliveryId, tracks: [...jobs.keys()] },
  };
}

function answer(
  status: number,
  kind: WebhookAnswerKind,
  reason: string,
  deliveryId?: string,
): WebhookAnswer {
  return { status, body: { kind, reason, ...(deliveryId === undefined ? {} : { deliveryId }) } };
}
