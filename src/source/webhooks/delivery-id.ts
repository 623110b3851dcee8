import { createHash } from 'node:crypto';
import type { WebhookHost } from '../../config/types.ts';

/** Longer or odd header values are not ids a host sends: derive one instead of storing them. */
const DELIVERY_ID = /^[\x21-\x7e]{1,200}$/;

/**
 * The delivery id: the first usable one of `headerNames`, else
 * `sha256:<hex>` of host and body, so a retried delivery without an id
 * still de-duplicates (its body is byte-identical).
 */
export function deliveryIdOf(
  host: WebhookHost,
  headers: Readonly<Record<string, string | undefined>>,
  headerNames: readonly string[],
  body: Buffer,
): string {
  for (const name of headerNames) {
    const value = headers[name]?.trim();
    if (value !== undefined && DELIVERY_ID.test(value)) return value;
  }
  const hash = createHash('sha256').update(host, 'utf8').update('\0').update(body).digest('hex');
  return `sha256:${hash}`;
}
