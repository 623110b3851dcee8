/**
 * Choosing the ref a track follows from a repository's ref list: pure
 * functions over the list, so remote and local repositories resolve alike.
 */
import { GitRefAmbiguousError, GitRefNotFoundError, type GitErrorContext } from './errors.ts';
import { isFullCommitId } from '../../object-id.ts';

/** One ref of a repository, as a server advertises it or a local repository lists it. */
export interface RefEntry {
  /** Full name (`refs/heads/main`, `refs/tags/v1.0.0`) or `HEAD`. */
  readonly ref: string;
  /** What the ref points to: a commit, or the tag object of an annotated tag. */
  readonly oid: string;
  /** The commit an annotated tag points to, when known. */
  readonly peeled?: string;
  /** For a symbolic ref (`HEAD`), the ref it points to. */
  readonly target?: string;
}

/** What a track asks for, by the form of its reference. */
export type RefRequest =
  | { readonly kind: 'commit'; readonly sha: string }
  | { readonly kind: 'full'; readonly ref: string }
  | { readonly kind: 'name'; readonly name: string }
  | { readonly kind: 'semver'; readonly range: string };

const SHORT_SHA = /^[0-9a-f]{4,39}$/i;

/** How many refs an error message lists before "and N more". */
const LISTED_REFS = 8;

/**
 * Classifies a track's reference: a 40-hex commit sha, `refs/...` or `HEAD`
 * taken literally, or a short name (branch or tag). `semver` wins when set;
 * no reference at all means `main`, as the config defaults it.
 */
export function classifyReference(track: {
  readonly reference?: string | undefined;
  readonly semver?: string | undefined;
}): RefRequest {
  if (track.semver !== undefined) return { kind: 'semver', range: track.semver };
  const reference = track.reference ?? 'main';
  if (isFullCommitId(reference.toLowerCase()))
    return { kind: 'commit', sha: reference.toLowerCase() };
  if (reference.startsWith('refs/') || reference === 'HEAD')
    return { kind: 'full', ref: reference };
  return { kind: 'name', name: reference };
}

/** The chosen ref, or why none could be chosen (messages name the repository, not the track). */
export type RefSelection =
  | { readonly entry: RefEntry }
  | { readonly error: 'not-found' | 'ambiguous'; readonly message: string };

/**
 * The commit a ref points to, annotated tags peeled. By default what the ref
 * list says; a local repository lists names only and reads the commits.
 */
export type CommitOfRef = (entry: RefEntry) => Promise<string>;

const listedCommit: CommitOfRef = async (entry) => entry.peeled ?? entry.oid;

/**
 * Picks the ref `request` names from `refs`. A short name is a branch or a
 * tag; when it is both, the choice is refused rather than guessed, because a
 * tag created later must not silently change what a branch track deploys.
 * A semver range picks the highest version among tags named `1.2.3` or
 * `v1.2.3` (others are ignored); prereleases only match a range that names
 * one (node-semver's rule). When that version is tagged under both names on
 * different commits, the choice is refused for the same reason; `commitOf`
 * tells the commits apart. `commit` requests are not handled here.
 */
export async function selectRef(
  refs: readonly RefEntry[],
  request: Exclude<RefRequest, { kind: 'commit' }>,
  repository: string,
  commitOf: CommitOfRef = listedCommit,
): Promise<RefSelection> {
  switch (request.kind) {
    case 'full': {
      const entry = refs.find((candidate) => candidate.ref === request.ref);
      return entry
        ? { entry }
        : notFound(`ref "${request.ref}" not found in ${repository}${available(refs)}`);
    }
    case 'name': {
      const branch = refs.find((candidate) => candidate.ref === `refs/heads/${request.name}`);
      const tag = refs.find((candidate) => candidate.ref === `refs/tags/${request.name}`);
      if (branch && tag) {
        return {
          error: 'ambiguous',
          message: `reference "${request.name}" is both a branch and a tag in ${repository}; write refs/heads/${request.name} or refs/tags/${request.name}`,
        };
      }
      const entry = branch ?? tag;
      if (entry) return { entry };
      const hint = SHORT_SHA.test(request.name)
        ? '; abbreviated commit shas are not supported, use the full 40-hex sha'
        : '';
      return notFound(
        `reference "${request.name}" is neither a branch nor a tag in ${repository}${available(refs)}${hint}`,
      );
    }
    case 'semver':
      return selectSemver(refs, request.range, repository, commitOf);
  }
}

/** {@link selectRef}, throwing {@link GitRefNotFoundError} or {@link GitRefAmbiguousError}. */
export async function selectRefOrThrow(
  refs: readonly RefEntry[],
  request: Exclude<RefRequest, { kind: 'commit' }>,
  repository: string,
  context: GitErrorContext,
  commitOf?: CommitOfRef,
): Promise<RefEntry> {
  const selection = await selectRef(refs, request, repository, commitOf);
  if (!('error' in selection)) return selection.entry;
  throw selection.error === 'ambiguous'
    ? new GitRefAmbiguousError(selection.message, context)
    : new GitRefNotFoundError(selection.message, context);
}

async function selectSemver(
  refs: readonly RefEntry[],
  range: string,
  repository: string,
  commitOf: CommitOfRef,
): Promise<RefSelection> {
  // Loaded for semver tracks only (see select-semver.ts).
  const { chooseSemverTag, semverTags } = await import('./select-semver.ts');
  const choice = chooseSemverTag(refs, range);
  if ('entry' in choice) {
    const tags = semverTags(refs);
    const { version } = tags.find((tag) => tag.entry === choice.entry)!;
    // Build metadata counts: chooseSemverTag orders 1.2.3+a and 1.2.3+b, as it always has.
    const same = tags.filter(
      (tag) =>
        tag.version.version === version.version &&
        tag.version.build.join('.') === version.build.join('.'),
    );
    if (same.length > 1) {
      const commits = await Promise.all(same.map((tag) => commitOf(tag.entry)));
      if (new Set(commits).size > 1) {
        const names = same.map((tag) => tag.name).sort();
        return {
          error: 'ambiguous',
          message: `version ${version.version} (the newest in semver range "${range}") is tagged ${names.join(' and ')} in ${repository}, on different commits; delete one of the tags, or follow one with reference: refs/tags/<tag> instead of semver`,
        };
      }
    }
    return { entry: choice.entry };
  }
  if ('invalidRange' in choice) return notFound(`semver range "${range}" is not valid`);
  return notFound(
    `no tag matching semver range "${range}" in ${repository} (${
      choice.tags.length === 0 ? 'it has no semver tags' : `semver tags: ${listed(choice.tags)}`
    })`,
  );
}

function notFound(message: string): RefSelection {
  return { error: 'not-found', message };
}

/** ` (available: main, v1.0.0, ...)`: branches first, then tags, then other refs. */
function available(refs: readonly RefEntry[]): string {
  const rank = (ref: string): number =>
    ref.startsWith('refs/heads/') ? 0 : ref.startsWith('refs/tags/') ? 1 : 2;
  const names = refs
    .filter((entry) => entry.ref !== 'HEAD' && !entry.ref.endsWith('^{}'))
    .map((entry) => entry.ref)
    .sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0))
    .map((ref) => ref.replace(/^refs\/(heads|tags)\//, ''));
  return names.length === 0 ? ' (it has no branches or tags)' : ` (available: ${listed(names)})`;
}

function listed(names: readonly string[]): string {
  const shown = names.slice(0, LISTED_REFS).join(', ');
  return names.length > LISTED_REFS ? `${shown} and ${names.length - LISTED_REFS} more` : shown;
}
