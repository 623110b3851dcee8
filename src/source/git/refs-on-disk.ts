/**
 * The refs of a repository on this machine, read from its files: loose refs
 * under `refs/`, the `packed-refs` file, and `HEAD` (symbolic or detached).
 * The one ref reader of the Git source: local repositories' refs and the
 * cache's `refs/driftless/*` (which isomorphic-git writes).
 *
 * Our own code rather than isomorphic-git's listRefs/resolveRef because of
 * what it costs a command that only resolves a ref: loading isomorphic-git
 * takes ~15 ms of every `driftless sync` of a local repository whose
 * revision is stored already, and its resolve ~15 ms more, where reading
 * these few files takes about a millisecond (`npm run bench -- cli-process`).
 * isomorphic-git stays the oracle: test/unit/source-refs-on-disk.test.ts compares
 * both on repositories git itself wrote (loose, packed, peeled tags,
 * symbolic and detached HEAD). Reftable repositories are read by neither.
 *
 * The files are read synchronously, as the object reader reads loose objects:
 * each is a few dozen bytes, read in microseconds, where a promise's round
 * trip through the thread pool also waits behind whatever else the event loop
 * has queued (the cluster's discovery answers, early in a sync): resolving a
 * branch took 4-18 ms that way, about 1 ms now.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isFullCommitId } from '../../object-id.ts';

/** How many symbolic refs are followed before giving up (git stops at 5 too). */
const MAX_SYMBOLIC_DEPTH = 5;

/** One ref's file content: an object id, or the ref it points to. */
export type RefValue = { readonly oid: string } | { readonly target: string };

/** Thrown when a ref does not exist or cannot be followed; `ref` names it. */
export class RefNotOnDiskError extends Error {
  constructor(
    readonly ref: string,
    message: string,
  ) {
    super(message);
    this.name = 'RefNotOnDiskError';
  }
}

const isMissing = (error: unknown): boolean =>
  (error as NodeJS.ErrnoException).code === 'ENOENT' ||
  (error as NodeJS.ErrnoException).code === 'ENOTDIR' ||
  (error as NodeJS.ErrnoException).code === 'EISDIR';

/** A file's text, or undefined when there is no such file. */
function readIfPresent(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw error;
  }
}

/** `packed-refs` as name -> oid; peeled lines (`^<oid>`) and the header are not refs. */
function packedRefs(gitdir: string): Map<string, string> {
  const refs = new Map<string, string>();
  const text = readIfPresent(join(gitdir, 'packed-refs'));
  for (const line of (text ?? '').split('\n')) {
    if (line === '' || line.startsWith('#') || line.startsWith('^')) continue;
    const space = line.indexOf(' ');
    if (space === 40) refs.set(line.slice(41).trim(), line.slice(0, 40).toLowerCase());
  }
  return refs;
}

/**
 * Whether a symbolic ref's target names a ref under `refs/`, as git requires
 * ("refusing to point HEAD outside of refs/"): its file is then inside the
 * git directory, whatever a repository's files say.
 */
function isRefUnderRefs(target: string): boolean {
  const parts = target.split('/');
  return (
    parts[0] === 'refs' &&
    parts.length > 1 &&
    parts.every((p) => p !== '' && p !== '.' && p !== '..')
  );
}

function parseLoose(ref: string, text: string): RefValue {
  const value = text.trim();
  if (value.startsWith('ref: ')) {
    const target = value.slice('ref: '.length).trim();
    if (!isRefUnderRefs(target)) {
      throw new RefNotOnDiskError(
        ref,
        `ref ${ref} points outside refs/ (${JSON.stringify(target)})`,
      );
    }
    return { target };
  }
  if (isFullCommitId(value.toLowerCase())) return { oid: value.toLowerCase() };
  throw new RefNotOnDiskError(ref, `ref ${ref} holds neither an object id nor a ref`);
}

/** The file content of `ref` (`HEAD`, `refs/...`): loose first, as git reads it, then packed. */
export async function readRef(gitdir: string, ref: string): Promise<RefValue | undefined> {
  const loose = readIfPresent(join(gitdir, ref));
  if (loose !== undefined) return parseLoose(ref, loose);
  const packed = packedRefs(gitdir).get(ref);
  return packed === undefined ? undefined : { oid: packed };
}

/** The object id `ref` names, following symbolic refs; {@link RefNotOnDiskError} when none. */
export async function resolveRef(gitdir: string, ref: string): Promise<string> {
  let name = ref;
  for (let depth = 0; depth <= MAX_SYMBOLIC_DEPTH; depth++) {
    const value = await readRef(gitdir, name);
    if (value === undefined) {
      throw new RefNotOnDiskError(
        ref,
        name === ref
          ? `ref ${ref} not found`
          : `ref ${ref} points to ${name}, which does not exist`,
      );
    }
    if ('oid' in value) return value.oid;
    name = value.target;
  }
  throw new RefNotOnDiskError(ref, `ref ${ref}: more than ${MAX_SYMBOLIC_DEPTH} symbolic refs`);
}

/** Full names of the loose refs under `dir` (`refs/heads/main`, ...). */
function looseRefNames(gitdir: string, dir: string): string[] {
  let entries;
  try {
    entries = readdirSync(join(gitdir, dir), { withFileTypes: true });
  } catch (error) {
    if (isMissing(error)) return [];
    throw error;
  }
  return entries.flatMap((entry) =>
    entry.isDirectory()
      ? looseRefNames(gitdir, `${dir}/${entry.name}`)
      : // A `.lock` file is a ref being written, not a ref (git's naming rule).
        entry.isFile() && !entry.name.endsWith('.lock')
        ? [`${dir}/${entry.name}`]
        : [],
  );
}

/** Every ref's full name under `refs/`, loose and packed, sorted; HEAD is not among them. */
export async function listRefNames(gitdir: string): Promise<string[]> {
  const loose = looseRefNames(gitdir, 'refs');
  return [...new Set([...loose, ...packedRefs(gitdir).keys()])].sort();
}
