/**
 * Indexing and storing a pack a fetch downloaded: the `.idx` (version 2)
 * that git index-pack and isomorphic-git write for it, byte for byte.
 *
 * Why our own code: isomorphic-git's indexer inflates with pako and hashes
 * in JavaScript, ~300 ms for the pack of a 500-file push; node's zlib and
 * crypto do the same in a tenth of that. isomorphic-git and git index-pack
 * stay the test oracles (test/unit/source-pack-index.test.ts).
 *
 * How (as git index-pack): a first pass walks the entries, inflating each
 * to learn where its compressed data ends (the pack says only how large the
 * inflated data is), takes the CRC-32 of its raw bytes and hashes the
 * undeltified objects. A second pass applies the deltas from their bases
 * down, depth first, so only one chain's contents are held at a time.
 *
 * The pack may be thin (asked for with `thin-pack`): a ref-delta base it
 * does not hold comes from the repository's other packs through an
 * {@link ExternalReader}, and is then appended to the pack, undeltified, as
 * `git index-pack --fix-thin` does. Stored packs are thus self-contained:
 * kept thin, a file reverted to an earlier version would be a delta against
 * its successor in another pack, itself a delta against the first version
 * in this one, and readers (isomorphic-git's too) would go round in circles.
 */
import { createHash, randomBytes } from 'node:crypto';
import { access, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32, deflateSync, inflateSync, type Zlib } from 'node:zlib';
import {
  applyDelta,
  OFS_DELTA,
  readEntryHeader,
  REF_DELTA,
  TYPES,
  type ExternalReader,
  type PackedObject,
} from './pack-reader.ts';
import { messageOf } from '../../errors.ts';

const TYPE_CODES = { commit: 1, tree: 2, blob: 3, tag: 4 } as const;
const PACK_SIGNATURE = 0x5041434b; // "PACK"
const IDX_HEADER = Buffer.from([0xff, 0x74, 0x4f, 0x63, 0, 0, 0, 2]); // "\377tOc", version 2
const HEADER_BYTES = 12;
const TRAILER_BYTES = 20;
/** Offsets from here on go to the index's 64-bit table. */
const LARGE_OFFSET = 0x80000000;

/** A pack that cannot be indexed: truncated, corrupted, or a thin pack whose bases are missing. */
export class PackIndexError extends Error {
  override readonly name = 'PackIndexError';
}

/** One entry of the pack, as the first pass finds it. */
interface Entry {
  /** Where the entry (its header) starts. */
  readonly offset: number;
  /** 1-4 (an object) or OFS_DELTA / REF_DELTA. */
  readonly type: number;
  /** CRC-32 of the entry's raw bytes, header included, as the index records it. */
  readonly crc: number;
  /** ofs-delta: where the base entry starts. */
  readonly baseOffset?: number;
  /** ref-delta: the base's oid, in this pack or (thin pack) elsewhere. */
  readonly baseOid?: string;
  /** A delta's inflated instructions, until it is resolved. */
  delta?: Buffer;
  /** The object's oid, once hashed. */
  oid?: string;
}

/** The result of {@link indexPack}. */
export interface PackIndex {
  /** The pack to store: the one given, or for a thin pack, that one with its bases appended. */
  readonly pack: Buffer;
  /** The pack's own checksum (its trailer), hex: the pack is stored as `pack-<checksum>.pack`. */
  readonly checksum: string;
  /** Objects in the pack. */
  readonly objects: number;
  /** How many of them were appended: the external bases of a thin pack. */
  readonly appended: number;
  /** The `.idx` file. */
  readonly idx: Buffer;
}

/**
 * Verifies `pack` and builds its index. Ref-delta bases that are not in
 * the pack are read with `external` and appended to it (see the module
 * comment); throws {@link PackIndexError} for a pack that is malformed,
 * fails its checksum, or needs a base nobody has.
 */
