/**
 * The blobs of the last tree a track read from a cache repository, kept in
 * one file beside it, so that reading the next commit inflates only the
 * blobs that changed.
 *
 * Why: after a push that changes one file of 500, reading the new tree from
 * the packs (500 inflates, a thin pack's deltas resolved against the older
 * pack) took as long as the fetch itself; one file read is a fraction of it.
 *
 * Blobs are named by their Git oid, so a memo entry can only be right or
 * wrong, never stale; the blobs in it were read from verified packs, and a
 * memo that is unreadable, truncated or fails its checksum is not used.
 * (One checksum over the file, not a SHA-1 per blob: hashing 500 blobs
 * separately cost as much as the rest of reading the tree.)
 *
 * File format: the line `driftless blob memo 1`, then per blob its 20-byte
 * oid, its length (4 bytes, big-endian) and its content, then the SHA-256
 * of everything before it.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { TreeReader } from './read-tree-files.ts';

const HEADER = Buffer.from('driftless blob memo 1\n');
const OID_BYTES = 20;
const LENGTH_BYTES = 4;
const CHECKSUM_BYTES = 32;

/** The blobs a memo file holds, and the blobs read through it since it was loaded. */
export class BlobMemo {
  /** Every blob read through {@link over}: what the next memo holds. */
  private readonly read = new Map<string, Uint8Array>();

  private constructor(
    private readonly path: string,
    private readonly blobs: ReadonlyMap<string, Uint8Array>,
  ) {}

  /** The memo at `path`; empty when there is none or it cannot be read. */
  static async load(path: string): Promise<BlobMemo> {
    const bytes = await readFile(path).catch(() => undefined);
    return new BlobMemo(path, bytes ? parseMemo(bytes) : new Map());
  }

  /** `objects`, with blobs taken from the memo when it has them. */
  over(objects: TreeReader): TreeReader {
    return {
      readTree: (oid) => objects.readTree(oid),
      readBlob: async (oid) => {
        const blob = this.blobs.get(oid) ?? (await objects.readBlob(oid));
        this.read.set(oid, blob);
        return blob;
      },
    };
  }

  /**
   * Writes the blobs read through {@link over} to the memo's file
   * (atomically), unless they are exactly the ones it held already.
   */
  async save(): Promise<void> {
    const unchanged =
      this.read.size === this.blobs.size &&
      [...this.read.keys()].every((oid) => this.blobs.has(oid));
    if (unchanged) return;
    const path = this.path;
    const parts: Buffer[] = [HEADER];
    for (const [oid, blob] of this.read) {
      const length = Buffer.alloc(LENGTH_BYTES);
      length.writeUInt32BE(blob.length);
      parts.push(
        Buffer.from(oid, 'hex'),
        length,
        Buffer.from(blob.buffer, blob.byteOffset, blob.length),
      );
    }
    const body = Buffer.concat(parts);
    const checksum = createHash('sha256').update(body).digest();
    await mkdir(dirname(path), { recursive: true });
    const temporary = `${path}.tmp-${randomBytes(6).toString('hex')}`;
    try {
      await writeFile(temporary, Buffer.concat([body, checksum]));
      await rename(temporary, path);
    } catch (error) {
      await rm(temporary, { force: true });
      throw error;
    }
  }
}

/** The blobs of a memo file; empty for anything but a whole memo with its checksum. */
function parseMemo(file: Buffer): Map<string, Uint8Array> {
  const blobs = new Map<string, Uint8Array>();
  const bytes = file.subarray(0, Math.max(0, file.length - CHECKSUM_BYTES));
  if (!bytes.subarray(0, HEADER.length).equals(HEADER)) return blobs;
  const checksum = createHash('sha256').update(bytes).digest();
  if (!checksum.equals(file.subarray(bytes.length))) return blobs;
  let position = HEADER.length;
  while (position < bytes.length) {
    if (position + OID_BYTES + LENGTH_BYTES > bytes.length) return new Map();
    const oid = bytes.toString('hex', position, position + OID_BYTES);
    const length = bytes.readUInt32BE(position + OID_BYTES);
    const start = position + OID_BYTES + LENGTH_BYTES;
    if (start + length > bytes.length) return new Map();
    blobs.set(oid, bytes.subarray(start, start + length));
    position = start + length;
  }
  return blobs;
}
