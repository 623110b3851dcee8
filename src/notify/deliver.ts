/**
 * Sending events to the `notifications` receivers: Slack and Microsoft Teams
 * incoming webhooks in their own message formats, and a generic webhook
 * (the event as JSON, signed `X-Driftless-Signature: sha256=<hex HMAC>` when
 * a secret is given, as the webhooks we receive are). Best effort and
 * bounded: a receiver gets two tries of at most {@link ATTEMPT_TIMEOUT_MS}
 * each, and a failure is reported, never thrown — a receiver that is down
 * must not fail or hold up a sync.
 */
import { createHmac } from 'node:crypto';
import type { Notification } from '../config/types.ts';
import type { SecretRef } from '../config/secret-ref.ts';
import { globMatches } from '../glob.ts';
import type { NotificationEvent } from './events.ts';

/** One try's limit. */
export const ATTEMPT_TIMEOUT_MS = 3_000;
const ATTEMPTS = 2;
const RETRY_DELAY_MS = 250;

export interface DeliverDeps {
  readonly readSecret: (ref: SecretRef) => Promise<string>;
  /** Default: the global fetch. */
  readonly fetch?: typeof fetch;
  /** One try's limit; default {@link ATTEMPT_TIMEOUT_MS}. */
  readonly attemptTimeoutMs?: number;
  /** Told about each delivery that failed after its tries (for the log). */
  readonly onFailure?: (receiver: string, event: NotificationEvent, error: string) => void;
}

/** Whether `receiver` wants `event`: its track globs and event list. */
export function wants(receiver: Notification, event: NotificationEvent): boolean {
  return (
    receiver.tracks.some((pattern) => globMatches(pattern, event.track)) &&
    (receiver.events === undefined || receiver.events.includes(event.event))
  );
}

/** Sends each event to every receiver that wants it; resolves when all are done. */
export async function deliver(
  receivers: readonly Notification[],
  events: readonly NotificationEvent[],
  deps: DeliverDeps,
): Promise<void> {
  await Promise.all(
    receivers.flatMap((receiver) =>
      events
        .filter((event) => wants(receiver, event))
        .map((event) => deliverOne(receiver, event, deps)),
    ),
  );
}

async function deliverOne(
  receiver: Notification,
  event: NotificationEvent,
  deps: DeliverDeps,
): Promise<void> {
  const send = deps.fetch ?? fetch;
  let problem = '';
  try {
    const url = (await deps.readSecret(receiver.url)).trim();
    const body = JSON.stringify(payloadFor(receiver.type, event));
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (receiver.secret !== undefined) {
      const key = await deps.readSecret(receiver.secret);
      headers['x-driftless-signature'] =
        `sha256=${createHmac('sha256', key).update(body).digest('hex')}`;
    }
    for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
      try {
        const response = await send(url, {
          method: 'POST',
          headers,
          body,
          signal: AbortSignal.timeout(deps.attemptTimeoutMs ?? ATTEMPT_TIMEOUT_MS),
        });
        await response.arrayBuffer().catch(() => undefined);
        if (response.ok) return;
        problem = `HTTP ${response.status}`;
        // A refusal (4xx but 429) will not change on a retry.
        if (response.status < 500 && response.status !== 429) break;
      } catch (error) {
        // The message of fetch's errors never holds the URL, which is a secret.
        problem = error instanceof Error ? error.name : 'the request failed';
      }
      if (attempt < ATTEMPTS) await new Promise((r) => setTimeout(r, RETRY_DELAY_MS));
    }
  } catch (error) {
    problem = error instanceof Error ? error.message : String(error);
  }
  deps.onFailure?.(receiver.name, event, problem);
}

/** The body each receiver type expects. */
export function payloadFor(type: Notification['type'], event: NotificationEvent): unknown {
  const revision = event.revision === null ? '' : ` at ${event.revision.slice(0, 12)}`;
  const subjects =
    event.subjects.length === 0 ? '' : `\n${event.subjects.map((s) => `• ${s}`).join('\n')}`;
  const text = `${event.track}: ${event.event}${revision}: ${event.message}${subjects}`;
  switch (type) {
    case 'webhook':
      return event;
    case 'slack':
      // Slack incoming webhooks: `text` is shown, and used for notifications.
      return { text: `*${event.track}*: ${event.event}${revision}: ${event.message}${subjects}` };
    case 'msteams':
      // Teams incoming webhooks take the (legacy) MessageCard.
      return {
        '@type': 'MessageCard',
        '@context': 'https://schema.org/extensions',
        summary: `${event.track}: ${event.event}`,
        themeColor: FAILING.has(event.event) ? 'D70000' : '2EB886',
        title: `${event.track}: ${event.event}${revision}`,
        text: text.replace(/\n/g, '<br>'),
      };
  }
}

const FAILING = new Set(['failed', 'degraded', 'drifted']);
