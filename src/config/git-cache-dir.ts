import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { readOptionalEnv, type Environment } from './env.ts';
import type { StoreConfig } from './types.ts';

/** The user's cache directory, per platform conventions (XDG on Linux and the BSDs). */
export function userCacheDir(
  env: Environment,
  platform: NodeJS.Platform = process.platform,
): string {
  const home = readOptionalEnv('HOME', env) ?? homedir();
  switch (platform) {
    case 'darwin':
      return join(home, 'Library', 'Caches');
    case 'win32':
      return readOptionalEnv('LOCALAPPDATA', env) ?? join(home, 'AppData', 'Local');
    default:
      return readOptionalEnv('XDG_CACHE_HOME', env) ?? join(home, '.cache');
  }
}

/**
 * Where the CLI keeps its Git clones: `git` next to a filesystem store (so
 * `.driftless/store` gets `.driftless/git`, and one directory holds all local
 * state), or the user's cache directory when the store is remote.
 */
export function gitCacheDir(
  store: StoreConfig,
  env: Environment = process.env,
  platform: NodeJS.Platform = process.platform,
): string {
  if (store.type === 'fs') return join(dirname(resolve(store.path)), 'git');
  return join(userCacheDir(env, platform), 'driftless', 'git');
}
