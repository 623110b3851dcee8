/**
 * Which tracks a verified push concerns: same repository (by normalised URL)
 * and a ref the track follows.
 */
import type { Track } from '../../config/types.ts';
import { classifyReference } from '../git/select-ref.ts';
import { semverTags, tagSatisfies } from '../git/select-semver.ts';
import { normaliseRepositoryUrl } from './normalise-repository-url.ts';
import type { PushEvent } from './types.ts';

export { normaliseRepositoryUrl } from './normalise-repository-url.ts';

/** The track fields matching reads. */
export type MatchableTrack = Pick<
  Track,
  'name' | 'repository' | 'reference' | 'semver' | 'suspend' | 'bucket'
>;

/**
 * Names of the tracks, in the given order, that `event` should trigger a
 * fetch for:
 *
 * - the repository is one of the payload's URLs (see {@link normaliseRepositoryUrl});
 * - a branch name (`main`) matches a push to `refs/heads/main` and, since a
 *   short name may be a tag, to `refs/tags/main` (the fetch refuses names
 *   that are both); `refs/...` matches that ref only; `HEAD` matches the
 *   default branch, or any branch when the payload does not name it;
 * - a semver track matches a push of a tag (`1.2.3` or `v1.2.3`) that
 *   satisfies its range, with the same rules as choosing the tag to deploy;
 * - a track pinned to a full commit sha matches nothing: no push moves it.
 *
 * Suspended tracks are left out: they must not fetch, and the scheduled poll
 * catches up with the ref once they are resumed, so nothing is lost.
 */
export function matchTracks(event: PushEvent, tracks: readonly MatchableTrack[]): string[] {
  const urls = new Set(
    event.repositoryUrls.map(normaliseRepositoryUrl).filter((url) => url !== ''),
  );
  return tracks
    .filter(
      (track) =>
        !track.suspend &&
        // A bucket track has no Git repository: no Git host's push concerns it.
        track.bucket === undefined &&
        urls.has(normaliseRepositoryUrl(track.repository)) &&
        refMatches(event, track),
    )
    .map((track) => track.name);
}

function refMatches(event: PushEvent, track: MatchableTrack): boolean {
  const request = classifyReference(track);
  switch (request.kind) {
    case 'commit':
      return false;
    case 'full':
      if (request.ref !== 'HEAD') return event.ref === request.ref;
      return event.defaultBranch === undefined
        ? event.ref.startsWith('refs/heads/')
        : event.ref === `refs/heads/${event.defaultBranch}`;
    case 'name':
      return (
        event.ref === `refs/heads/${request.name}` || event.ref === `refs/tags/${request.name}`
      );
    case 'semver': {
      const [tag] = semverTags([{ ref: event.ref }]);
      return tag !== undefined && tagSatisfies(tag, request.range);
    }
  }
}
