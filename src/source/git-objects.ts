/**
 * Reading objects of a repository on disk (a local repository or a cache)
 * with isomorphic-git, by gitdir.
 */
import fs from 'node:fs';
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

/** What an oid names in the repository, annotated tags peeled. */
export type PeeledObject =
  | { readonly kind: 'commit'; readonly oid: string; readonly tree: string }
  | { readonly kind: 'other'; readonly type: string }
  | { readonly kind: 'missing' };

/** Looks `oid` up, following annotated tags to what they point to. */
export async function peelObject({ gitdir, cache }: GitDir, oid: string): Promise<PeeledObject> {
  let current = oid;
  for (let depth = 0; depth <= MAX_TAG_DEPTH; depth++) {
    let object;
    try {
      object = await git.readObject({ fs, gitdir, oid: current, cache, format: 'parsed' });
    } catch (error) {
      if (error instanceof git.Errors.NotFoundError) return { kind: 'missing' };
      throw error;
    }
    // format 'parsed' gives a CommitObject for commits and a TagObject for tags.
    if (object.type === 'commit') {
      return { kind: 'commit', oid: current, tree: (object.object as CommitObject).tree };
    }
    if (object.type !== 'tag') return { kind: 'other', type: object.type };
    current = (object.object as TagObject).object;
  }
  return { kind: 'other', type: 'tag' };
}

/** Thin-pack bases can live in another pack; a chain longer than this is refused (cycles). */
const MAX_EXTERNAL_HOPS = 50;

/**
 * Tree and blob access for {@link readTreeFiles}, for one read operation:
 * the packs are listed when it first reads a blob (see pack-reader.ts), so
 * make a new reader after anything was written to the repository. Blobs
 * come from the packs directly; whatever the pack reader cannot give goes
 * through isomorphic-git as before.
 */
export function objectReader(dir: GitDir): ObjectReader {
  const { gitdir, cache } = dir;
  const { packed } = packedObjects(dir);
  return {
    async readTree(oid) {
      const { tree } = await git.readTree({ fs, gitdir, oid, cache });
      return tree as TreeEntry[];
    },
    async readBlob(oid) {
      const found = await packed(oid);
      if (found?.type === 'blob') return found.object;
      const { blob } = await git.readBlob({ fs, gitdir, oid, cache });
      return blob;
    },
  };
}

/**
 * Any object of the repository as it is now (its packs are listed on the
 * first read), undefined when it has none: for the external bases of a
 * thin pack being indexed (see pack-index.ts).
 */
export function repositoryObjects(dir: GitDir): ExternalReader {
  const { packed, viaGit } = packedObjects(dir);
  return async (oid) => (await packed(oid)) ?? (await viaGit(oid));
}

/** Reads from the packs (thin-pack bases from anywhere) and, as a fallback, through isomorphic-git. */
function packedObjects({ gitdir, cache }: GitDir): {
  packed: ExternalReader;
  viaGit: ExternalReader;
} {
  let packs: Promise<PackReader> | undefined;
  const viaGit = async (oid: string): Promise<PackedObject | undefined> => {
    try {
      const { type, object } = await git.readObject({ fs, gitdir, oid, cache, format: 'content' });
      // format 'content' gives the raw bytes of every type.
      return object instanceof Uint8Array &&
        (type === 'blob' || type === 'tree' || type === 'commit' || type === 'tag')
        ? { type, object }
        : undefined;
    } catch {
      return undefined; // the top-level read falls back to isomorphic-git, which reports it
    }
  };
  const packed = async (oid: string, hops: number): Promise<PackedObject | undefined> => {
    if (hops > MAX_EXTERNAL_HOPS) return undefined;
    packs ??= PackReader.open(gitdir);
    return (await packs).read(
      oid,
      async (base) => (await packed(base, hops + 1)) ?? (await viaGit(base)),
    );
  };
  return { packed: (oid) => packed(oid, 0), viaGit };
}
