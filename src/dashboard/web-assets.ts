/**
 * The built UI (web/, built by `npm run build` into dist/web/) read from a
 * folder: `driftless serve` reads it beside the installed package, the
 * dashboard function from its deployment package.
 */
import { readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WebAsset } from './dashboard-routes.ts';

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
};

/**
 * `dist/web` of the package this module belongs to: the first folder up from
 * here with a package.json (src/dashboard/ under tsx, dist/cli/ when
 * bundled).
 */
export function packageWebDir(from: string = fileURLToPath(import.meta.url)): string | undefined {
  let dir = dirname(from);
  for (;;) {
    if (existsSync(join(dir, 'package.json'))) return join(dir, 'dist', 'web');
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/** The files of `dir` by relative path, read once and kept (they never change while running). */
export function directoryAssets(
  dir: string | undefined,
): (path: string) => Promise<WebAsset | undefined> {
  const cache = new Map<string, Promise<WebAsset | undefined>>();
  const load = async (path: string): Promise<WebAsset | undefined> => {
    if (dir === undefined) return undefined;
    const contentType = CONTENT_TYPES[extname(path)];
    if (contentType === undefined) return undefined;
    try {
      return { body: await readFile(join(dir, path), 'utf8'), contentType };
    } catch {
      return undefined;
    }
  };
  return (path) => {
    // The routes only ask for index.html and assets/<name>; nothing else is read.
    if (path.includes('..')) return Promise.resolve(undefined);
    let found = cache.get(path);
    if (found === undefined) {
      found = load(path);
      cache.set(path, found);
    }
    return found;
  };
}