export async function indexPack(received: Buffer, external: ExternalReader): Promise<PackIndex> {
  const count = verifyPack(received);
  const entries = readEntries(received, count);
  const bases = await resolveDeltas(received, entries, external);
  const pack = bases.length === 0 ? received : appendBases(received, entries, bases);
  const checksum = pack.subarray(pack.length - TRAILER_BYTES);
  return {
    pack,
    checksum: checksum.toString('hex'),
    objects: entries.length,
    appended: bases.length,
    idx: writeIndex(entries, checksum),
  };
}

/**
 * Indexes `pack` and stores it in `gitdir`'s `objects/pack/`: the `.pack`
 * first and the `.idx` last, each written to a temporary name and renamed,
 * so readers (which list `.idx` files) never see half a pack. Returns the
 * pack's file name, or undefined for a pack with no objects (not stored).
 */
export async function storePack(
  gitdir: string,
  pack: Buffer,
  external: ExternalReader,
): Promise<string | undefined> {
  const { pack: complete, checksum, objects, idx } = await indexPack(pack, external);
  if (objects === 0) return undefined;
  const dir = join(gitdir, 'objects', 'pack');
  const name = `pack-${checksum}`;
  const exists = await access(join(dir, `${name}.idx`)).then(
    () => true,
    () => false,
  );
  // The same pack again (same checksum, same bytes): nothing to add.
  if (exists) return `${name}.pack`;
  await mkdir(dir, { recursive: true });
  await writeAtomically(join(dir, `${name}.pack`), complete);
  await writeAtomically(join(dir, `${name}.idx`), idx);
  return `${name}.pack`;
}

