/**
 * The one way the Git source reads objects — commits, tags, trees, blobs —
 * from a repository on disk: a local repository read in place, or the cache
 * of a remote one. Packed objects come from pack-reader.ts, loose ones are
 * read here; both are inflated with node's zlib.
 *
 * Why our own code and not isomorphic-git's readObject/readTree/readBlob:
 * isomorphic-git lists the pack directory, probes for a loose object and
 * inflates with pako on every call, and with a fresh cache lists and indexes
 * every pack again; reading a 500-file tree through it took several times
 * as long as through this reader (figures in docs/git-source.md). There is
 * no second path: isomorphic-git reads no object anywhere in the source; it
 * remains the test oracle (test/unit/source-pack.test.ts compares the two).
 *
 * Make one reader per operation: the packs are listed and indexed on the
 * first read and kept, and {@link ObjectReader.refresh} picks up a pack
 * stored since.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { inflateSync } from 'node:zlib';
import { messageOf } from '../../errors.ts';
import { PackReader, type PackedObject } from './pack-reader.ts';
import type { TreeEntry, TreeReader } from './read-tree-files.ts';

/** Annotated tags can point to tags; git stops peeling too at some depth. */
const MAX_TAG_DEPTH = 10;

/** Thin-pack bases can live in another pack; a chain longer than this is refused (cycles). */
const MAX_EXTERNAL_HOPS = 50;

const OBJECT_TYPES = new Set(['commit', 'tree', 'blob', 'tag']);

/** What an oid names in the repository, annotated tags peeled. */
export type PeeledObject =
  | { readonly kind: 'commit'; readonly oid: string; readonly tree: string }
  | { readonly kind: 'other'; readonly type: string }
  | { readonly kind: 'missing' };

/** An object that is missing, of the wrong type, damaged, or in a damaged pack; the message names it. */
export class ObjectReadError extends Error {
  override readonly name = 'ObjectReadError';
}

/** The objects of one repository (by its git directory), for one operation. */
export class ObjectReader implements TreeReader {
  private packs: Promise<PackReader> | undefined;

  constructor(private readonly gitdir: string) {}

  /** Lists the packs stored since the packs were first listed (the packs read so far are kept). */
  async refresh(): Promise<void> {
    if (this.packs) await (await this.packs).refresh();
  }

  /**
   * Any object, packed or loose, as its type and content; undefined when the
   * repository does not have it. Also the reader of a thin pack's external
   * bases (pack-index.ts), so it is a bound function.
   */
  readonly read = (oid: string): Promise<PackedObject | undefined> => this.readAny(oid, 0);

  /** Looks `oid` up, following annotated tags to what they point to. */
  async peel(oid: string): Promise<PeeledObject> {
    let current = oid;
    for (let depth = 0; depth <= MAX_TAG_DEPTH; depth++) {
      const object = await this.read(current);
      if (!object) return { kind: 'missing' };
      if (object.type === 'commit') {
        return { kind: 'commit', oid: current, tree: headerField(object.object, 'tree', current) };
      }
      if (object.type !== 'tag') return { kind: 'other', type: object.type };
      current = headerField(object.object, 'object', current);
    }
    return { kind: 'other', type: 'tag' };
  }

  async readTree(oid: string): Promise<readonly TreeEntry[]> {
    return parseTree(await this.readTyped(oid, 'tree'), oid);
  }

  async readBlob(oid: string): Promise<Uint8Array> {
    return this.readTyped(oid, 'blob');
  }

  private async readTyped(oid: string, type: 'tree' | 'blob'): Promise<Uint8Array> {
    const found = await this.read(oid);
    if (!found) throw new ObjectReadError(`git object ${oid} not found`);
    if (found.type !== type) {
      throw new ObjectReadError(`git object ${oid} is a ${found.type}, not a ${type}`);
    }
    return found.object;
  }

  /** Packs first (where nearly everything is), then the loose object. */
  private async readAny(oid: string, hops: number): Promise<PackedObject | undefined> {
    if (hops > MAX_EXTERNAL_HOPS) {
      throw new ObjectReadError(`git object ${oid}: delta bases chain across too many packs`);
    }
    const packs = await this.packReader();
    const packed = await packs.read(oid, (base) => this.readAny(base, hops + 1));
    return packed ?? this.readLoose(oid);
  }

  private packReader(): Promise<PackReader> {
    this.packs ??= PackReader.open(this.gitdir);
    return this.packs;
  }

