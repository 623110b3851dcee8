/**
 * Reads objects straight from a repository's packs (`objects/pack/*.idx` +
 * `.pack`, index version 2 or 1), for one read operation; the packed half of
 * object-reader.ts, which is the only caller.
 *
 * Why our own code and not isomorphic-git: its readBlob costs ~0.15 ms per
 * object even with its cache — a new fs wrapper and gitdir stat per call, a
 * loose-object probe, a listing of the pack directory, and a JavaScript
 * inflate (pako) that allocates a fresh 32 KiB window per object; reading
 * the 500 blobs of a tree dominated a fetch (figures in docs/git-source.md).
 * Here the packs are listed and indexed once and objects are inflated with
 * node's zlib. isomorphic-git stays the test oracle
 * (test/unit/source-pack.test.ts).
 *
 * An oid in no pack gives undefined (the caller then looks for a loose
 * object); a pack that is damaged — an index that cannot be parsed, a pack
 * whose checksum does not match its index, an entry that does not inflate or
 * whose delta does not fit its base — throws a {@link PackReadError} naming
 * the pack. A ref-delta base outside its pack (a thin pack's base, see
 * upload-pack.ts) is asked of the caller's {@link ExternalReader}.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { inflateSync } from 'node:zlib';
import { messageOf } from '../../errors.ts';

/** An object's type and content (undeltified). */
export interface PackedObject {
  readonly type: 'commit' | 'tree' | 'blob' | 'tag';
  readonly object: Uint8Array;
}

/** A damaged pack or pack index; the message names the file (and the entry). */
export class PackReadError extends Error {
  override readonly name = 'PackReadError';
}

/** Reads an object from anywhere in the repository; for thin-pack ref-delta bases. */
export type ExternalReader = (oid: string) => Promise<PackedObject | undefined>;

/** Pack entry types of whole objects. */
export const TYPES = { 1: 'commit', 2: 'tree', 3: 'blob', 4: 'tag' } as const;
/** A delta against the entry a distance back in the same pack. */
export const OFS_DELTA = 6;
/** A delta against the object named by its oid (in the pack, or outside it in a thin pack). */
export const REF_DELTA = 7;

/** The header of one pack entry. */
export interface EntryHeader {
  readonly type: number;
  /** The size of the inflated data (of the delta, for a delta). */
  readonly size: number;
  /** OFS_DELTA: how far before this entry its base starts. */
  readonly baseDistance?: number;
  /** REF_DELTA: the base's oid. */
  readonly baseOid?: string;
  /** Where the entry's zlib stream starts. */
  readonly dataStart: number;
}

/**
 * Reads the header of the entry at `start`: type and size (3 bits, then a
 * little-endian base-128 number), then for an ofs-delta the big-endian
 * base-128 distance to its base (plus one per extra byte), for a ref-delta
 * the base's 20-byte oid.
 */
export function readEntryHeader(pack: Buffer, start: number): EntryHeader {
  let position = start;
  let byte = pack[position++]!;
  const type = (byte >> 4) & 7;
  let size = byte & 15;
  let shift = 4;
  while (byte & 0x80) {
    byte = pack[position++]!;
    size += (byte & 0x7f) * 2 ** shift;
    shift += 7;
  }
  if (type === OFS_DELTA) {
    byte = pack[position++]!;
    let distance = byte & 0x7f;
    while (byte & 0x80) {
      byte = pack[position++]!;
      distance = (distance + 1) * 128 + (byte & 0x7f);
    }
    return { type, size, baseDistance: distance, dataStart: position };
  }
  if (type === REF_DELTA) {
    const baseOid = pack.subarray(position, position + 20).toString('hex');
    return { type, size, baseOid, dataStart: position + 20 };
  }
  return { type, size, dataStart: position };
}
const IDX_MAGIC = 0xff744f63;

/** Deltas chain at most this deep in packs git writes (pack.depth is 50 by default; 4095 max). */
const MAX_DELTA_DEPTH = 4096;

/** One pack: its index (oid -> offset) and, once needed, its verified bytes. */
class Pack {
  private data: Promise<Buffer> | undefined;
  /** Undeltified objects by offset, kept for the delta chains that use them as bases. */
  private readonly bases = new Map<number, PackedObject>();

