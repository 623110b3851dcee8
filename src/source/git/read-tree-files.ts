/**
 * Reads the manifest files of a commit's tree under a subPath, from Git
 * objects only: no working tree is checked out, so nothing on disk (and no
 * symlink on disk) is ever followed.
 *
 * Symlinks (mode 120000) are resolved inside the tree, the way a checkout
 * would resolve them, and must stay inside the repository:
 * - in the subPath itself, a symlink to a directory inside the repository is
 *   followed (`deploy/current -> prod`);
 * - under the subPath, a symlink to a file inside the repository is read as
 *   that file, under the link's own path and judged by the link's name (what
 *   `kubectl apply -f dir` and Argo CD do); a symlink to a directory inside
 *   the repository is walked as if that directory were there, under the
 *   link's path (`apps/prod/base -> ../base` gives `apps/prod/base/...`), as
 *   a checkout and kustomize see it. Skipping it would drop its manifests
 *   without a word;
 * - a symlink anywhere under the subPath that points outside the repository
 *   (absolute, or `..` past the root) refuses the whole revision, as does a
 *   symlink loop (a file link chain, or a directory link to a directory that
 *   contains it), directory links nested or repeated past a limit, or a
 *   manifest-named link to nothing: skipping them would make objects look
 *   deleted from Git, and prune would remove them.
 * One read is bounded in files, bytes and tree entries (see MAX_FILES_PER_READ): a tree can
 * name one subtree many times, so a few objects can stand for billions of files.
 * Submodules (mode 160000) are not fetched and are skipped.
 */
import { posix } from 'node:path';
import { DEFAULT_RENDER_LIMITS } from '../../render/limits.ts';
import type { RevisionFile } from '../../render/types.ts';
import type { ReadScope } from '../ports.ts';
import { SubPathError, type GitErrorContext } from './errors.ts';

/** Case-insensitive like the render module: skipping `app.YAML` would look like deleted objects. */
const MANIFEST_EXTENSION = /\.(ya?ml|json)$/i;

/** Files the `manifests` scope reads besides manifests: ignore rules, and kustomize's extension-less name. */
const ALSO_READ = new Set(['.sourceignore', 'Kustomization']);

/** Whether the `manifests` scope reads a file of this name. */
export function isManifestScoped(name: string): boolean {
  return MANIFEST_EXTENSION.test(name) || ALSO_READ.has(posix.basename(name));
}

/** Symlinks followed while resolving one path; Linux's limit (ELOOP). */
const MAX_SYMLINK_HOPS = 40;

/**
 * Directory symlinks followed one inside another (a link in a linked directory...). Real
 * layouts nest one or two; a chain no loop check catches (each link to a new directory) stops here.
 */
export const MAX_NESTED_DIRECTORY_LINKS = 8;

/**
 * Directory symlinks followed in one read. Without a cap, a few directories of many links to
 * each other's parents (no loop) would read the same files millions of times: a commit anyone
 * with push access makes could exhaust the fetch's memory.
 */
export const MAX_DIRECTORY_LINKS = 256;

/**
 * Files one read returns again: a file whose blob the read already returned under another path.
 * A tree can name one subtree many times, and directory links name directories again, so a few
 * Git objects can stand for billions of files: 256 links to a directory of 2,000 manifests are
 * 512,000 files, and a tree of 32 entries naming the same subtree, four levels deep, is a million
 * files from five objects (no link at all). Only repeats count: a repository's own files are as
 * many as it holds (a kustomize or Helm track reads the whole repository, source code
 * included), and were read in full before; a real layout repeats a base directory or two, far
 * below 100,000 files.
 */
export const MAX_FILES_PER_READ = 100_000;

/**
 * Bytes of the files one read returns again (as {@link MAX_FILES_PER_READ} counts them): the
 * render limit per revision. The files are held in memory, and a kustomize or Helm track's are
 * also written for the renderer, in the fetch function's 1 GiB of memory and of /tmp.
 */
export const MAX_BYTES_PER_READ = DEFAULT_RENDER_LIMITS.maxTotalBytes;

/**
 * Tree entries one read looks at, read or skipped (files of other types, directories, links,
 * submodules): without it, a tree bomb of names the read skips (`README.md`) would take hours
 * without returning a file. Ten times the file cap: a repository holds fewer directories than files.
 */
export const MAX_ENTRIES_PER_READ = 1_000_000;

