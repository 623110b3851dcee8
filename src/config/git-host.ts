/**
 * Where a track's repository lives, as commit statuses need it: the host's
 * web origin and the repository's path there. Read from the repository URL
 * as written (https, http, ssh:// or scp-like `git@host:path`); local paths,
 * file:// URLs and buckets are on no host.
 */
import type { CommitStatusProvider } from './types.ts';

export interface GitHostRepository {
  /** `https://host[:port]` (an ssh URL's host is taken as https, without the ssh port). */
  readonly origin: string;
  readonly host: string;
  /** The path without leading `/` and trailing `.git`: `owner/repo`, or `group/sub/repo` on GitLab. */
  readonly path: string;
}

/** `git@host:owner/repo.git`: scp-like syntax, no scheme. */
const SCP_LIKE = /^(?:[^@/\s]+@)?([^:/\s]+):(?!\/)(.+)$/;

/** The host and path of `repository`, or undefined when it is not on a Git host. */
export function gitHostRepository(repository: string): GitHostRepository | undefined {
  let origin: string;
  let host: string;
  let path: string;
  const scp = /^[a-z][a-z0-9+.-]*:\/\//i.test(repository) ? null : SCP_LIKE.exec(repository);
  if (scp) {
    host = (scp[1] ?? '').toLowerCase();
    origin = `https://${host}`;
    path = scp[2] ?? '';
  } else {
    let url: URL;
    try {
      url = new URL(repository);
    } catch {
      return undefined;
    }
    if (url.protocol === 'http:' || url.protocol === 'https:') {
      origin = url.origin;
    } else if (url.protocol === 'ssh:') {
      origin = `https://${url.hostname}`;
    } else {
      return undefined;
    }
    host = url.hostname.toLowerCase();
    path = decodeURIComponent(url.pathname);
  }
  path = path
    .replace(/^\/+/, '')
    .replace(/\/+$/, '')
    .replace(/\.git$/, '');
  return path === '' ? undefined : { origin, host, path };
}

/** The provider a well-known host implies; undefined for a self-hosted one. */
export function providerOfHost(host: string): CommitStatusProvider | undefined {
  switch (host) {
    case 'github.com':
      return 'github';
    case 'gitlab.com':
      return 'gitlab';
    case 'bitbucket.org':
      return 'bitbucket';
    default:
      return undefined;
  }
}
