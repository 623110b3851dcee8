/**
 * Reads a request body into memory up to a limit. Signatures are over the
 * exact bytes, so the body is kept as bytes, never decoded here.
 */
import type { IncomingMessage } from 'node:http';

/** The body as read, or `tooLarge` once it passed `maxBytes` (the rest is discarded). */
export type BodyRead =
  { readonly tooLarge: false; readonly bytes: Buffer } | { readonly tooLarge: true };

/**
 * Collects at most `maxBytes`. A larger body is drained without being kept,
 * so memory stays bounded and the client, which is still sending, can read
 * the 413 that follows instead of seeing a reset connection.
 */
export function readBody(request: IncomingMessage, maxBytes: number): Promise<BodyRead> {
  return new Promise((resolve, reject) => {
    const declared = Number(request.headers['content-length']);
    let tooLarge = Number.isFinite(declared) && declared > maxBytes;
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      if (tooLarge) return;
      size += chunk.length;
      if (size > maxBytes) {
        tooLarge = true;
        chunks.length = 0;
        return;
      }
      chunks.push(chunk);
    });
    request.on('end', () =>
      resolve(tooLarge ? { tooLarge: true } : { tooLarge: false, bytes: Buffer.concat(chunks) }),
    );
    request.on('error', reject);
  });
}