/** One entry of a Git tree, as isomorphic-git's readTree returns it. */
export interface TreeEntry {
  readonly mode: string;
  /** The entry's name in its tree (one path segment). */
  readonly path: string;
  readonly oid: string;
  readonly type: 'blob' | 'tree' | 'commit';
}

/** What reading a tree needs of a repository's objects: object-reader.ts, or a blob memo over it. */
export interface TreeReader {
  readTree(oid: string): Promise<readonly TreeEntry[]>;
  readBlob(oid: string): Promise<Uint8Array>;
}

const SYMLINK_MODE = '120000';

/** Where a path leads inside a tree, after following symlinks. */
type Resolution =
  | { readonly kind: 'tree' | 'blob'; readonly oid: string; readonly realPath: string[] }
  | { readonly kind: 'missing' | 'submodule' }
  | { readonly kind: 'escape'; readonly link: string; readonly target: string }
  | { readonly kind: 'loop'; readonly link: string };

/**
 * Splits a subPath into segments, or throws a {@link SubPathError} for one
 * that could leave the repository: absolute, a drive letter, backslashes, `..`.
 */
export function subPathSegments(subPath: string | undefined, context: GitErrorContext): string[] {
  if (subPath === undefined) return [];
  if (subPath.startsWith('/') || subPath.includes('\\') || /^[A-Za-z]:/.test(subPath)) {
    throw new SubPathError(
      `subPath "${subPath}" must be a relative path inside the repository, with "/" separators`,
      context,
    );
  }
  const segments = subPath.split('/').filter((segment) => segment !== '' && segment !== '.');
  if (segments.includes('..')) {
    throw new SubPathError(
      `subPath "${subPath}" must not contain ".." (it would leave the repository)`,
      context,
    );
  }
  return segments;
}

/**
 * The manifest files (`.yaml`, `.yml`, `.json`, any case) under `subPath` in
 * the tree `rootTree` of `revision`, recursively, with repository-relative
 * paths (through the subPath as written, even when it passes a symlink).
 */
