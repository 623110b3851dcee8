/**
 * Which files of a revision are left out before rendering, as Flux's
 * source-controller does it: a default list (VCS and CI files), the track's
 * `sourceIgnore:` patterns, and the revision's own `.sourceignore` files —
 * all in gitignore syntax. A `.sourceignore` applies to the paths under its
 * directory, and a deeper one is read after a shallower one, so it can
 * re-include (`!pattern`) what a parent excluded, as `.gitignore` files do.
 */
import ignore, { type Ignore } from 'ignore';
import { posix } from 'node:path';
import type { RevisionFile } from './types.ts';

/** The name of the ignore files read from the revision. */
export const SOURCE_IGNORE_FILE = '.sourceignore';

/**
 * Left out unless a pattern re-includes them: version-control and CI files,
 * which are never Kubernetes objects (Flux's default exclusions for them).
 */
export const DEFAULT_SOURCE_IGNORE: readonly string[] = [
  '.git/',
  '.gitignore',
  '.gitmodules',
  '.gitattributes',
  '.github/',
  '.gitlab-ci.yml',
  '.circleci/',
  '.travis.yml',
  'appveyor.yml',
  '.drone.yml',
  'cloudbuild.yaml',
  'codeship-services.yml',
  'codeship-steps.yml',
  '**/.goreleaser.yml',
  '**/.sops.yaml',
  '**/.flux.yaml',
];

interface Scope {
  /** Directory the patterns are relative to (`''` = repository root). */
  readonly dir: string;
  readonly rules: Ignore;
}

function scopesOf(files: readonly RevisionFile[], patterns: readonly string[]): Scope[] {
  const root: Scope = { dir: '', rules: ignore().add([...DEFAULT_SOURCE_IGNORE, ...patterns]) };
  const decoder = new TextDecoder();
  const nested = files
    .filter((file) => posix.basename(file.path) === SOURCE_IGNORE_FILE)
    .map((file) => {
      const dir = posix.dirname(file.path);
      return { dir: dir === '.' ? '' : dir, rules: ignore().add(decoder.decode(file.content)) };
    })
    // Shallow before deep: a deeper file's rules are read last and win.
    .sort((a, b) => a.dir.split('/').length - b.dir.split('/').length || (a.dir < b.dir ? -1 : 1));
  return [root, ...nested];
}

/** Whether `path` is ignored by the scopes that apply to it, the deepest having the last word. */
function isIgnored(path: string, scopes: readonly Scope[]): boolean {
  let ignored = false;
  for (const scope of scopes) {
    if (scope.dir !== '' && !path.startsWith(`${scope.dir}/`)) continue;
    const relative = scope.dir === '' ? path : path.slice(scope.dir.length + 1);
    const verdict = scope.rules.test(relative);
    if (verdict.ignored) ignored = true;
    else if (verdict.unignored) ignored = false;
  }
  return ignored;
}

/**
 * The files of the revision that are not ignored. `.sourceignore` files
 * themselves are kept out too: they are instructions, not content.
 */
export function applySourceIgnore(
  files: readonly RevisionFile[],
  patterns: readonly string[] = [],
): RevisionFile[] {
  const scopes = scopesOf(files, patterns);
  return files.filter(
    (file) => posix.basename(file.path) !== SOURCE_IGNORE_FILE && !isIgnored(file.path, scopes),
  );
}
