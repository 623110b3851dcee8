/**
 * Reading objects of a repository on disk (a local repository or a cache)
 * with isomorphic-git, by gitdir.
 */
import fs from 'node:fs';
import git, { type CommitObject, type TagObject } from 'isomorphic-git';
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

/** Tree and blob access for {@link readTreeFiles}. */
export function objectReader({ gitdir, cache }: GitDir): ObjectReader {
  return {
    async readTree(oid) {
      const { tree } = await git.readTree({ fs, gitdir, oid, cache });
      return tree as TreeEntry[];
    },
    async readBlob(oid) {
      const { blob } = await git.readBlob({ fs, gitdir, oid, cache });
      return blob;
    },
  };
}
