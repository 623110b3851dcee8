/**
 * A revision's files on disk, for renderers that read a directory (kustomize,
 * helm). Only regular files are written — the source yields no symlinks — so
 * nothing in the tree points outside it; the directory is removed afterwards
 * whatever happens.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { RenderInputError } from './errors.ts';
import type { RevisionFile } from './types.ts';

/** Git refuses such paths too; checked again because the tree is written to a real disk. */
function checkPath(path: string): void {
  if (
    path.startsWith('/') ||
    path.split('/').some((segment) => segment === '..' || segment === '')
  ) {
    throw new RenderInputError(
      `file path ${JSON.stringify(path)} is not a relative path inside the repository`,
    );
  }
}

export interface RevisionTree {
  /** Absolute path of the repository root on disk. */
  readonly root: string;
  /** A private, empty directory beside the tree: the renderer's HOME and cache. */
  readonly scratch: string;
}

/** Writes `files` under a fresh temporary directory, runs `use`, then removes it. */
export async function withRevisionTree<T>(
  files: readonly RevisionFile[],
  use: (tree: RevisionTree) => Promise<T>,
): Promise<T> {
  files.forEach((file) => checkPath(file.path));
  const base = await mkdtemp(join(tmpdir(), 'driftless-render-'));
  try {
    const root = join(base, 'repo');
    const scratch = join(base, 'home');
    await mkdir(scratch, { recursive: true });
    const dirs = new Set(files.map((file) => dirname(join(root, file.path))));
    dirs.add(root);
    for (const dir of [...dirs].sort()) await mkdir(dir, { recursive: true });
    await Promise.all(files.map((file) => writeFile(join(root, file.path), file.content)));
    return await use({ root, scratch });
  } finally {
    await rm(base, { recursive: true, force: true });
  }
}
