/**
 * Choosing the ref a track follows from a repository's ref list: pure
 * functions over the list, so remote and local repositories resolve alike.
 */
// Only the functions used: the package's index loads every module of it (~11 ms at each start).
import type SemVer from 'semver/classes/semver.js';
import compareBuild from 'semver/functions/compare-build.js';
import parseVersion from 'semver/functions/parse.js';
import satisfies from 'semver/functions/satisfies.js';
import validRange from 'semver/ranges/valid.js';
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
 * Picks the ref `request` names from `refs`. A short name is a branch or a
 * tag; when it is both, the choice is refused rather than guessed, because a
 * tag created later must not silently change what a branch track deploys.
 * A semver range picks the highest version among tags named `1.2.3` or
 * `v1.2.3` (others are ignored); prereleases only match a range that names
 * one (node-semver's rule). `commit` requests are not handled here.
 */
export function selectRef(
  refs: readonly RefEntry[],
  request: Exclude<RefRequest, { kind: 'commit' }>,
  repository: string,
): RefSelection {
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
      return selectSemver(refs, request.range, repository);
  }
}

/** {@link selectRef}, throwing {@link GitRefNotFoundError} or {@link GitRefAmbiguousError}. */
export function selectRefOrThrow(
  refs: readonly RefEntry[],
  request: Exclude<RefRequest, { kind: 'commit' }>,
  repository: string,
  context: GitErrorContext,
): RefEntry {
  const selection = selectRef(refs, request, repository);
  if (!('error' in selection)) return selection.entry;
  throw selection.error === 'ambiguous'
    ? new GitRefAmbiguousError(selection.message, context)
    : new GitRefNotFoundError(selection.message, context);
}

/** Tags whose name is a semver version, with the version. */
export function semverTags(
  refs: readonly RefEntry[],
): { readonly entry: RefEntry; readonly name: string; readonly version: SemVer }[] {
  return refs.flatMap((entry) => {
    if (!entry.ref.startsWith('refs/tags/') || entry.ref.endsWith('^{}')) return [];
    const name = entry.ref.slice('refs/tags/'.length);
    // Strict parsing: `v1.2.3` and `1.2.3` count, `release-1.2` does not.
    const version = /^v?\d/.test(name) ? parseVersion(name) : null;
    return version ? [{ entry, name, version }] : [];
  });
}

function selectSemver(refs: readonly RefEntry[], range: string, repository: string): RefSelection {
  if (validRange(range) === null) {
    return notFound(`semver range "${range}" is not valid`);
  }
  const tags = semverTags(refs);
  const matching = tags
    .filter((tag) => satisfies(tag.version, range))
    // Highest first; equal versions (`v1.2.3` and `1.2.3`) by name, so the choice is stable.
    .sort(
      (a, b) =>
        compareBuild(b.version, a.version) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
    );
  const best = matching[0];
  if (best) return { entry: best.entry };
  const names = tags.sort((a, b) => compareBuild(b.version, a.version)).map((tag) => tag.name);
  return notFound(
    `no tag matching semver range "${range}" in ${repository} (${
      names.length === 0 ? 'it has no semver tags' : `semver tags: ${listed(names)}`
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
