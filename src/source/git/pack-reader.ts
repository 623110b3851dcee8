/**
 * Reads objects straight from a repository's packs (`objects/pack/*.idx` +
 * `.pack`, index version 2), for one read operation.
 *
 * Why: isomorphic-git's readBlob costs ~0.15 ms per object even with its
 * cache — a new fs wrapper and gitdir stat per call, a loose-object probe,
 * a listing of the pack directory, and a JavaScript inflate (pako) that
 * allocates a fresh 32 KiB window per object. Reading the 500 blobs of a
 * tree dominated a fetch. Here the packs are listed and indexed once and
 * objects are inflated with node's zlib.
 *
 * Anything this reader does not handle returns undefined and the caller
 * falls back to isomorphic-git, which then behaves (and fails) as before:
 * loose objects, objects in no pack, a malformed or version-1 index, a pack
 * whose checksum does not match its index. A ref-delta base outside its
 * pack (a thin pack's base, see upload-pack.ts) is asked of the caller's
 * {@link ExternalReader}.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { inflateSync } from 'node:zlib';

/** An object's type and content (undeltified). */
export interface PackedObject {
  readonly type: 'commit' | 'tree' | 'blob' | 'tag';
  readonly object: Uint8Array;
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
  private data: Promise<Buffer | undefined> | undefined;
  /** Undeltified objects by offset, kept for the delta chains that use them as bases. */
  private readonly bases = new Map<number, PackedObject>();

  constructor(
    private readonly packPath: string,
    readonly offsets: ReadonlyMap<string, number>,
    private readonly checksum: Buffer,
  ) {}

  /** The pack's bytes, or undefined when they do not match the index (isomorphic-git then reports it). */
  private bytes(): Promise<Buffer | undefined> {
    this.data ??= readFile(this.packPath).then(
      (pack) => {
        const trailer = pack.subarray(pack.length - 20);
        if (pack.length < 32 || !trailer.equals(this.checksum)) return undefined;
        const actual = createHash('sha1')
          .update(pack.subarray(0, pack.length - 20))
          .digest();
        return actual.equals(this.checksum) ? pack : undefined;
      },
      () => undefined,
    );
    return this.data;
  }

  async read(oid: string, external: ExternalReader): Promise<PackedObject | undefined> {
    const offset = this.offsets.get(oid);
    if (offset === undefined) return undefined;
    const pack = await this.bytes();
    if (!pack) return undefined;
    return this.readAt(pack, offset, external, 0);
  }

  private async readAt(
    pack: Buffer,
    start: number,
    external: ExternalReader,
    depth: number,
  ): Promise<PackedObject | undefined> {
    if (depth > MAX_DELTA_DEPTH || start < 12 || start >= pack.length - 20) return undefined;
    const { type, size, baseDistance, baseOid, dataStart: position } = readEntryHeader(pack, start);
    let base: PackedObject | undefined;
    if (baseDistance !== undefined) {
      const baseStart = start - baseDistance;
      base = this.bases.get(baseStart) ?? (await this.readAt(pack, baseStart, external, depth + 1));
      if (base) this.bases.set(baseStart, base);
    } else if (baseOid !== undefined) {
      const baseStart = this.offsets.get(baseOid);
      base =
        baseStart === undefined
          ? await external(baseOid)
          : (this.bases.get(baseStart) ??
            (await this.readAt(pack, baseStart, external, depth + 1)));
      if (base && baseStart !== undefined) this.bases.set(baseStart, base);
    } else if (!(type in TYPES)) {
      return undefined;
    }
    if ((type === OFS_DELTA || type === REF_DELTA) && !base) return undefined;
    let data: Buffer;
    try {
      // An output chunk of the known size: the default 16 KiB per object is mostly garbage.
      data = inflateSync(pack.subarray(position, pack.length - 20), {
        chunkSize: Math.max(size, 64),
      });
    } catch {
      return undefined;
    }
    if (data.length !== size) return undefined;
    if (!base) return { type: TYPES[type as keyof typeof TYPES], object: data };
    const object = applyDelta(data, base.object);
    return object ? { type: base.type, object } : undefined;
  }
}

/**
 * The objects of a repository's packs, listed once: make one per read
 * operation, and {@link refresh} it after storing a pack.
 */
export class PackReader {
  private readonly packs = new Map<string, Pack>();
  /** Index files that could not be parsed (version 1, malformed): isomorphic-git reads those. */
  private readonly unreadable = new Set<string>();

  private constructor(private readonly dir: string) {}

  /** Indexes the packs of `gitdir`; a pack whose index cannot be read is left to isomorphic-git. */
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
    const added = names.filter(
      (name) => name.endsWith('.idx') && !this.packs.has(name) && !this.unreadable.has(name),
    );
    await Promise.all(
      added.map(async (name) => {
        const idx = await readFile(join(this.dir, name)).catch(() => undefined);
        const parsed = idx && parseIndex(idx);
        if (!parsed) {
          this.unreadable.add(name);
          return;
        }
        this.packs.set(name, new Pack(join(this.dir, name.replace(/idx$/, 'pack')), ...parsed));
      }),
    );
  }

  /** True when this reader indexed every pack it found: an oid none has is in no pack. */
  get complete(): boolean {
    return this.unreadable.size === 0;
  }

  /** The object `oid` from a pack, or undefined when no pack here has it (or can give it). */
  async read(oid: string, external: ExternalReader): Promise<PackedObject | undefined> {
    for (const pack of this.packs.values()) {
      if (pack.offsets.has(oid)) return pack.read(oid, external);
    }
    return undefined;
  }
}

/** oid -> offset and the pack checksum of a version 2 index, or undefined for anything else. */
function parseIndex(idx: Buffer): [Map<string, number>, Buffer] | undefined {
  if (
    idx.length < 8 + 1024 + 40 ||
    idx.readUInt32BE(0) !== IDX_MAGIC ||
    idx.readUInt32BE(4) !== 2
  ) {
    return undefined;
  }
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
