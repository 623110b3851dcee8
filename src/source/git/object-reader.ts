/**
 * Reading the objects of a repository on disk (a local repository or a
 * cache), by gitdir: straight from its packs with node's zlib (see
 * pack-reader.ts), and through isomorphic-git for everything else — loose
 * objects, and packs the pack reader cannot read, which isomorphic-git then
 * reads or reports as before.
 */
import fs from 'node:fs';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import git, { type CommitObject, type TagObject } from 'isomorphic-git';
import { PackReader, type ExternalReader, type PackedObject } from './pack-reader.ts';
import type { ObjectReader, TreeEntry } from './read-tree-files.ts';

/** A repository on disk; `cache` is isomorphic-git's object cache, shared by the calls of one operation. */
export interface GitDir {
  readonly gitdir: string;
  readonly cache: object;
}

/** Annotated tags can point to tags; git stops peeling too at some depth. */
const MAX_TAG_DEPTH = 10;

/** Thin-pack bases can live in another pack; a chain longer than this is refused (cycles). */
const MAX_EXTERNAL_HOPS = 50;

/** What an oid names in the repository, annotated tags peeled. */
export type PeeledObject =
  | { readonly kind: 'commit'; readonly oid: string; readonly tree: string }
  | { readonly kind: 'other'; readonly type: string }
  | { readonly kind: 'missing' };

/** One object met while peeling: a commit (its tree), a tag (what it points to), or another type. */
type PeelStep =
  | { readonly kind: 'commit' | 'tag'; readonly points: string }
  | { readonly kind: 'other'; readonly type: string };

/**
 * The objects of one repository for one operation: its packs are listed and
 * indexed on the first read and kept, so make a new one per operation, and
 * call {@link refresh} after storing a pack in it.
 */
export class RepositoryObjects implements ObjectReader {
  private packs: Promise<PackReader> | undefined;

  constructor(private readonly dir: GitDir) {}

  /** Lists the packs stored since the packs were first listed (the packs read so far are kept). */
  async refresh(): Promise<void> {
    if (this.packs) await (await this.packs).refresh();
  }

  /** Any object of the repository, undefined when it has none: for the external bases of a thin pack. */
  readonly external: ExternalReader = async (oid) =>
    (await this.packed(oid, 0)) ?? (await this.viaGit(oid));

  /** Looks `oid` up, following annotated tags to what they point to. */
  async peel(oid: string): Promise<PeeledObject> {
    let current = oid;
    for (let depth = 0; depth <= MAX_TAG_DEPTH; depth++) {
      const object = await this.readForPeel(current);
      if (!object) return { kind: 'missing' };
      if (object.kind === 'other') return object;
      if (object.kind === 'commit') return { kind: 'commit', oid: current, tree: object.points };
      current = object.points;
    }
    return { kind: 'other', type: 'tag' };
  }

  async readTree(oid: string): Promise<readonly TreeEntry[]> {
    const found = await this.packed(oid, 0);
    if (found?.type === 'tree') return parseTree(found.object, oid);
    const { tree } = await git.readTree({
      fs,
      gitdir: this.dir.gitdir,
      oid,
      cache: this.dir.cache,
    });
    return tree as TreeEntry[];
  }

  async readBlob(oid: string): Promise<Uint8Array> {
    const found = await this.packed(oid, 0);
    if (found?.type === 'blob') return found.object;
    const { blob } = await git.readBlob({
      fs,
      gitdir: this.dir.gitdir,
      oid,
      cache: this.dir.cache,
    });
    return blob;
  }

  /**
   * A commit (with its tree) or a tag (with the object it points to), or
   * only the type of anything else; undefined when the repository lacks it.
   */
  private async readForPeel(oid: string): Promise<PeelStep | undefined> {
    const found = await this.packed(oid, 0);
    if (found) {
      if (found.type === 'commit')
        return { kind: 'commit', points: headerField(found.object, 'tree', oid) };
      if (found.type === 'tag')
        return { kind: 'tag', points: headerField(found.object, 'object', oid) };
      return { kind: 'other', type: found.type };
    }
    // Neither loose nor in a pack this reader indexed: missing, without asking isomorphic-git
    // (which would list and index every pack again to say so).
    if ((await this.packReader()).complete && !(await this.hasLoose(oid))) return undefined;
    let object;
    try {
      object = await git.readObject({
        fs,
        gitdir: this.dir.gitdir,
        oid,
        cache: this.dir.cache,
        format: 'parsed',
      });
    } catch (error) {
      if (error instanceof git.Errors.NotFoundError) return undefined;
      throw error;
    }
    // format 'parsed' gives a CommitObject for commits and a TagObject for tags.
    if (object.type === 'commit')
      return { kind: 'commit', points: (object.object as CommitObject).tree };
    if (object.type === 'tag') return { kind: 'tag', points: (object.object as TagObject).object };
    return { kind: 'other', type: object.type };
  }

  private packReader(): Promise<PackReader> {
    this.packs ??= PackReader.open(this.dir.gitdir);
    return this.packs;
  }

  private async packed(oid: string, hops: number): Promise<PackedObject | undefined> {
    if (hops > MAX_EXTERNAL_HOPS) return undefined;
    return (await this.packReader()).read(
      oid,
      async (base) => (await this.packed(base, hops + 1)) ?? (await this.viaGit(base)),
    );
  }

  private async viaGit(oid: string): Promise<PackedObject | undefined> {
    try {
      const { type, object } = await git.readObject({
        fs,
        gitdir: this.dir.gitdir,
        oid,
        cache: this.dir.cache,
        format: 'content',
      });
      // format 'content' gives the raw bytes of every type.
      return object instanceof Uint8Array &&
        (type === 'blob' || type === 'tree' || type === 'commit' || type === 'tag')
        ? { type, object }
        : undefined;
    } catch {
      return undefined; // the top-level read falls back to isomorphic-git, which reports it
    }
  }

  private async hasLoose(oid: string): Promise<boolean> {
    const path = join(this.dir.gitdir, 'objects', oid.slice(0, 2), oid.slice(2));
    return access(path).then(
      () => true,
      () => false,
    );
  }
}

/** The oid on a commit's `tree` line or a tag's `object` line (the first lines of either). */
function headerField(object: Uint8Array, field: 'tree' | 'object', oid: string): string {
  const prefix = `${field} `;
  const line = Buffer.from(object.subarray(0, prefix.length + 40)).toString('latin1');
  const value = line.slice(prefix.length);
  if (!line.startsWith(prefix) || !/^[0-9a-f]{40}$/.test(value)) {
    throw new Error(`malformed git object ${oid}: no "${field}" line`);
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
      throw new Error(`malformed git tree object ${oid}`);
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
  throw new Error(`malformed git tree object ${oid}: unknown mode ${mode}`);
}
