/**
 * Sending events to the `notifications` receivers: Slack and Microsoft Teams
 * incoming webhooks in their own message formats, a generic webhook (the
 * event as JSON, signed `X-Driftless-Signature: sha256=<hex HMAC>` when a
 * secret is given, as the webhooks we receive are), commit statuses on the
 * track's Git host (commit-status.ts), an SNS topic and an EventBridge bus
 * (aws-receivers.ts). Best effort and bounded: a receiver gets two tries of
 * at most {@link ATTEMPT_TIMEOUT_MS} each, and a failure is reported, never
 * thrown — a receiver that is down must not fail or hold up a sync.
 */
import { createHmac } from 'node:crypto';
import type { Notification, Track } from '../config/types.ts';
import type { SecretRef } from '../config/secret-ref.ts';
import { globMatches } from '../glob.ts';
import type { Logger } from '../logger.ts';
import { awsReceivers, type AwsReceivers } from './aws-receivers.ts';
import {
  commitStatusOf,
  commitStatusRequest,
  commitStatusTarget,
  type HttpRequest,
} from './commit-status.ts';
import { boundedEvent, type NotificationEvent } from './events.ts';

/** One try's limit. */
export const ATTEMPT_TIMEOUT_MS = 3_000;
const ATTEMPTS = 2;
const RETRY_DELAY_MS = 250;

/** The track fields receivers use: its name, where its repository is, whether it waits for health. */
export type NotifiedTrack = Pick<Track, 'name' | 'repository' | 'bucket' | 'wait'>;

export interface DeliverDeps {
  readonly readSecret: (ref: SecretRef) => Promise<string>;
  /** Default: the global fetch. */
  readonly fetch?: typeof fetch;
  /** One try's limit; default {@link ATTEMPT_TIMEOUT_MS}. */
  readonly attemptTimeoutMs?: number;
  /** Told about each delivery that failed after its tries (for the log). */
  readonly onFailure?: (receiver: string, event: NotificationEvent, error: string) => void;
  /** The dashboard's address (`dashboard.url`): commit statuses link to the track there. */
  readonly dashboardUrl?: string;
  /** SNS and EventBridge; default: the AWS SDK with this process's credentials. */
  readonly aws?: AwsReceivers;
}

/** An `onFailure` that logs each undelivered event as a warning (what, never the URL). */
export function logUndelivered(log: Logger): NonNullable<DeliverDeps['onFailure']> {
  return (receiver, event, error) =>
    log.warn('notification not delivered', {
      receiver,
      track: event.track,
      event: event.event,
      error,
    });
}

/** Whether `receiver` wants `event`: its track globs and event list. */
export function wants(receiver: Notification, event: NotificationEvent): boolean {
  return (
    receiver.tracks.some((pattern) => globMatches(pattern, event.track)) &&
    (receiver.events === undefined || receiver.events.includes(event.event))
  );
}

/** Whether the receiver needs Git credentials: only the step that holds them may send to it. */
export function needsGitCredentials(receiver: Notification): boolean {
  return receiver.type === 'commitStatus';
}

/**
 * Sends the events of a job to the receivers that want them. `forward`, when
 * given, takes the events meant for receivers that need Git credentials,
 * which this process does not hold (the apply function queues them to fetch).
 */
export type Notify = (
  track: NotifiedTrack,
  events: readonly NotificationEvent[],
  /** Only these receivers (by name): a forwarded delivery. */
  only?: readonly string[],
) => Promise<void>;

export interface NotifierOptions extends DeliverDeps {
  readonly forward?: (
    track: NotifiedTrack,
    events: readonly NotificationEvent[],
    receivers: readonly string[],
  ) => Promise<void>;
}

/** A {@link Notify} over the configured receivers. */
export function notifier(receivers: readonly Notification[], options: NotifierOptions): Notify {
  let aws = options.aws;
  const deps: DeliverDeps = {
    ...options,
    // Made on first use: most configs have no AWS receiver.
    get aws() {
      aws ??= awsReceivers(options.attemptTimeoutMs ?? ATTEMPT_TIMEOUT_MS);
      return aws;
    },
  };
  return async (track, events, only) => {
    const chosen = only === undefined ? receivers : receivers.filter((r) => only.includes(r.name));
    const { forward } = options;
    if (forward === undefined) return deliver(chosen, track, events, deps);
    const elsewhere = chosen.filter(
      (receiver) => needsGitCredentials(receiver) && events.some((e) => wants(receiver, e)),
    );
    const forwarded = events.filter((event) => elsewhere.some((r) => wants(r, event)));
    await Promise.all([
      deliver(
        chosen.filter((receiver) => !needsGitCredentials(receiver)),
        track,
        events,
        deps,
      ),
      forwarded.length === 0
        ? undefined
        : forward(
            track,
            forwarded.map((event) => boundedEvent(event)),
            elsewhere.map((r) => r.name),
          ).catch((error: unknown) => {
            for (const receiver of elsewhere) {
              for (const event of forwarded.filter((e) => wants(receiver, e))) {
                options.onFailure?.(receiver.name, event, `not forwarded: ${messageOf(error)}`);
              }
            }
          }),
    ]);
  };
}

/** Sends each event to every receiver that wants it; resolves when all are done. */
export async function deliver(
  receivers: readonly Notification[],
  track: NotifiedTrack,
  events: readonly NotificationEvent[],
  deps: DeliverDeps,
): Promise<void> {
  // Bounded once for every receiver: each gets the same event.
  const bounded = events.map((event) => boundedEvent(event));
  await Promise.all(
    receivers.flatMap((receiver) =>
      bounded
        .filter((event) => wants(receiver, event))
        .map((event) => deliverOne(receiver, track, event, deps)),
    ),
  );
}

