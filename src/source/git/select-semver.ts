/**
 * The semver part of choosing a ref (select-ref.ts): tags named `1.2.3` or
 * `v1.2.3`, and the highest one a range admits. A module of its own because
 * node-semver builds some forty regular expressions when it loads (~5 ms of
 * every process): select-ref.ts imports it only for a `semver:` track.
 */
import type SemVer from 'semver/classes/semver.js';
// Only the functions used: the package's index loads every module of it (~11 ms at each start).
import compareBuild from 'semver/functions/compare-build.js';
import parseVersion from 'semver/functions/parse.js';
import satisfies from 'semver/functions/satisfies.js';
import validRange from 'semver/ranges/valid.js';

/** A tag whose name is a semver version. */
export interface SemverTag<T> {
  readonly entry: T;
  /** The tag's name without `refs/tags/`. */
  readonly name: string;
  readonly version: SemVer;
}

/** Tags whose name is a semver version, with the version. */
export function semverTags<T extends { readonly ref: string }>(refs: readonly T[]): SemverTag<T>[] {
  return refs.flatMap((entry) => {
    if (!entry.ref.startsWith('refs/tags/') || entry.ref.endsWith('^{}')) return [];
    const name = entry.ref.slice('refs/tags/'.length);
    // Strict parsing: `v1.2.3` and `1.2.3` count, `release-1.2` does not.
    const version = /^v?\d/.test(name) ? parseVersion(name) : null;
    return version ? [{ entry, name, version }] : [];
  });
}

/** Whether `range` is a valid range that `tag`'s version satisfies (a webhook's pushed tag). */
export function tagSatisfies<T>(tag: SemverTag<T>, range: string): boolean {
  return validRange(range) !== null && satisfies(tag.version, range);
}

/** The highest matching tag; else whether the range was invalid, or the semver tags there are. */
export type SemverChoice<T> =
  { readonly entry: T } | { readonly invalidRange: true } | { readonly tags: readonly string[] };

/**
 * The tag with the highest version `range` admits; prereleases only match a
 * range that names one (node-semver's rule). Equal versions (`v1.2.3` and
 * `1.2.3`) are ordered by name, so the choice is stable.
 */
export function chooseSemverTag<T extends { readonly ref: string }>(
  refs: readonly T[],
  range: string,
): SemverChoice<T> {
  if (validRange(range) === null) return { invalidRange: true };
  const tags = semverTags(refs);
  const matching = tags
    .filter((tag) => satisfies(tag.version, range))
    .sort(
      (a, b) =>
        compareBuild(b.version, a.version) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
    );
  const best = matching[0];
  if (best) return { entry: best.entry };
  return {
    tags: tags.sort((a, b) => compareBuild(b.version, a.version)).map((tag) => tag.name),
  };
}