  constructor(
    private readonly packPath: string,
    readonly offsets: ReadonlyMap<string, number>,
    private readonly checksum: Buffer,
  ) {}

  /** The pack's bytes, once checked against the checksum its index records. */
  private bytes(): Promise<Buffer> {
    this.data ??= readFile(this.packPath).then(
      (pack) => {
        const trailer = pack.subarray(pack.length - 20);
        const actual =
          pack.length >= 32 && trailer.equals(this.checksum)
            ? createHash('sha1')
                .update(pack.subarray(0, pack.length - 20))
                .digest()
            : undefined;
        if (!actual?.equals(this.checksum))
          throw this.error('its checksum does not match its index');
        return pack;
      },
      (error: unknown) => {
        throw this.error(`cannot be read: ${messageOf(error)}`);
      },
    );
    return this.data;
  }

  async read(oid: string, external: ExternalReader): Promise<PackedObject | undefined> {
    const offset = this.offsets.get(oid);
    if (offset === undefined) return undefined;
    return this.readAt(await this.bytes(), offset, external, 0);
  }

  private async readAt(
    pack: Buffer,
    start: number,
    external: ExternalReader,
    depth: number,
  ): Promise<PackedObject> {
    if (depth > MAX_DELTA_DEPTH) throw this.error(`delta chain deeper than ${MAX_DELTA_DEPTH}`);
    if (start < 12 || start >= pack.length - 20) throw this.error(`no entry at offset ${start}`);
    const { type, size, baseDistance, baseOid, dataStart: position } = readEntryHeader(pack, start);
    let base: PackedObject | undefined;
    if (baseDistance !== undefined) {
      const baseStart = start - baseDistance;
      base = this.bases.get(baseStart) ?? (await this.readAt(pack, baseStart, external, depth + 1));
      this.bases.set(baseStart, base);
    } else if (baseOid !== undefined) {
      const baseStart = this.offsets.get(baseOid);
      if (baseStart === undefined) {
        base = await external(baseOid);
        if (!base) throw this.error(`the base ${baseOid} of the entry at ${start} is missing`);
      } else {
        base =
          this.bases.get(baseStart) ?? (await this.readAt(pack, baseStart, external, depth + 1));
        this.bases.set(baseStart, base);
      }
    } else if (!(type in TYPES)) {
      throw this.error(`unknown entry type ${type} at offset ${start}`);
    }
    let data: Buffer;
    try {
      // An output chunk of the known size: the default 16 KiB per object is mostly garbage.
      data = inflateSync(pack.subarray(position, pack.length - 20), {
        chunkSize: Math.max(size, 64),
      });
    } catch (error) {
      throw this.error(`the entry at offset ${start} does not inflate: ${messageOf(error)}`);
    }
    if (data.length !== size) throw this.error(`the entry at offset ${start} has the wrong size`);
    if (!base) return { type: TYPES[type as keyof typeof TYPES], object: data };
    const object = applyDelta(data, base.object);
    if (!object) throw this.error(`the delta at offset ${start} does not fit its base`);
    return { type: base.type, object };
  }

  private error(detail: string): PackReadError {
    return new PackReadError(`pack ${basename(this.packPath)}: ${detail}`);
  }
}

/**
 * The objects of a repository's packs, listed once: make one per read
 * operation, and {@link refresh} it after storing a pack.
 */
export class PackReader {
  private readonly packs = new Map<string, Pack>();

  private constructor(private readonly dir: string) {}

  /** Indexes the packs of `gitdir`; throws a {@link PackReadError} for an index that cannot be parsed. */
  static async open(gitdir: string): Promise<PackReader> {
    const reader = new PackReader(join(gitdir, 'objects', 'pack'));
    await reader.refresh();
    return reader;
  }

  /**
   * Indexes the packs added since the last listing. Packs already indexed
   * keep their bytes, so the packs of earlier fetches are not read again.
   */
  async refresh(): Promise<void> {
    const names = await readdir(this.dir).catch(() => [] as string[]);
    const added = names.filter((name) => name.endsWith('.idx') && !this.packs.has(name));
    await Promise.all(
      added.map(async (name) => {
        const idx = await readFile(join(this.dir, name));
        const parsed = parseIndex(idx);
        if (!parsed) throw new PackReadError(`pack index ${name} is malformed`);
        this.packs.set(name, new Pack(join(this.dir, name.replace(/idx$/, 'pack')), ...parsed));
      }),
    );
  }