async function writeAtomically(path: string, data: Buffer): Promise<void> {
  // No `.pack`/`.idx` suffix: readers skip the file until it is renamed.
  const temporary = `${path}.tmp-${randomBytes(6).toString('hex')}`;
  try {
    await writeFile(temporary, data);
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

/** Checks the header and the trailing SHA-1 of `pack`; returns its object count. */
function verifyPack(pack: Buffer): number {
  if (pack.length < HEADER_BYTES + TRAILER_BYTES || pack.readUInt32BE(0) !== PACK_SIGNATURE) {
    throw new PackIndexError('not a pack (no PACK header)');
  }
  const version = pack.readUInt32BE(4);
  if (version !== 2 && version !== 3)
    throw new PackIndexError(`unsupported pack version ${version}`);
  const body = pack.subarray(0, pack.length - TRAILER_BYTES);
  const actual = createHash('sha1').update(body).digest();
  if (!actual.equals(pack.subarray(pack.length - TRAILER_BYTES))) {
    throw new PackIndexError('pack checksum mismatch (corrupted or truncated pack)');
  }
  return pack.readUInt32BE(8);
}

/** The first pass: every entry's extent, CRC and delta base; undeltified objects hashed. */
function readEntries(pack: Buffer, count: number): Entry[] {
  const end = pack.length - TRAILER_BYTES;
  const entries: Entry[] = [];
  let position = HEADER_BYTES;
  for (let i = 0; i < count; i++) {
    const offset = position;
    if (position >= end) throw new PackIndexError(`pack ends after ${i} of ${count} objects`);
    const header = readEntryHeader(pack, position);
    const { type, size, baseOid } = header;
    position = header.dataStart;
    let baseOffset: number | undefined;
    if (header.baseDistance !== undefined) {
      baseOffset = offset - header.baseDistance;
      if (baseOffset < HEADER_BYTES) {
        throw new PackIndexError(`object at ${offset} has its delta base outside the pack`);
      }
    } else if (baseOid === undefined && !(type in TYPES)) {
      throw new PackIndexError(`object at ${offset} has the unknown type ${type}`);
    }
    const { data, consumed } = inflateEntry(pack.subarray(position, end), size, offset);
    position += consumed;
    const entry: Entry = {
      offset,
      type,
      crc: crc32(pack.subarray(offset, position)),
      ...(baseOffset === undefined ? {} : { baseOffset }),
      ...(baseOid === undefined ? {} : { baseOid }),
    };
    if (type === OFS_DELTA || type === REF_DELTA) entry.delta = data;
    else entry.oid = hashObject(TYPES[type as keyof typeof TYPES], data);
    entries.push(entry);
  }
  if (position !== end) {
    throw new PackIndexError(`${end - position} bytes of garbage after the last object`);
  }
  return entries;
}

/**
 * Inflates the zlib stream at the start of `input` (which runs on to the
 * pack's end): the data, and how many compressed bytes the stream took.
 */
function inflateEntry(
  input: Buffer,
  size: number,
  offset: number,
): { data: Buffer; consumed: number } {
  let result: { buffer: Buffer; engine: Zlib };
  try {
    // `info` also returns the engine, whose bytesWritten counts the input consumed;
    // an output chunk of the known size saves the default 16 KiB per object.
    result = inflateSync(input, { info: true, chunkSize: Math.max(size, 64) }) as unknown as {
      buffer: Buffer;
      engine: Zlib;
    };
  } catch (error) {
    throw new PackIndexError(`object at ${offset} does not inflate: ${messageOf(error)}`);
  }
  if (result.buffer.length !== size) {
    throw new PackIndexError(
      `object at ${offset} inflates to ${result.buffer.length} bytes, not ${size}`,
    );
  }
  return { data: result.buffer, consumed: result.engine.bytesWritten };
}

/** An object from outside a thin pack that deltas in it are based on. */
interface ExternalBase extends PackedObject {
  readonly oid: string;
}

/**
 * The second pass: hashes every delta by applying it to its base, from
 * the undeltified objects down, then from the thin pack's external bases,
 * which it returns.
 */
async function resolveDeltas(
  pack: Buffer,
  entries: readonly Entry[],
  external: ExternalReader,
): Promise<ExternalBase[]> {
  const bases: ExternalBase[] = [];
  const byOffset = new Map<number, Entry[]>();
  const byOid = new Map<string, Entry[]>();
  for (const entry of entries) {
    if (entry.baseOffset !== undefined) push(byOffset, entry.baseOffset, entry);
    if (entry.baseOid !== undefined) push(byOid, entry.baseOid, entry);
  }

  // Applies the deltas based on `base` (entry `offset`, or an external base), and theirs.
  const resolveChildren = (base: PackedObject, oid: string, offset: number | undefined): void => {
    const children = [
      ...(offset === undefined ? [] : (byOffset.get(offset) ?? [])),
      ...(byOid.get(oid) ?? []),
    ];
    // Each ref-delta is resolved once, even when its base is in the pack twice.
    byOid.delete(oid);
    for (const child of children) {
      const object = applyDelta(child.delta!, base.object);
      if (!object) throw new PackIndexError(`delta at ${child.offset} does not fit its base`);
      child.delta = undefined;
      child.oid = hashObject(base.type, object);
      resolveChildren({ type: base.type, object }, child.oid, child.offset);
    }
  };

  for (const entry of entries) {
    // Deltas are reached from their bases.
    if (entry.type === OFS_DELTA || entry.type === REF_DELTA || entry.oid === undefined) continue;
    if (!byOffset.has(entry.offset) && !byOid.has(entry.oid)) continue;
    // The first pass kept no contents; inflate this base again (its length is known now).
    const type = TYPES[entry.type as keyof typeof TYPES];
    resolveChildren({ type, object: inflateAgain(pack, entry) }, entry.oid, entry.offset);
  }
  // What is left of the ref-deltas is based on objects outside the pack: a thin pack.
  for (const oid of [...byOid.keys()]) {
    if (!byOid.has(oid)) continue; // resolved meanwhile, below another external base
    let base: PackedObject | undefined;
    try {
      base = await external(oid);
    } catch (error) {
      throw new PackIndexError(`cannot read the delta base ${oid}: ${messageOf(error)}`);
    }
    if (!base) throw new PackIndexError(`thin pack: delta base ${oid} is in no pack here`);
    if (hashObject(base.type, base.object) !== oid) {
      throw new PackIndexError(`thin pack: the repository's copy of ${oid} is corrupt`);
    }
    bases.push({ ...base, oid });
    resolveChildren(base, oid, undefined);
  }
  const unresolved = entries.filter((entry) => entry.oid === undefined).length;
  if (unresolved > 0) throw new PackIndexError(`pack has ${unresolved} unresolved deltas`);
  return bases;
}

/**
 * `pack` with `bases` appended as undeltified entries (which are added to
 * `entries`), its object count and checksum updated: what
 * `git index-pack --fix-thin` makes of a thin pack.
 */
function appendBases(pack: Buffer, entries: Entry[], bases: readonly ExternalBase[]): Buffer {
  const parts = [Buffer.from(pack.subarray(0, pack.length - TRAILER_BYTES))];
  parts[0]!.writeUInt32BE(entries.length + bases.length, 8);
  let offset = pack.length - TRAILER_BYTES;
  for (const base of bases) {
    const raw = Buffer.concat([
      entryHeader(TYPE_CODES[base.type], base.object.length),
      deflateSync(base.object),
    ]);
    entries.push({ offset, type: TYPE_CODES[base.type], crc: crc32(raw), oid: base.oid });
    parts.push(raw);
    offset += raw.length;
  }
  const body = Buffer.concat(parts);
  return Buffer.concat([body, createHash('sha1').update(body).digest()]);
}

/** An entry's type-and-size header: 3 bits of type, the size in little-endian base-128. */
function entryHeader(type: number, size: number): Buffer {
  const bytes = [(type << 4) | (size & 15)];
  let rest = Math.floor(size / 16);
  while (rest > 0) {
    bytes[bytes.length - 1]! |= 0x80;
    bytes.push(rest & 0x7f);
    rest = Math.floor(rest / 128);
  }
  return Buffer.from(bytes);
}

/** The content of an undeltified entry, inflated once more. */
function inflateAgain(pack: Buffer, entry: Entry): Buffer {
  // Skip the type-and-size header: bytes up to the first without the continuation bit.
  let position = entry.offset;
  while (pack[position]! & 0x80) position++;
  position++;
  return inflateSync(pack.subarray(position, pack.length - TRAILER_BYTES));
}

/** The index version 2: header, fan-out, names, CRCs, offsets, large offsets, checksums. */
function writeIndex(entries: readonly Entry[], packChecksum: Buffer): Buffer {
  const sorted = entries
    .map((entry) => ({ name: Buffer.from(entry.oid!, 'hex'), entry }))
    .sort((a, b) => Buffer.compare(a.name, b.name) || a.entry.offset - b.entry.offset);
  const count = sorted.length;
  const fanout = Buffer.alloc(256 * 4);
  const names = Buffer.allocUnsafe(count * 20);
  const crcs = Buffer.allocUnsafe(count * 4);
  const offsets = Buffer.allocUnsafe(count * 4);
  const large: Buffer[] = [];
  const perFirstByte = new Uint32Array(256);
  sorted.forEach(({ name, entry }, i) => {
    perFirstByte[name[0]!]! += 1;
    name.copy(names, i * 20);
    crcs.writeUInt32BE(entry.crc >>> 0, i * 4);
    if (entry.offset < LARGE_OFFSET) {
      offsets.writeUInt32BE(entry.offset, i * 4);
    } else {
      offsets.writeUInt32BE((LARGE_OFFSET | large.length) >>> 0, i * 4);
      const wide = Buffer.allocUnsafe(8);
      wide.writeBigUInt64BE(BigInt(entry.offset));
      large.push(wide);
    }
  });
  // fanout[b]: how many names start with a byte <= b.
  let total = 0;
  for (let b = 0; b < 256; b++) {
    total += perFirstByte[b]!;
    fanout.writeUInt32BE(total, b * 4);
  }
  const body = Buffer.concat([IDX_HEADER, fanout, names, crcs, offsets, ...large, packChecksum]);
  return Buffer.concat([body, createHash('sha1').update(body).digest()]);
}

function hashObject(type: PackedObject['type'], data: Uint8Array): string {
  return createHash('sha1').update(`${type} ${data.length}\0`).update(data).digest('hex');
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
