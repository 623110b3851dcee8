/**
 * Errors of the Git source. Every message starts with the track and names the
 * repository by its display URL, which never carries credentials: messages end
 * up in logs, status conditions and CLI output.
 */
import { DriftlessError } from '../../errors.ts';

/** Where a Git source error happened, for callers that want more than the message. */
export interface GitErrorContext {
  readonly track: string;
  /** The repository as shown to people: no credentials, ever. */
  readonly repository: string;
  readonly cause?: unknown;
}

/** Base of the Git source errors: carries the track and repository it is about. */
export abstract class GitSourceError extends DriftlessError {
  readonly track: string;
  readonly repository: string;

  /** `detail` is the message without the `track "<name>": ` prefix, which is added here. */
  constructor(detail: string, context: GitErrorContext) {
    super(
      `track "${context.track}": ${detail}`,
      context.cause === undefined ? undefined : { cause: context.cause },
    );
    this.track = context.track;
    this.repository = context.repository;
  }
}

/** The Git host refused the credentials (HTTP 401/403), or asked for some and the track has none. */
export class GitAuthError extends GitSourceError {
  readonly code = 'GIT_AUTH_FAILED';
}

/** A branch, tag, ref, commit or semver range that the repository does not have. */
export class GitRefNotFoundError extends GitSourceError {
  readonly code = 'GIT_REF_NOT_FOUND';
}

/** A short name that is both a branch and a tag: deploying either could be wrong. */
export class GitRefAmbiguousError extends GitSourceError {
  readonly code = 'GIT_REF_AMBIGUOUS';
}

/** The repository could not be reached or read: network, server error, broken cache or repository. */
export class GitFetchError extends GitSourceError {
  readonly code = 'GIT_FETCH_FAILED';
}

/** The repository location cannot be used: SSH, an unknown scheme, credentials in the URL, no repository at a path. */
export class GitRepositoryError extends GitSourceError {
  readonly code = 'GIT_REPOSITORY_INVALID';
}

/** The subPath is malformed, missing at the revision, or leaves the repository (`..`, symlinks). */
export class SubPathError extends GitSourceError {
  readonly code = 'GIT_SUBPATH_INVALID';
}