export async function readTreeFiles(
  objects: TreeReader,
  rootTree: string,
  subPath: string | undefined,
  revision: string,
  context: GitErrorContext,
  scope: ReadScope = 'manifests',
): Promise<RevisionFile[]> {
  const wanted = scope === 'repository' ? () => true : isManifestScoped;
  const segments = subPathSegments(subPath, context);
  const shown = segments.join('/');
  const base = await resolvePath(objects, rootTree, segments, { left: MAX_SYMLINK_HOPS });
  switch (base.kind) {
    case 'tree':
      break;
    case 'missing':
      throw new SubPathError(`subPath "${shown}" does not exist at revision ${revision}`, context);
    case 'blob':
      throw new SubPathError(
        `subPath "${shown}" is a file at revision ${revision}, not a directory`,
        context,
      );
    case 'submodule':
      throw new SubPathError(
        `subPath "${shown}" is a submodule at revision ${revision}; submodules are not fetched`,
        context,
      );
    case 'escape':
      throw new SubPathError(
        `subPath "${shown}" leaves the repository at revision ${revision}: symlink "${base.link}" points to "${base.target}"`,
        context,
      );
    case 'loop':
      throw new SubPathError(
        `subPath "${shown}" cannot be resolved at revision ${revision}: symlink "${base.link}" is part of a loop`,
        context,
      );
  }

  const files: RevisionFile[] = [];
  let directoryLinks = 0;
  let entries = 0;
  let bytes = 0;
  /** Stops the read once it is over one of the per-read caps, naming the cap and where it was. */
  const refuseOver = (limit: number, what: string, path: string): never => {
    throw new SubPathError(
      `revision ${revision} has more than ${limit} ${what} to read (the limit of one read), ` +
        `reached at "${path}"; a tree that names a directory many times, or directory symlinks, ` +
        `can multiply them (files read again count); the revision is refused`,
      context,
    );
  };
  /** The size of each blob returned so far: a blob returned again counts against the caps. */
  const returned = new Map<string, number>();
  let repeats = 0;
  const keep = async (path: string, oid: string): Promise<void> => {
    const size = returned.get(oid);
    if (size !== undefined) {
      // Checked before reading: a tree bomb's next file costs nothing.
      if (repeats >= MAX_FILES_PER_READ) refuseOver(MAX_FILES_PER_READ, 'files', path);
      if (bytes + size >= MAX_BYTES_PER_READ) {
        refuseOver(MAX_BYTES_PER_READ, 'bytes of files', path);
      }
      repeats += 1;
      bytes += size;
    }
    const content = await objects.readBlob(oid);
    returned.set(oid, content.byteLength);
    files.push({ path, content });
  };
  /**
   * Walks `tree`, shown under `logical`, which is at `real` in the repository (they differ
   * below a followed symlink). `walked`: where the walk jumped so far, the base then each
   * followed link's target (see directoryLinkRefusal).
   */
  const walk = async (
    tree: string,
    logical: string[],
    real: string[],
    walked: readonly (readonly string[])[],
  ): Promise<void> => {
    for (const entry of await objects.readTree(tree)) {
      const path = [...logical, entry.path].join('/');
      entries += 1;
      if (entries > MAX_ENTRIES_PER_READ) refuseOver(MAX_ENTRIES_PER_READ, 'tree entries', path);
      if (entry.type === 'tree') {
        await walk(entry.oid, [...logical, entry.path], [...real, entry.path], walked);
      } else if (entry.mode === SYMLINK_MODE) {
        const link: Link = { path, realPath: [...real, entry.path], oid: entry.oid };
        const resolved = await resolveSymlink(objects, rootTree, link, revision, context);
        if (resolved.kind === 'blob') {
          if (wanted(path)) await keep(path, resolved.oid);
          continue;
        }
        if (resolved.kind !== 'tree') continue;
        directoryLinks += 1;
        const why = directoryLinkRefusal(resolved.realPath, real, walked, directoryLinks);
        if (why !== undefined) {
          const target = new TextDecoder().decode(await objects.readBlob(link.oid));
          throw new SubPathError(
            `symlink ${linkName(link)} points to "${target}" at revision ${revision}: ${why}`,
            context,
          );
        }
        await walk(resolved.oid, [...logical, entry.path], resolved.realPath, [
          ...walked,
          resolved.realPath,
        ]);
      } else if (entry.type === 'blob' && wanted(entry.path)) {
        await keep(path, entry.oid);
      }
      // Submodules (type commit) are skipped: their content is another repository's.
    }
  };
  await walk(base.oid, segments, base.realPath, [base.realPath]);
  if (scope === 'manifests')
    files.push(...(await ancestorIgnoreFiles(objects, rootTree, segments)));
  return files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/**
 * The `.sourceignore` files of the directories above the subPath (root
 * first): their rules reach into it. Plain blobs only; a symlinked one is
 * not followed outside the subPath.
 */
async function ancestorIgnoreFiles(
  objects: TreeReader,
  rootTree: string,
  segments: readonly string[],
): Promise<RevisionFile[]> {
  const found: RevisionFile[] = [];
  let tree: string | undefined = rootTree;
  for (let depth = 0; depth < segments.length && tree !== undefined; depth++) {
    const entries: readonly TreeEntry[] = await objects.readTree(tree);
    const ignoreFile = entries.find((e) => e.path === '.sourceignore' && e.type === 'blob');
    if (ignoreFile && ignoreFile.mode !== SYMLINK_MODE) {
      const dir = segments.slice(0, depth);
      found.push({
        path: [...dir, '.sourceignore'].join('/'),
        content: await objects.readBlob(ignoreFile.oid),
      });
    }
    // A symlinked directory on the way ends the walk: its target's rules are not its own.
    const next = entries.find((e) => e.path === segments[depth] && e.type === 'tree');
    tree = next?.oid;
  }
  return found;
}

/** A symlink met under the subPath. */
interface Link {
  /** Its path as read (through the subPath and followed links as written). */
  readonly path: string;
  /** Where it is in the repository. */
  readonly realPath: readonly string[];
  /** Its blob: the target. */
  readonly oid: string;
}

/** The link's name for messages: its path as read, and where it is when that differs. */
function linkName(link: Link): string {
  const real = link.realPath.join('/');
  return real === link.path ? `"${link.path}"` : `"${link.path}" (at "${real}")`;
}

/**
 * Why a symlink in directory `here` to directory `target` is not followed, or undefined.
 * `walked` holds where the walk jumped so far (the base, then each followed link's target);
 * `followed` counts the directory links of this read, this one included.
 */
function directoryLinkRefusal(
  target: readonly string[],
  here: readonly string[],
  walked: readonly (readonly string[])[],
  followed: number,
): string | undefined {
  // Walking a directory the walk is in again would meet this link again, endlessly.
  if ([...walked, here].some((directory) => isWithin(directory, target))) {
    return 'a directory the link is in or is reached through, so following it would never end (a symlink loop)';
  }
  if (walked.length > MAX_NESTED_DIRECTORY_LINKS) {
    return `more than ${MAX_NESTED_DIRECTORY_LINKS} directory symlinks inside one another`;
  }
  if (followed > MAX_DIRECTORY_LINKS) {
    return `more than ${MAX_DIRECTORY_LINKS} directory symlinks followed in one read`;
  }
  return undefined;
}

/**
 * What a symlink under the subPath leads to: a file or directory inside the repository, or
 * `skip` for one that leads to nothing read (a submodule, or a non-manifest name to nothing).
 * Throws when it escapes the repository, is part of a loop, or is a manifest name to nothing.
 */
async function resolveSymlink(
  objects: TreeReader,
  rootTree: string,
  link: Link,
  revision: string,
  context: GitErrorContext,
): Promise<Extract<Resolution, { kind: 'tree' | 'blob' }> | { kind: 'skip' }> {
  const resolved = await resolvePath(objects, rootTree, link.realPath, { left: MAX_SYMLINK_HOPS });
  switch (resolved.kind) {
    case 'blob':
    case 'tree':
      return resolved;
    case 'submodule':
      return { kind: 'skip' };
    case 'missing':
      if (!MANIFEST_EXTENSION.test(link.path)) return { kind: 'skip' };
      throw new SubPathError(
        `symlink ${linkName(link)} points to a file that does not exist at revision ${revision}`,
        context,
      );
    case 'escape': {
      // The link that escapes may be another one this link leads through.
      const escaping =
        resolved.link === link.realPath.join('/')
          ? linkName(link)
          : `"${resolved.link}" (reached from ${linkName(link)})`;
      throw new SubPathError(
        `symlink ${escaping} points outside the repository ("${resolved.target}") at revision ${revision}; the revision is refused`,
        context,
      );
    }
    case 'loop':
      throw new SubPathError(
        `symlink "${resolved.link}" is part of a loop at revision ${revision}`,
        context,
      );
  }
}

/**
 * Follows `segments` from the root tree, resolving symlinks on the way (a
 * relative target from the link's directory, as the filesystem would).
 * `hops` is shared along one resolution to stop loops.
 */
async function resolvePath(
  objects: TreeReader,
  rootTree: string,
  segments: readonly string[],
  hops: { left: number },
): Promise<Resolution> {
  let tree = rootTree;
  const realDir: string[] = [];
  for (const [index, name] of segments.entries()) {
    const entry = (await objects.readTree(tree)).find((candidate) => candidate.path === name);
    if (!entry) return { kind: 'missing' };
    if (entry.mode === SYMLINK_MODE) {
      const link = [...realDir, name].join('/');
      if (hops.left <= 0) return { kind: 'loop', link };
      hops.left -= 1;
      const target = new TextDecoder().decode(await objects.readBlob(entry.oid));
      const targetSegments = insideRoot(realDir, target);
      if (targetSegments === undefined) return { kind: 'escape', link, target };
      return resolvePath(
        objects,
        rootTree,
        [...targetSegments, ...segments.slice(index + 1)],
        hops,
      );
    }
    const last = index === segments.length - 1;
    if (entry.type === 'tree') {
      tree = entry.oid;
      realDir.push(name);
    } else if (entry.type === 'commit') {
      return { kind: 'submodule' };
    } else if (last) {
      return { kind: 'blob', oid: entry.oid, realPath: [...realDir, name] };
    } else {
      return { kind: 'missing' }; // a file where a directory was expected
    }
  }
  return { kind: 'tree', oid: tree, realPath: realDir };
}

/** Whether `path` is `directory` itself or inside it. */
function isWithin(path: readonly string[], directory: readonly string[]): boolean {
  return directory.length <= path.length && directory.every((name, i) => path[i] === name);
}

/** The segments `target` leads to from directory `dir`, or undefined when it leaves the repository. */
function insideRoot(dir: readonly string[], target: string): string[] | undefined {
  if (target === '' || posix.isAbsolute(target)) return undefined;
  const result = [...dir];
  for (const segment of target.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') {
      if (result.length === 0) return undefined;
      result.pop();
    } else {
      result.push(segment);
    }
  }
  return result;
}