async function deliverOne(
  receiver: Notification,
  track: NotifiedTrack,
  event: NotificationEvent,
  deps: DeliverDeps,
): Promise<void> {
  try {
    switch (receiver.type) {
      case 'slack':
      case 'msteams':
      case 'webhook': {
        const url = (await deps.readSecret(receiver.url)).trim();
        const body = JSON.stringify(payloadFor(receiver.type, event));
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        if (receiver.type === 'webhook' && receiver.secret !== undefined) {
          const key = await deps.readSecret(receiver.secret);
          headers['x-driftless-signature'] =
            `sha256=${createHmac('sha256', key).update(body).digest('hex')}`;
        }
        return await post({ url, headers, body }, deps);
      }
      case 'commitStatus': {
        const status = commitStatusOf(event, track);
        if (status === undefined) return;
        const target = commitStatusTarget(receiver, track);
        const token = (await deps.readSecret(receiver.token)).trim();
        return await post(
          commitStatusRequest(target, track, status, token, deps.dashboardUrl),
          deps,
        );
      }
      case 'sns':
        return await awsOf(deps).publishToSns(receiver.topicArn, event);
      case 'eventbridge':
        return await awsOf(deps).putEvent(receiver.eventBus, event);
    }
  } catch (error) {
    deps.onFailure?.(receiver.name, event, messageOf(error));
  }
}

function awsOf(deps: DeliverDeps): AwsReceivers {
  return deps.aws ?? awsReceivers(deps.attemptTimeoutMs ?? ATTEMPT_TIMEOUT_MS);
}

/** A delivery that failed after its tries; the message never holds the URL (a secret). */
class DeliveryFailed extends Error {}

/** POSTs `request`, a second time after a 5xx, a 429 or no answer. */
async function post(request: HttpRequest, deps: DeliverDeps): Promise<void> {
  // A URL no request can be sent to stays so: said at once, without a second try.
  const unusable = unusableUrl(request.url);
  if (unusable !== undefined) throw new DeliveryFailed(unusable);
  const send = deps.fetch ?? fetch;
  const timeoutMs = deps.attemptTimeoutMs ?? ATTEMPT_TIMEOUT_MS;
  let problem = '';
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    try {
      const response = await send(request.url, {
        method: 'POST',
        headers: request.headers,
        body: request.body,
        signal: AbortSignal.timeout(timeoutMs),
      });
      await response.arrayBuffer().catch(() => undefined);
      if (response.ok) return;
      problem = `HTTP ${response.status}`;
      // A refusal (4xx but 429) will not change on a retry.
      if (response.status < 500 && response.status !== 429) break;
    } catch (error) {
      problem = unanswered(error, timeoutMs);
    }
    if (attempt < ATTEMPTS) await new Promise((r) => setTimeout(r, RETRY_DELAY_MS));
  }
  throw new DeliveryFailed(problem);
}

/**
 * Why no request can be sent to `url`, in words that do not quote it, or
 * undefined when one can. fetch would refuse it too, but its message quotes
 * the URL (`Failed to parse URL from <url>`).
 */
function unusableUrl(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch (error) {
    return `the URL is not valid (${codeOf(error) ?? 'ERR_INVALID_URL'})`;
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
    return 'the URL is not an http(s) URL';
  }
  if (parsed.username !== '' || parsed.password !== '') {
    return 'the URL holds a user name or password, which HTTP requests may not carry';
  }
  return undefined;
}

/**
 * Why a request got no answer: the timeout, else the code of the failure
 * under fetch's (`ECONNREFUSED`, `ENOTFOUND`, `CERT_HAS_EXPIRED`,
 * `UND_ERR_SOCKET`). Only codes and names: the messages under fetch's name
 * the host, and may quote the URL.
 */
function unanswered(error: unknown, timeoutMs: number): string {
  if (error instanceof Error && error.name === 'TimeoutError') {
    return `no answer within ${timeoutMs} ms`;
  }
  const code = codeOf(error);
  if (code !== undefined) return `no answer: ${code}`;
  return error instanceof Error ? `no answer: ${error.name}` : 'no answer';
}

/** The first error code along `error`'s causes (fetch's TypeError has none of its own). */
function codeOf(error: unknown): string | undefined {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 5; depth++) {
    const { code } = cause as { code?: unknown };
    if (typeof code === 'string' && /^[A-Z][A-Z0-9_]*$/.test(code)) return code;
    cause = cause.cause;
  }
  return undefined;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The subjects a chat message lists; the rest are counted (`… and 480 more`).
 * People read the first few, and Teams refuses a message over ~28 KB.
 */
export const CHAT_SUBJECTS = 20;

/** The body each chat or webhook receiver expects. */
export function payloadFor(
  type: 'slack' | 'msteams' | 'webhook',
  event: NotificationEvent,
): unknown {
  const revision = event.revision === null ? '' : ` at ${event.revision.slice(0, 12)}`;
  const shown = event.subjects.slice(0, CHAT_SUBJECTS);
  const more = event.subjects.length - shown.length + (event.subjectsOmitted ?? 0);
  const lines = [...shown.map((s) => `• ${s}`), ...(more > 0 ? [`… and ${more} more`] : [])];
  const subjects = lines.length === 0 ? '' : `\n${lines.join('\n')}`;
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
