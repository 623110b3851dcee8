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
import { readFile, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
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

/** An object directory: the repository's own, or one it borrows from (alternates). */
interface ObjectStore {
  /** The `objects` directory. */
  readonly dir: string;
  readonly packs: PackReader;
}

/** The objects of one repository (by its git directory), for one operation. */
export class ObjectReader implements TreeReader {
  private stores: Promise<ObjectStore[]> | undefined;

  constructor(private readonly gitdir: string) {}

  /** Lists the packs stored since the packs were first listed (the packs read so far are kept). */
  async refresh(): Promise<void> {
    if (this.stores) await Promise.all((await this.stores).map((store) => store.packs.refresh()));
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

  /**
   * Packs first (where nearly everything is), then the loose object; the
   * repository's own objects, then those of its alternates, as git looks.
   */
  private async readAny(oid: string, hops: number): Promise<PackedObject | undefined> {
    if (hops > MAX_EXTERNAL_HOPS) {
      throw new ObjectReadError(`git object ${oid}: delta bases chain across too many packs`);
    }
    for (const store of await this.objectStores()) {
      const packed = await store.packs.read(oid, (base) => this.readAny(base, hops + 1));
      const found = packed ?? readLoose(store.dir, oid);
      if (found) return found;
    }
    return undefined;
  }

  private objectStores(): Promise<ObjectStore[]> {
    this.stores ??= openStores(join(this.gitdir, 'objects'));
    return this.stores;
  }
}

/** Alternates of alternates are followed this deep, as git does (its limit is 5). */
const MAX_ALTERNATE_DEPTH = 5;

/**
 * The object directory `objects` and those it borrows from: each line of its
 * `info/alternates` names another (`git clone --shared` or `--reference`
 * writes one), absolute or relative to `objects`, and those can have
 * alternates of their own. Each directory is read once, however often named.
 */
async function openStores(objects: string): Promise<ObjectStore[]> {
  const dirs: string[] = [];
  const visit = async (dir: string, depth: number): Promise<void> => {
    if (dirs.includes(dir)) return;
    dirs.push(dir);
    for (const alternate of await alternatesOf(dir)) {
      if (depth >= MAX_ALTERNATE_DEPTH) {
        throw new ObjectReadError(
          `${join(dir, 'info', 'alternates')}: alternates nest more than ${MAX_ALTERNATE_DEPTH} deep`,
        );
      }
      await visit(alternate, depth + 1);
    }
  };
  await visit(resolve(objects), 0);
  return Promise.all(
    dirs.map(async (dir) => {
      // PackReader reads `<gitdir>/objects/pack`: an object directory is found by its parent.
      if (basename(dir) !== 'objects') {
        throw new ObjectReadError(
          `alternate object directory ${dir} is not named "objects"; only alternates that are another repository's objects directory are supported`,
        );
      }
      return { dir, packs: await PackReader.open(dirname(dir)) };
    }),
  );
}

/** The object directories `objects/info/alternates` names, resolved; none without the file. */
async function alternatesOf(objects: string): Promise<string[]> {
  const file = join(objects, 'info', 'alternates');
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return [];
    throw new ObjectReadError(`${file} cannot be read: ${messageOf(error)}`);
  }
  const lines = text.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('#'));
  return Promise.all(
    lines.map(async (line) => {
      if (line.startsWith('"')) {
        // git C-quotes a path with unusual characters; not worth reading for how rare it is.
        throw new ObjectReadError(`${file} names a quoted path (${line}), which is not supported`);
      }
      const dir = resolve(objects, line);
      const exists = await stat(dir).then(
        (found) => found.isDirectory(),
        () => false,
      );
      // git only warns and reads on; here every "not found" after it would hide the cause.
      if (!exists) throw new ObjectReadError(`${file} names ${dir}, which is not a directory`);
      return dir;
    }),
  );
}

/**
 * The loose object `oid` in the object directory `objects` (`xx/yyyy…`: zlib of
 * `<type> <size>\0<content>`), checked against its oid as git and isomorphic-git
 * check it; undefined when there is none.
 */
function readLoose(objects: string, oid: string): PackedObject | undefined {
  if (!/^[0-9a-f]{40}$/.test(oid)) return undefined;
  const path = join(objects, oid.slice(0, 2), oid.slice(2));
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
