/**
 * Where a track's repository lives and how it is named: the URL that is
 * fetched, the text shown to people, and the cache key. None of them ever
 * holds credentials.
 */
import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  classifyRepository,
  parseSshLocation,
  type SshLocation,
} from '../../config/repository-location.ts';

/** A repository fetched over smart HTTP (or SSH, when `ssh` is set) into a cache. */
export interface RemoteLocation {
  readonly kind: 'remote';
  /** Set for an SSH repository: where `git-upload-pack` runs. */
  readonly ssh?: SshLocation;
  /** The URL fetched: as written, without a fragment. */
  readonly url: string;
  /** For messages and logs. */
  readonly display: string;
  /** Directory name of its cache under `cacheDir`. */
  readonly cacheKey: string;
}

/** A repository on this machine, read in place. */
export interface LocalLocation {
  readonly kind: 'local';
  /** Absolute path of the work tree or bare repository. */
  readonly path: string;
  readonly display: string;
}

export type RepositoryLocation = RemoteLocation | LocalLocation;

/**
 * Classifies `repository` (https/http URL, file:// URL or local path) or
 * explains why it cannot be used. Relative paths are taken from `cwd`.
 */
export function locateRepository(
  repository: string,
  cwd: string,
): RepositoryLocation | { readonly error: string } {
  const classified = classifyRepository(repository);
  if ('error' in classified) {
    // classifyRepository quotes the repository; with credentials in it, the quote would leak them.
    return { error: classified.error.replace(repository, displayUrl(repository)) };
  }
  switch (classified.kind) {
    case 'http': {
      const url = new URL(repository);
      url.hash = '';
      return {
        kind: 'remote',
        url: url.href,
        display: displayUrl(repository),
        cacheKey: cacheKeyOf(repository),
      };
    }
    case 'ssh': {
      const ssh = parseSshLocation(repository)!;
      // One URL form for both spellings, for the cache key and messages.
      // A relative scp-like path is in the user's home, as `ssh://host/~/path` says.
      const path = ssh.path.startsWith('/')
        ? ssh.path
        : `/${ssh.path.startsWith('~') ? '' : '~/'}${ssh.path}`;
      const host = ssh.host.includes(':') ? `[${ssh.host}]` : ssh.host;
      const url = `ssh://${ssh.user}@${host}:${ssh.port}${path}`;
      return { kind: 'remote', ssh, url, display: repository, cacheKey: cacheKeyOf(url) };
    }
    case 'file': {
      let path: string;
      try {
        path = fileURLToPath(repository);
      } catch {
        return { error: `${JSON.stringify(repository)} is not a file:// URL of this machine` };
      }
      return { kind: 'local', path, display: repository };
    }
    case 'path':
      return { kind: 'local', path: resolve(cwd, repository), display: repository };
  }
}

/**
 * The identity of a remote repository, for the cache key: scheme and host
 * lower-cased, default port, credentials, fragment and trailing slashes
 * dropped. `.git` is kept: only some hosts treat `repo` and `repo.git` as
 * one repository, and two caches are cheaper than one shared by mistake.
 */
export function cacheIdentity(repository: string): string {
  const url = new URL(repository);
  url.username = '';
  url.password = '';
  url.hash = '';
  url.pathname = url.pathname.replace(/\/+$/, '') || '/';
  return url.href;
}

/**
 * Cache directory name of a remote repository: a readable slug of its name
 * and a hash of its normalised URL. Credentials never enter it (they are
 * dropped before hashing), so the name can be logged.
 */
export function cacheKeyOf(repository: string): string {
  const normalized = cacheIdentity(repository);
  const hash = createHash('sha256').update(normalized, 'utf8').digest('hex').slice(0, 32);
  const url = new URL(normalized);
  const name = url.pathname.split('/').filter(Boolean).pop() ?? url.hostname;
  const slug = name
    .replace(/\.git$/i, '')
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[.-]+/, '')
    .slice(0, 40);
  return slug === '' ? hash : `${slug}-${hash}`;
}

/** `repository` with any `user:password@` removed, for messages. */
export function displayUrl(repository: string): string {
  return repository.replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^/@]*@/, '$1');
}
