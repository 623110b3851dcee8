import { createHash } from 'node:crypto';

/** The content digest of serialized bundle bytes: `sha256:<64 lowercase hex>`. */
export function bundleDigest(bytes: Uint8Array): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}
