/**
 * Translation of isomorphic-git and network errors into the typed errors of
 * the source module (the Powertools convention: adapters translate, callers
 * match on codes). The original error travels as `cause`; it never holds
 * credentials, because they are never part of a URL here.
 */
import git from 'isomorphic-git';
import { DriftlessError, InterruptedError, messageOf } from '../../errors.ts';
import { GitAuthError, GitFetchError, GitRepositoryError, type GitErrorContext } from './errors.ts';
import { UnsupportedObjectFormatError } from './upload-pack.ts';

/** Node's codes for a host that cannot be reached at all. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
]);

/**
 * A typed error for `error`, raised while talking to the repository in
 * `context`. `authenticated` says whether credentials were offered, which
 * decides the advice of a 401.
 */
export function translateGitError(
  error: unknown,
  context: GitErrorContext,
  authenticated: boolean,
): DriftlessError {
  if (error instanceof DriftlessError) return error;
  const url = context.repository;
  const withCause = { ...context, cause: error };
  if (error instanceof UnsupportedObjectFormatError) {
    // Worded as for a local SHA-256 repository (local-repository.ts).
    const kind = error.format === 'sha256' ? 'SHA-256' : `"${error.format}"`;
    return new GitRepositoryError(
      `${url} is a ${kind} repository (its server advertises object-format=${error.format}); ${kind} repositories are not supported yet`,
      withCause,
    );
  }
  if (error instanceof git.Errors.HttpError) {
    const status = error.data.statusCode;
    if (status === 401) {
      return new GitAuthError(
        authenticated
          ? `authentication failed for ${url} (check the track's auth secret)`
          : `authentication required by ${url}, and the track has no auth (add auth: {type: token, secret: ...})`,
        withCause,
      );
    }
    if (status === 403) {
      return new GitAuthError(
        `access denied to ${url} (HTTP 403; check that the track's auth secret grants read access)`,
        withCause,
      );
    }
    if (status === 404) {
      // Hosts answer 404, not 401, for private repositories the credentials cannot see.
      return new GitFetchError(
        `repository ${url} not found (HTTP 404; check the URL${authenticated ? ' and that the credentials can read it' : ''})`,
        withCause,
      );
    }
    return new GitFetchError(
      `${url} answered HTTP ${status} ${error.data.statusMessage}`,
      withCause,
    );
  }
  const code = (error as { code?: unknown } | undefined)?.code;
  const message = messageOf(error);
  if (typeof code === 'string' && NETWORK_CODES.has(code)) {
    return new GitFetchError(`cannot reach ${url}: ${message}`, withCause);
  }
  return new GitFetchError(`fetching from ${url} failed: ${message}`, withCause);
}

/**
 * A write-back commit could not be pushed (two-way sync): the branch is
 * missing, the credentials may not write, the host refused or could not be
 * reached. Its message names the push, the repository and the branch.
 */
export class WriteBackPushError extends DriftlessError {
  readonly code = 'GIT_PUSH_FAILED';
}

/** Where a write-back push went: the repository as people know it (no credentials) and the branch. */
export interface PushErrorContext {
  readonly repository: string;
  readonly branch: string;
  /** Whether credentials were offered, which decides the advice of a 401. */
  readonly authenticated: boolean;
}

/**
 * A typed error for `error`, raised while a write-back read the branch
 * (`read`: clone, or fetch after someone pushed first) or pushed to it.
 * Worded for a push: reading needs read access, the push write access.
 * A stop (InterruptedError) stays what it is.
 */
export function translatePushError(
  error: unknown,
  context: PushErrorContext,
  step: 'read' | 'push',
): DriftlessError {
  if (error instanceof InterruptedError || error instanceof WriteBackPushError) return error;
  const { repository: url, branch } = context;
  const push = `pushing the write-back commit to branch "${branch}" of ${url}`;
  const failed = (detail: string) =>
    new WriteBackPushError(`${push} failed: ${detail}`, { cause: error });
  if (error instanceof git.Errors.NotFoundError && step === 'read') {
    return new WriteBackPushError(
      `${push} failed: the branch does not exist (write-back commits to an existing branch: create it, or set writeBack.branch)`,
      { cause: error },
    );
  }
  if (error instanceof git.Errors.HttpError) {
    const status = error.data.statusCode;
    if (status === 401) {
      return failed(
        context.authenticated
          ? `authentication failed (HTTP 401; check the track's auth secret)`
          : `authentication required (HTTP 401), and the track has no auth`,
      );
    }
    if (status === 403) {
      return new WriteBackPushError(
        step === 'push'
          ? `${push} was refused (HTTP 403): the track's credentials need write access to the repository`
          : `${push} failed: access denied (HTTP 403; the track's credentials need read and write access to the repository)`,
        { cause: error },
      );
    }
    if (status === 404) {
      return failed(
        `repository not found (HTTP 404; check the URL and that the credentials can write to it)`,
      );
    }
    return failed(`the host answered HTTP ${status} ${error.data.statusMessage}`);
  }
  if (branchMoved(error)) {
    // Tried again on each new head until the attempts ran out; never forced.
    return new WriteBackPushError(
      `${push} was rejected: the branch kept moving while the commit was made again on its new head; the next drift check tries again`,
      { cause: error },
    );
  }
  if (error instanceof git.Errors.GitPushError) {
    // The host's own reason: a protected branch, a hook that declined it.
    return new WriteBackPushError(`${push} was rejected: ${error.data.prettyDetails}`, {
      cause: error,
    });
  }
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string' && NETWORK_CODES.has(code)) {
    return failed(`cannot reach ${url}: ${messageOf(error)}`);
  }
  return failed(messageOf(error));
}

/** Whether a push was refused because the branch moved (someone pushed first): not a fast-forward. */
export function branchMoved(error: unknown): boolean {
  return (
    error instanceof git.Errors.PushRejectedError ||
    (error instanceof git.Errors.GitPushError &&
      /non-fast-forward|fetch first/i.test(error.message))
  );
}