  /**
   * The loose object `oid` (`objects/xx/yyyy…`: zlib of `<type> <size>\0<content>`),
   * checked against its oid as git and isomorphic-git check it; undefined when there is none.
   */
  private readLoose(oid: string): PackedObject | undefined {
    if (!/^[0-9a-f]{40}$/.test(oid)) return undefined;
    const path = join(this.gitdir, 'objects', oid.slice(0, 2), oid.slice(2));
    let compressed: Buffer;
    try {
      // Synchronously: a loose object is a few hundred bytes, read in ~20 µs, where the
      // promise API's four thread-pool round trips made reading 500 of them 10× slower.
      compressed = readFileSync(path);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
      throw new ObjectReadError(`loose git object ${oid} cannot be read: ${messageOf(error)}`);
    }
    let raw: Buffer;
    try {
      raw = inflateSync(compressed, { chunkSize: looseChunkSize(compressed.length) });
    } catch (error) {
      throw new ObjectReadError(`loose git object ${oid} does not inflate: ${messageOf(error)}`);
    }
    const nul = raw.indexOf(0);
    const [type, size] = raw.toString('latin1', 0, Math.max(nul, 0)).split(' ');
    const object = raw.subarray(nul + 1);
    const hash = createHash('sha1').update(raw).digest('hex');
    if (nul < 0 || !OBJECT_TYPES.has(type!) || Number(size) !== object.length || hash !== oid) {
      throw new ObjectReadError(`loose git object ${oid} is corrupt`);
    }
    return { type: type as PackedObject['type'], object };
  }
}

/**
 * The output chunk for inflating a loose object of `compressedBytes`: about
 * what it inflates to, at least 1 KB, at most 64 KB (a larger object takes
 * several chunks). Node's default, 16 KB, is a fresh allocation outside the
 * buffer pool on every call; for the few hundred bytes of a typical manifest
 * that made inflating 500 loose objects take ~9 instead of ~6.5 ms in a fresh
 * process (10 alternating runs).
 */
function looseChunkSize(compressedBytes: number): number {
  return Math.min(Math.max(compressedBytes * 4, 1024), 64 * 1024);
}

/** The oid on a commit's `tree` line or a tag's `object` line (the first lines of either). */
function headerField(object: Uint8Array, field: 'tree' | 'object', oid: string): string {
  const prefix = `${field} `;
  const line = Buffer.from(object.subarray(0, prefix.length + 40)).toString('latin1');
  const value = line.slice(prefix.length);
  if (!line.startsWith(prefix) || !/^[0-9a-f]{40}$/.test(value)) {
    throw new ObjectReadError(`malformed git object ${oid}: no "${field}" line`);
  }
  return value;
}

/**
 * The entries of a tree object (`<octal mode> <name>\0<20-byte oid>` each),
 * with modes and types as isomorphic-git's readTree gives them.
 */
export function parseTree(tree: Uint8Array, oid: string): TreeEntry[] {
  const bytes = Buffer.from(tree.buffer, tree.byteOffset, tree.byteLength);
  const entries: TreeEntry[] = [];
  let position = 0;
  while (position < bytes.length) {
    const space = bytes.indexOf(0x20, position);
    const nul = space < 0 ? -1 : bytes.indexOf(0, space + 1);
    if (space < 0 || nul < 0 || nul + 21 > bytes.length) {
      throw new ObjectReadError(`malformed git tree object ${oid}`);
    }
    const mode = normalMode(bytes.toString('latin1', position, space), oid);
    entries.push({
      mode,
      path: bytes.toString('utf8', space + 1, nul),
      oid: bytes.toString('hex', nul + 1, nul + 21),
      type: mode === '040000' ? 'tree' : mode === '160000' ? 'commit' : 'blob',
    });
    position = nul + 21;
  }
  return entries;
}

/** Git writes `40000` for trees, and old gits odd file modes (`100664`): normalised as isomorphic-git does. */
function normalMode(mode: string, oid: string): string {
  if (/^0?4/.test(mode)) return '040000';
  if (mode.startsWith('1006')) return '100644';
  if (mode.startsWith('1007')) return '100755';
  if (mode.startsWith('120')) return '120000';
  if (mode.startsWith('160')) return '160000';
  throw new ObjectReadError(`malformed git tree object ${oid}: unknown mode ${mode}`);
}
