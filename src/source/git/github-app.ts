/**
 * GitHub App installation tokens for `auth: {type: githubApp}`.
 *
 * @octokit/auth-app signs the app's JWT and asks GitHub (or GitHub
 * Enterprise Server, at `apiUrl`) for an installation token. It caches
 * tokens for 59 minutes whatever their `expires_at` says, so the reuse
 * decision is made here: a token is reused, by every fetch of this process,
 * until {@link REFRESH_MARGIN_MS} before it expires, then a new one is asked
 * for. Concurrent fetches share one request.
 *
 * The private key is read by the caller (a secret reference) and never
 * leaves this module except to sign; messages name the app and installation,
 * never the key or a token.
 */
import { createHash } from 'node:crypto';
import { messageOf } from '../../errors.ts';

/** Reused until this long before it expires: a fetch must not start with a token about to lapse. */
export const REFRESH_MARGIN_MS = 5 * 60_000;

/** GitHub's API when `apiUrl` is not given. */
export const GITHUB_API_URL = 'https://api.github.com';

export interface GitHubAppIdentity {
  readonly appId: string;
  readonly installationId: string;
  /** PEM (PKCS#1 as GitHub hands it out, or PKCS#8). */
  readonly privateKey: string;
  readonly apiUrl?: string;
}

export interface InstallationToken {
  readonly token: string;
  /** Milliseconds since the epoch. */
  readonly expiresAt: number;
}

/** Asks for a fresh installation token (the default goes to GitHub through @octokit/auth-app). */
export type RequestInstallationToken = (identity: GitHubAppIdentity) => Promise<InstallationToken>;

/** The installation token request failed; names the app and installation and what GitHub said. */
export class GitHubAppTokenError extends Error {
  override readonly name = 'GitHubAppTokenError';
}

const requestWithOctokit: RequestInstallationToken = async (identity) => {
  // Loaded on first use: only tracks with a GitHub App pay for it.
  const [{ createAppAuth }, { request }] = await Promise.all([
    import('@octokit/auth-app'),
    import('@octokit/request'),
  ]);
  const auth = createAppAuth({
    appId: identity.appId,
    privateKey: identity.privateKey,
    installationId: identity.installationId,
    request: request.defaults({ baseUrl: (identity.apiUrl ?? GITHUB_API_URL).replace(/\/$/, '') }),
  });
  // refresh: our own cache decides reuse (see the module comment).
  const result = await auth({ type: 'installation', refresh: true });
  return { token: result.token, expiresAt: Date.parse(result.expiresAt) };
};

export interface GitHubAppTokensOptions {
  readonly request?: RequestInstallationToken;
  readonly now?: () => number;
}

/** Installation tokens shared across the fetches of one process; see the module comment. */
export class GitHubAppTokens {
  private readonly tokens = new Map<string, Promise<InstallationToken>>();
  private readonly request: RequestInstallationToken;
  private readonly now: () => number;

  constructor(options: GitHubAppTokensOptions = {}) {
    this.request = options.request ?? requestWithOctokit;
    this.now = options.now ?? Date.now;
  }

  /** A token for the installation: the cached one while it is good for a while yet, else a new one. */
  async token(identity: GitHubAppIdentity): Promise<string> {
    const key = cacheKey(identity);
    const cached = this.tokens.get(key);
    if (cached !== undefined) {
      const settled = await cached.catch(() => undefined);
      if (settled !== undefined && settled.expiresAt - this.now() > REFRESH_MARGIN_MS) {
        return settled.token;
      }
      // Another caller may have started the refresh meanwhile.
      if (this.tokens.get(key) !== cached) return this.token(identity);
    }
    const fresh = this.request(identity).catch((error: unknown) => {
      if (this.tokens.get(key) === fresh) this.tokens.delete(key);
      throw new GitHubAppTokenError(
        `GitHub App ${identity.appId}, installation ${identity.installationId} at ${identity.apiUrl ?? GITHUB_API_URL}: no installation token: ${describe(error)}`,
        { cause: error },
      );
    });
    this.tokens.set(key, fresh);
    return (await fresh).token;
  }
}

/** The key names the key by digest: two configs with other keys for one app get their own tokens. */
function cacheKey(identity: GitHubAppIdentity): string {
  const key = createHash('sha256').update(identity.privateKey).digest('hex');
  return [identity.apiUrl ?? GITHUB_API_URL, identity.appId, identity.installationId, key].join(
    '\n',
  );
}

/** What went wrong, without request headers (the JWT) that @octokit errors carry. */
function describe(error: unknown): string {
  const status = (error as { status?: unknown }).status;
  const message = messageOf(error).split('\n')[0] ?? '';
  return typeof status === 'number' ? `HTTP ${status}: ${message}` : message;
}

/** The process's tokens: every Git source of the process shares them. */
export const githubAppTokens = new GitHubAppTokens();
