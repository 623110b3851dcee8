/**
 * HMAC and secret comparisons for the hosts whose signatures are computed
 * here (all but GitHub, which `@octokit/webhooks` verifies).
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { WebhookSignatureError } from './errors.ts';

/** Lower-case hex HMAC-SHA256 of `body` keyed by `secret`. */
export function hmacSha256Hex(secret: string, body: Buffer): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

/**
 * Whether two strings are equal, in time independent of where they differ
 * and of their lengths: both are hashed first, so `timingSafeEqual` always
 * compares 32 bytes and a length mismatch neither throws nor returns early.
 */
export function constantTimeEqual(a: string, b: string): boolean {
  const digestA = createHash('sha256').update(a, 'utf8').digest();
  const digestB = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(digestA, digestB);
}

/**
 * Checks `received` (hex, optionally after `prefix`, e.g. `sha256=`) against
 * the HMAC of `body` under each secret; throws `WebhookSignatureError` when
 * it is missing or none matches. `header` names the header in messages.
 */
export function verifyHexHmac(
  header: string,
  received: string | undefined,
  body: Buffer,
  secrets: readonly string[],
  prefix = '',
): void {
  const signature = requireSignature(header, received, secrets);
  if (!signature.startsWith(prefix)) {
    throw new WebhookSignatureError(`${header} does not start with "${prefix}"`);
  }
  // Hex is case-insensitive; the HMAC is computed in lower case.
  const hex = signature.slice(prefix.length).trim().toLowerCase();
  // Every secret is tried, so the time taken does not tell which one matched.
  let matched = false;
  for (const secret of secrets) {
    if (constantTimeEqual(hex, hmacSha256Hex(secret, body))) matched = true;
  }
  if (!matched) throw signatureMismatch(header);
}

/**
 * The trimmed value of a signature header, or `WebhookSignatureError` when it
 * is missing or when no secret is configured (an unsigned receiver is never
 * accepted).
 */
export function requireSignature(
  header: string,
  received: string | undefined,
  secrets: readonly string[],
): string {
  if (secrets.length === 0) {
    throw new WebhookSignatureError('no webhook secret is configured for this host');
  }
  const signature = received?.trim() ?? '';
  if (signature === '') throw new WebhookSignatureError(`missing ${header} header`);
  return signature;
}

export function signatureMismatch(header: string): WebhookSignatureError {
  return new WebhookSignatureError(`${header} does not match any configured secret`);
}
