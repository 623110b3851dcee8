/**
 * Turning a track's `auth` into the user name and password isomorphic-git
 * sends with HTTP basic auth. Secrets are read here and nowhere else in the
 * source module, and never appear in messages.
 */
import type { GitAuth } from '../../config/types.ts';
import type { SecretRef } from '../../config/secret-ref.ts';
import { formatSecretRef } from '../../config/secret-ref.ts';
import { GitAuthError, type GitErrorContext } from './errors.ts';
import { githubAppTokens, GitHubAppTokenError, type GitHubAppTokens } from './github-app.ts';

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
 * of the wrong form, or a GitHub App whose token request fails, is a
 * {@link GitAuthError} naming the reference or the app (never a value).
 */
export async function credentialsFor(
  auth: GitAuth | undefined,
  readSecret: SecretReader,
  context: GitErrorContext,
  tokens: GitHubAppTokens = githubAppTokens,
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
    case 'ssh':
      throw new GitAuthError(
        'auth type ssh is for ssh:// and user@host:path repositories',
        context,
      );
    case 's3':
      // The config refuses it on a Git track; a bucket track never reaches the Git source.
      throw new GitAuthError('auth type s3 is for bucket tracks, not Git repositories', context);
    case 'githubApp': {
      const privateKey = await readSecret(auth.privateKey);
      try {
        const token = await tokens.token({
          appId: auth.appId,
          installationId: auth.installationId,
          privateKey,
          ...(auth.apiUrl === undefined ? {} : { apiUrl: auth.apiUrl }),
        });
        // GitHub takes an installation token as the password of x-access-token.
        return { username: TOKEN_USERNAME, password: token };
      } catch (error) {
        if (error instanceof GitHubAppTokenError) {
          throw new GitAuthError(error.message, { ...context, cause: error });
        }
        throw error;
      }
    }
  }
}

function stripLineEnd(value: string): string {
  return value.replace(/\r?\n$/, '');
}

/** The value of an HTTP `Authorization` header carrying `credentials` (basic auth, UTF-8). */
export function basicAuthorization({ username, password }: BasicCredentials): string {
  return `Basic ${Buffer.from(`${username}:${password}`, 'utf8').toString('base64')}`;
}
