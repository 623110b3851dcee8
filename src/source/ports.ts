/**
 * The Git source port: resolve a track's reference to a commit, and read the
 * files of a commit. Implemented in `git/` (see docs/git-source.md).
 */
import type { Track } from '../config/types.ts';
import type { RevisionFile } from '../render/types.ts';
import type { JobScope } from './job-scope.ts';

/** What a track needs to be fetched: its repository, reference and credentials. */
export type TrackSource = Pick<
  Track,
  'name' | 'repository' | 'reference' | 'semver' | 'subPath' | 'auth' | 'verify' | 'bucket'
>;

export interface ResolvedRevision {
  /** Full commit sha. */
  readonly revision: string;
  /** The ref it was resolved from, e.g. `refs/heads/main` or `refs/tags/v1.2.0`. */
  readonly ref: string;
}

/** What {@link GitSource.readFiles} reads. */
export type ReadScope = 'manifests' | 'repository';

/** One commit to push (two-way sync's write-back). */
export interface CommitRequest {
  readonly branch: string;
  readonly author: { readonly name: string; readonly email: string };
  readonly message: string;
  /**
   * The changed files (path -> content) given the files of the branch head;
   * called again on the new head when a push is refused because the branch
   * moved. An empty map: nothing to commit.
   */
  readonly edit: (
    read: (path: string) => Promise<string | undefined>,
  ) => Promise<Map<string, string>>;
}

/** What a commit request came to. */
export interface CommitResult {
  /** The pushed commit, or null when there was nothing to commit. */
  readonly commit: string | null;
  /** Pushes tried (more than one: the branch moved meanwhile). */
  readonly attempts: number;
}

/** The commit a revision was rendered from, for people (the dashboard). */
export interface CommitInfo {
  /** The whole message. */
  readonly message: string;
  /** `Name <email>`. */
  readonly author: string;
  /** ISO-8601 commit time. */
  readonly date: string;
}

/** What a caller passes with a call that may reach the network. */
export interface SourceCall {
  /**
   * The job's: once aborted (Ctrl-C, a function's deadline, `serve` stopping), the request
   * under way is cancelled rather than left to run to its own timeout.
   */
  readonly signal?: AbortSignal | undefined;
  /**
   * The job the call belongs to (one per job, never reused): a cached commit is read only once
   * the track has reached the server with its credentials, and within the job a contact of an
   * earlier call (the resolve's ref advertisement) counts. Without it each call checks anew.
   */
  readonly job?: JobScope | undefined;
}

export interface GitSource {
  /** Resolves the track's reference (branch, tag, sha, refs/..., or semver range) to a commit. */
  resolve(track: TrackSource, call?: SourceCall): Promise<ResolvedRevision>;
  /**
   * Files of `revision`, read from the commit's tree (no working-tree
   * checkout); paths are repository-relative. `manifests` (the default): the
   * manifest files under the track's subPath, with the `.sourceignore` files
   * that apply to them and a `Kustomization`; `repository`: every file of the
   * repository, for renderers that read a directory (kustomize, helm).
   */
  readFiles(
    track: TrackSource,
    revision: string,
    scope?: ReadScope,
    call?: SourceCall,
  ): Promise<RevisionFile[]>;
  /**
   * Checks that `revision` is signed by one of the track's `verify.keys`
   * (source/verify-signature.ts); resolves with the signer, throws a
   * VerificationError otherwise. Nothing to check without `verify`. Every
   * real source has it; a test double of a source without signatures may
   * leave it out, and then a track with `verify` is refused.
   */
  verifyCommit?(
    track: TrackSource,
    revision: string,
    call?: SourceCall,
  ): Promise<string | undefined>;
  /** The message, author and time of commit `revision`; undefined for a source without commits. */
  describeCommit?(track: TrackSource, revision: string): Promise<CommitInfo | undefined>;
  /**
   * Commits to a branch of the track's repository and pushes, with the
   * track's credentials (git/push-commit.ts). Undefined for a source that
   * cannot push (a bucket, a test double). An aborted `call.signal` cancels the clone or push
   * under way; the call then fails with the signal's InterruptedError.
   */
  commit?(track: TrackSource, request: CommitRequest, call?: SourceCall): Promise<CommitResult>;
}
