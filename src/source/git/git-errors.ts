/**
 * Translation of isomorphic-git and network errors into the typed errors of
 * the source module (the Powertools convention: adapters translate, callers
 * match on codes). The original error travels as `cause`; it never holds
 * credentials, because they are never part of a URL here.
 */
import git from 'isomorphic-git';
import { DriftlessError, messageOf } from '../../errors.ts';
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
