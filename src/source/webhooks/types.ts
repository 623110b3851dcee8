/**
 * Shapes shared by the webhook receivers: what arrives (a raw HTTP request),
 * what a push means once verified (a {@link PushEvent}), and what the caller
 * answers (a {@link WebhookOutcome}).
 */
import type { WebhookHost } from '../../config/types.ts';

/** One HTTP delivery as the local server or API Gateway hands it over. */
export interface WebhookRequest {
  /** Header names lower-cased (others are lower-cased on receipt, for API Gateway v1). */
  readonly headers: Readonly<Record<string, string | undefined>>;
  /** The body exactly as received: signatures are over these bytes, never a re-serialisation. */
  readonly body: string;
  /** API Gateway sets this when `body` is the base64 of the bytes received. */
  readonly isBase64Encoded?: boolean;
}

/** A verified push of one ref (branch or tag). */
export interface PushEvent {
  readonly host: WebhookHost;
  /**
   * The host's id of the delivery, stable across its retries; when the host
   * sends none, `sha256:<hex>` of host and body. Several events of one
   * delivery (a Bitbucket push of several refs) share it: de-duplicate
   * deliveries, not events.
   */
  readonly deliveryId: string;
  /** Every URL the payload gives for the repository (clone, SSH, web), as sent. */
  readonly repositoryUrls: readonly string[];
  /** Full ref name: `refs/heads/<branch>` or `refs/tags/<tag>`. */
  readonly ref: string;
  /** Commit (or tag object) the ref now points to. A hint: the fetch step resolves the ref itself. */
  readonly after: string;
  readonly before?: string;
  /** The repository's default branch, when the payload says; lets `HEAD` tracks match. */
  readonly defaultBranch?: string;
}

/** What to answer, and why; `event`/`events` only for `kind: 'push'`. */
export interface WebhookOutcome {
  readonly status: 200 | 202 | 400 | 401 | 413;
  readonly kind: 'ping' | 'push' | 'ignored' | 'rejected';
  /** For people and logs; never holds a secret or a signature. */
  readonly reason: string;
  /** The first pushed ref (`events[0]`). */
  readonly event?: PushEvent;
  /** Every pushed ref of the delivery: one, except Bitbucket pushes of several refs. */
  readonly events?: readonly PushEvent[];
  /**
   * The delivery's id, once the signature is verified (headers are not
   * signed, so an id seen before verification is not worth recording).
   */
  readonly deliveryId?: string;
  /** Stable code of the error behind a rejection (`WEBHOOK_SIGNATURE`, ...). */
  readonly code?: string;
}

/** What a host's parser makes of a verified delivery. */
export type ParsedDelivery =
  | { readonly kind: 'ping'; readonly reason: string }
  | { readonly kind: 'ignored'; readonly reason: string }
  | { readonly kind: 'push'; readonly events: readonly PushEvent[] };

/** A verified delivery handed to a host's parser. */
export interface VerifiedDelivery {
  /** Lower-case header names. */
  readonly headers: Readonly<Record<string, string | undefined>>;
  /** The verified body, decoded as UTF-8 once: exactly the text that is parsed. */
  readonly text: string;
  readonly deliveryId: string;
}

/**
 * One Git host's webhook dialect: how its deliveries are signed, named and
 * shaped. `verify` sees the raw bytes and never parses them.
 */
export interface HostReceiver {
  /** Header names carrying the delivery id, in order of preference. */
  readonly deliveryHeaders: readonly string[];
  /**
   * Resolves when a secret signs the delivery; throws `WebhookSignatureError`
   * (missing or wrong signature) otherwise.
   */
  verify(
    headers: Readonly<Record<string, string | undefined>>,
    body: Buffer,
    secrets: readonly string[],
  ): Promise<void>;
  /** Throws `WebhookPayloadError` when the verified payload is malformed. */
  parse(delivery: VerifiedDelivery): ParsedDelivery;
}