  /** The object `oid` from a pack, undefined when no pack here has it; throws for a damaged pack. */
  async read(oid: string, external: ExternalReader): Promise<PackedObject | undefined> {
    for (const pack of this.packs.values()) {
      if (pack.offsets.has(oid)) return pack.read(oid, external);
    }
    return undefined;
  }
}

/** oid -> offset and the pack checksum of an index (version 2 or 1), or undefined when malformed. */
function parseIndex(idx: Buffer): [Map<string, number>, Buffer] | undefined {
  if (idx.length >= 8 && idx.readUInt32BE(0) !== IDX_MAGIC) return parseIndexV1(idx);
  if (idx.length < 8 + 1024 + 40 || idx.readUInt32BE(4) !== 2) return undefined;
  const count = idx.readUInt32BE(8 + 255 * 4);
  const names = 8 + 1024;
  const offsets = names + count * 24; // past the names (20 bytes) and CRCs (4 bytes)
  const large = offsets + count * 4;
  if (large + 40 > idx.length) return undefined;
  const result = new Map<string, number>();
  for (let i = 0; i < count; i++) {
    const oid = idx.subarray(names + i * 20, names + i * 20 + 20).toString('hex');
    let offset = idx.readUInt32BE(offsets + i * 4);
    if (offset & 0x80000000) {
      const at = large + (offset & 0x7fffffff) * 8;
      if (at + 8 > idx.length - 40) return undefined;
      offset = Number(idx.readBigUInt64BE(at));
    }
    result.set(oid, offset);
  }
  return [result, Buffer.from(idx.subarray(idx.length - 40, idx.length - 20))];
}

/**
 * A version 1 index (git before 1.5.2; `git index-pack --index-version=1`):
 * no header, the 256-entry fan-out, then per object its 4-byte offset and
 * 20-byte oid, then the pack checksum and the index checksum.
 */
function parseIndexV1(idx: Buffer): [Map<string, number>, Buffer] | undefined {
  if (idx.length < 1024 + 40) return undefined;
  const count = idx.readUInt32BE(255 * 4);
  if (1024 + count * 24 + 40 !== idx.length) return undefined;
  const result = new Map<string, number>();
  for (let i = 0; i < count; i++) {
    const at = 1024 + i * 24;
    result.set(idx.subarray(at + 4, at + 24).toString('hex'), idx.readUInt32BE(at));
  }
  return [result, Buffer.from(idx.subarray(idx.length - 40, idx.length - 20))];
}

/** Applies a git delta to `base`, or undefined when the delta does not fit it. */
export function applyDelta(delta: Uint8Array, base: Uint8Array): Buffer | undefined {
  let position = 0;
  const varint = (): number => {
    let value = 0;
    let shift = 0;
    let byte;
    do {
      byte = delta[position++] ?? 0;
      value += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    } while (byte & 0x80 && position < delta.length);
    return value;
  };
  if (varint() !== base.length) return undefined;
  const out = Buffer.allocUnsafe(varint());
  let written = 0;
  while (position < delta.length) {
    const op = delta[position++]!;
    if (op & 0x80) {
      let offset = 0;
      let size = 0;
      for (let bit = 0; bit < 4; bit++) {
        if (op & (1 << bit)) offset += (delta[position++] ?? 0) * 2 ** (8 * bit);
      }
      for (let bit = 0; bit < 3; bit++) {
        if (op & (0x10 << bit)) size += (delta[position++] ?? 0) * 2 ** (8 * bit);
      }
      if (size === 0) size = 0x10000;
      if (offset + size > base.length || written + size > out.length) return undefined;
      out.set(base.subarray(offset, offset + size), written);
      written += size;
    } else if (op > 0) {
      if (position + op > delta.length || written + op > out.length) return undefined;
      out.set(delta.subarray(position, position + op), written);
      position += op;
      written += op;
    } else {
      return undefined; // opcode 0 is reserved
    }
  }
  return written === out.length ? out : undefined;
}
