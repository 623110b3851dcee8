import { homedir } from 'node:os';
import { join } from 'node:path';
import { readOptionalEnv, type Environment } from './env.ts';

/**
 * Expands a leading `~/` (or a lone `~`) to the home directory. Config files
 * say `~/.kube/config` the way shells do, but Node's fs takes it literally.
 */
export function expandHome(path: string, env: Environment = process.env): string {
  if (path !== '~' && !path.startsWith('~/')) return path;
  const home = readOptionalEnv('HOME', env) ?? homedir();
  return path === '~' ? home : join(home, path.slice(2));
}
