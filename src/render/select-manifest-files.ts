import { RenderInputError } from './errors.ts';
import type { RevisionFile } from './types.ts';

// Case-insensitive on purpose: silently skipping `app.YAML` would make its
// objects look deleted from Git, and prune would remove them from the cluster.
const MANIFEST_EXTENSION = /\.(ya?ml|json)$/i;

/**
 * Normalizes a track's subPath to `''` (repository root) or `a/b` form.
 * Rejects absolute paths and `..` segments: a subPath must stay inside the repository.
 */
export function normalizeSubPath(subPath: string | undefined): string {
  if (subPath === undefined) return '';
  if (subPath.startsWith('/') || subPath.includes('\\') || /^[A-Za-z]:/.test(subPath)) {
    throw new RenderInputError(
      `subPath "${subPath}" must be a relative path inside the repository`,
    );
  }
  const segments = subPath.split('/').filter((segment) => segment !== '' && segment !== '.');
  if (segments.includes('..')) {
    throw new RenderInputError(`subPath "${subPath}" must not contain ".." segments`);
  }
  return segments.join('/');
}

/**
 * The manifest files (`.yaml`, `.yml`, `.json`) under `subPath`, recursively,
 * sorted by path (code-unit order, so the result never depends on locale).
 */
export function selectManifestFiles(
  files: readonly RevisionFile[],
  subPath: string | undefined,
): RevisionFile[] {
  const root = normalizeSubPath(subPath);
  const prefix = root === '' ? '' : `${root}/`;
  const underRoot = files.filter((file) => file.path.startsWith(prefix));
  if (root !== '' && underRoot.length === 0) {
    // `files` are what the ignore rules left (render-revision.ts), and the Git source has
    // already refused a subPath missing at the revision: here, ignore rules that leave out
    // all of it are the likelier cause. A bucket source checks no subPath, hence both.
    throw new RenderInputError(
      `subPath "${root}" has no files left to render: the track's sourceIgnore or a .sourceignore file leaves out all of it, or it does not exist in the revision`,
    );
  }
  const selected = underRoot
    .filter((file) => MANIFEST_EXTENSION.test(file.path))
    .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  for (let i = 1; i < selected.length; i++) {
    if (selected[i]?.path === selected[i - 1]?.path) {
      throw new RenderInputError(`file ${selected[i]?.path} appears twice in the revision`);
    }
  }
  return selected;
}
