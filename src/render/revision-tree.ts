/**
 * A revision's files on disk, for renderers that read a directory (kustomize,
 * helm). Only regular files are written — the source yields no symlinks — so
 * nothing in the tree points outside it; the directory is removed afterwards
 * whatever happens.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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

/**
 * Writes `files` under a fresh temporary directory, runs `use`, then removes it.
 *
 * With synchronous calls: each is one small system call, where the promise
 * API pays a thread-pool round trip per file and directory (a chart's tree
 * written and removed: 2.5 -> 1.1 ms warm, 13 -> 3 ms in a fresh process).
 * Parsing the renderer's output holds the event loop far longer.
 */
export async function withRevisionTree<T>(
  files: readonly RevisionFile[],
  use: (tree: RevisionTree) => Promise<T>,
): Promise<T> {
  files.forEach((file) => checkPath(file.path));
  const base = mkdtempSync(join(tmpdir(), 'driftless-render-'));
  try {
    const root = join(base, 'repo');
    const scratch = join(base, 'home');
    mkdirSync(scratch, { recursive: true });
    const dirs = new Set(files.map((file) => dirname(join(root, file.path))));
    dirs.add(root);
    for (const dir of [...dirs].sort()) mkdirSync(dir, { recursive: true });
    for (const file of files) writeFileSync(join(root, file.path), file.content);
    return await use({ root, scratch });
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}
