/**
 * Turning a track's `auth` into the user name and password isomorphic-git
 * sends with HTTP basic auth. Secrets are read here and nowhere else in the
 * source module, and never appear in messages.
 */
import type { GitAuth } from '../../config/types.ts';
import type { SecretRef } from '../../config/secret-ref.ts';
import { formatSecretRef } from '../../config/secret-ref.ts';
import { NotImplementedError } from '../../errors.ts';
import { GitAuthError, type GitErrorContext } from './errors.ts';

/** Reads a secret's value; provided by the caller (env, file, AWS...). */
export type SecretReader = (ref: SecretRef) => Promise<string>;

export interface BasicCredentials {
  readonly username: string;
  readonly password: string;
}

/**
 * The user name sent with a `token`. GitHub requires it for installation
 * tokens and accepts it for personal access tokens; GitLab, Gitea and
 * Bitbucket Server accept any user name with a token as the password. A host
 * that wants a particular user name (GitLab OAuth tokens: `oauth2`, Bitbucket
 * Cloud: `x-token-auth`) is served by `auth: {type: basic}` with `user:token`.
 */
export const TOKEN_USERNAME = 'x-access-token';

/**
 * The credentials of `auth`, or undefined for a track without auth. A secret
 * of the wrong form is a {@link GitAuthError} naming the reference (never the
 * value); `githubApp` is refused with a {@link NotImplementedError}.
 */
export async function credentialsFor(
  auth: GitAuth | undefined,
  readSecret: SecretReader,
  context: GitErrorContext,
): Promise<BasicCredentials | undefined> {
  if (auth === undefined) return undefined;
  switch (auth.type) {
    case 'basic': {
      // Secret files and `echo`ed variables often end with a newline that is not part of the password.
      const value = stripLineEnd(await readSecret(auth.secret));
      const colon = value.indexOf(':');
      if (colon <= 0) {
        throw new GitAuthError(
          `the auth secret ${formatSecretRef(auth.secret)} is not of the form user:password`,
          context,
        );
      }
      return { username: value.slice(0, colon), password: value.slice(colon + 1) };
    }
    case 'token': {
      const token = (await readSecret(auth.secret)).trim();
      if (token === '') {
        throw new GitAuthError(`the auth secret ${formatSecretRef(auth.secret)} is empty`, context);
      }
      return { username: TOKEN_USERNAME, password: token };
    }
    case 'githubApp':
      throw new NotImplementedError(
        `track "${context.track}": auth type githubApp is not supported yet; use auth type token with an installation or personal access token`,
      );
  }
}

function stripLineEnd(value: string): string {
  return value.replace(/\r?\n$/, '');
}

/** The value of an HTTP `Authorization` header carrying `credentials` (basic auth, UTF-8). */
export function basicAuthorization({ username, password }: BasicCredentials): string {
  return `Basic ${Buffer.from(`${username}:${password}`, 'utf8').toString('base64')}`;
}
