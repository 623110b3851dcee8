import { WebhookTooLargeError } from './errors.ts';

/** 1 MiB: GitHub push payloads stay far below it unless a push carries huge commit lists. */
export const DEFAULT_MAX_BYTES = 1024 * 1024;

/**
 * The bytes received, decoded from base64 when API Gateway encoded them, or
 * `WebhookTooLargeError` when there are more than `maxBytes`.
 *
 * The size is checked before anything else touches the body: a base64 body is
 * measured before it is decoded, so an oversized delivery costs neither a
 * copy nor an HMAC.
 */
export function rawBody(
  body: string,
  isBase64Encoded: boolean | undefined,
  maxBytes: number,
): Buffer {
  if (isBase64Encoded === true) {
    // Four base64 characters carry three bytes; padding and line breaks only make it shorter.
    const upperBound = Math.floor((body.length * 3) / 4);
    if (upperBound > maxBytes && base64Length(body) > maxBytes) throw tooLarge(maxBytes);
    const decoded = Buffer.from(body, 'base64');
    // The estimate is exact for valid base64; this only guards against it ever being wrong.
    if (decoded.length > maxBytes) throw tooLarge(maxBytes);
    return decoded;
  }
  // A JS string holds at most 3 UTF-8 bytes per UTF-16 unit; only measure when that could exceed.
  if (body.length * 3 > maxBytes && Buffer.byteLength(body, 'utf8') > maxBytes) {
    throw tooLarge(maxBytes);
  }
  return Buffer.from(body, 'utf8');
}

/** Decoded length of base64 text without decoding it (ignores whitespace and padding). */
function base64Length(text: string): number {
  const significant = text.replace(/[\s=]/g, '').length;
  return Math.floor((significant * 3) / 4);
}

function tooLarge(maxBytes: number): WebhookTooLargeError {
  return new WebhookTooLargeError(`payload is larger than ${maxBytes} bytes`);
}
