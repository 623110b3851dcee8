/**
 * The Git source port: resolve a track's reference to a commit, and read the
 * files of a commit. Implemented in `git/` (see docs/git-source.md).
 */
import type { Track } from '../config/types.ts';
import type { RevisionFile } from '../render/types.ts';

/** What a track needs to be fetched: its repository, reference and credentials. */
export type TrackSource = Pick<
  Track,
  'name' | 'repository' | 'reference' | 'semver' | 'subPath' | 'auth'
>;

export interface ResolvedRevision {
  /** Full commit sha. */
  readonly revision: string;
  /** The ref it was resolved from, e.g. `refs/heads/main` or `refs/tags/v1.2.0`. */
  readonly ref: string;
}

export interface GitSource {
  /** Resolves the track's reference (branch, tag, sha, refs/..., or semver range) to a commit. */
  resolve(track: TrackSource): Promise<ResolvedRevision>;
  /**
   * The manifest files of `revision` under the track's subPath, read from the
   * commit's tree (no working-tree checkout); paths are repository-relative.
   */
  readFiles(track: TrackSource, revision: string): Promise<RevisionFile[]>;
}
