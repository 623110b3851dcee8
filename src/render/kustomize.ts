/**
 * `kustomize build` of a revision with the real, pinned kustomize. Bases,
 * overlays, components, generators, patches and the rest work because
 * kustomize does them; Driftless only decides what kustomize may reach:
 *
 * - files: kustomize's own load restrictor (`LoadRestrictionsRootOnly`) keeps
 *   patches and generator files inside their kustomization's directory, and
 *   {@link checkKustomizations} refuses any path that leaves the repository
 *   (a base `../../../etc` would otherwise reach the host's disk);
 * - plugins: exec and container KRM functions and `helmCharts` need flags
 *   (`--enable-alpha-plugins`, `--enable-exec`, `--enable-helm`) never passed;
 * - the network: remote bases are refused unless the track opts in
 *   (`kustomizeRemoteResources: true`); without it the child also gets no
 *   `git` on PATH and a proxy that refuses every connection, so a remote
 *   form the check does not recognise fails too.
 */
import { load } from 'js-yaml';
import { posix } from 'node:path';
import { RenderRefusedError } from './errors.ts';
import { isJsonObject } from './json-value.ts';
import { KUSTOMIZATION_FILES } from './kustomization-files.ts';
import { withRevisionTree } from './revision-tree.ts';
import { networkEnvironment, NO_NETWORK, runTool } from './run-tool.ts';
import type { RevisionFile } from './types.ts';
import { MANIFEST_SCHEMA } from './yaml-schema.ts';

export { KUSTOMIZATION_FILES };

/** The kustomization file directly in `dir` (`''` = root), if there is one. */
export function kustomizationIn(
  files: readonly RevisionFile[],
  dir: string,
): RevisionFile | undefined {
  const prefix = dir === '' ? '' : `${dir}/`;
  for (const name of KUSTOMIZATION_FILES) {
    const found = files.find((file) => file.path === `${prefix}${name}`);
    if (found) return found;
  }
  return undefined;
}

// Forms kustomize fetches remotely: URLs with a scheme and scp-like Git URLs,
// whatever the revision holds...
const REMOTE = /^(?:[a-z][a-z0-9+.-]*:\/\/|[^/\s]+@[^/\s]+:)/i;
// ...and bare `host.tld/org/repo` Git URLs (github.com/org/repo//path?ref=v1),
// which look like a local `conf.d/base` or `v1.2/app.yaml`: kustomize reads a
// path as a file or directory first, so only one the revision lacks is remote.
const REMOTE_HOST = /^[a-z0-9-]+(?:\.[a-z0-9-]+)+\//i;

/** Whether the revision holds `path` (repository-relative) as a file or a directory. */
function holdsPath(files: readonly RevisionFile[], path: string): boolean {
  return files.some((file) => file.path === path || file.path.startsWith(`${path}/`));
}

/** Fields whose entries are paths (or, for the first three, remote resources). */
const RESOURCE_LISTS = ['resources', 'bases', 'components'] as const;
const PATH_LISTS = ['crds', 'configurations', 'patchesStrategicMerge'] as const;
const PATH_OBJECT_LISTS = ['patches', 'patchesJson6902', 'replacements'] as const;
const GENERATOR_LISTS = ['configMapGenerator', 'secretGenerator'] as const;

function strings(value: unknown): string[] {
  return Array.isArray(value)
    ? value.filter((item): item is string => typeof item === 'string')
    : [];
}

function objects(value: unknown): Record<string, unknown>[] {
  return Array.isArray(value) ? value.filter(isJsonObject) : [];
}

/** Every path a kustomization names, with the field it came from. */
function namedPaths(
  kustomization: Record<string, unknown>,
): { field: string; path: string; resource: boolean }[] {
  const found: { field: string; path: string; resource: boolean }[] = [];
  for (const field of RESOURCE_LISTS) {
    for (const path of strings(kustomization[field])) found.push({ field, path, resource: true });
  }
  for (const field of PATH_LISTS) {
    // An inline patch (YAML text) has a newline; only single-line entries are paths.
    for (const path of strings(kustomization[field]))
      if (!path.includes('\n')) found.push({ field, path, resource: false });
  }
  for (const field of PATH_OBJECT_LISTS) {
    for (const entry of objects(kustomization[field]))
      if (typeof entry.path === 'string') found.push({ field, path: entry.path, resource: false });
  }
  for (const field of GENERATOR_LISTS) {
    for (const generator of objects(kustomization[field])) {
      // `files` entries may be `key=path`.
      for (const entry of strings(generator.files))
        found.push({ field, path: entry.slice(entry.indexOf('=') + 1), resource: false });
      for (const path of [...strings(generator.envs), ...strings([generator.env])])
        found.push({ field, path, resource: false });
    }
  }
  const openapi = kustomization.openapi;
  if (isJsonObject(openapi) && typeof openapi.path === 'string')
    found.push({ field: 'openapi', path: openapi.path, resource: false });
  return found;
}

function readKustomization(file: RevisionFile): Record<string, unknown> | undefined {
  try {
    const value = load(new TextDecoder().decode(file.content), { schema: MANIFEST_SCHEMA });
    return isJsonObject(value) ? value : undefined;
  } catch {
    return undefined; // kustomize reports syntax errors itself, naming the file
  }
}

/**
 * Refuses what kustomize would otherwise reach outside the revision: paths
 * leaving the repository (absolute or through `..`), and remote resources
 * unless `allowRemote`. Reads the kustomization built and every one it
 * reaches as a resource or component (its bases), as kustomize will.
 */
export function checkKustomizations(
  files: readonly RevisionFile[],
  dir: string,
  allowRemote: boolean,
): void {
  const pending = [dir];
  const seen = new Set<string>();
  while (pending.length > 0) {
    const current = pending.pop()!;
    if (seen.has(current)) continue;
    seen.add(current);
    const file = kustomizationIn(files, current);
    const kustomization = file && readKustomization(file);
    if (!file || !kustomization) continue;
    for (const { field, path, resource } of namedPaths(kustomization)) {
      const resolved = posix.normalize(posix.join(current === '' ? '.' : current, path));
      const remote = REMOTE.test(path) || (REMOTE_HOST.test(path) && !holdsPath(files, resolved));
      if (resource && remote) {
        if (allowRemote) continue;
        throw new RenderRefusedError(
          file.path,
          `${field}: remote resource ${JSON.stringify(path)} is refused; set kustomizeRemoteResources: true on the track to allow it`,
        );
      }
      if (posix.isAbsolute(path) || resolved === '..' || resolved.startsWith('../')) {
        throw new RenderRefusedError(
          file.path,
          `${field}: ${JSON.stringify(path)} is outside the repository`,
        );
      }
      if (resource) pending.push(resolved === '.' ? '' : resolved);
    }
  }
}

// Reading a base or component, kustomize names the directory whose
// kustomization it could not read; nested, the last one named is the broken one.
const UNREADABLE_TARGET = /couldn't make target for path '([^']*)': invalid Kustomization/g;

/**
 * kustomize's message for a build of `dir` in the tree at `root`: files named
 * by their path in the revision (kustomize gives the absolute path in the
 * temporary tree), and a kustomization kustomize cannot read, which it reports
 * without its file name, named first. The built one when the message is about
 * it alone, the base or component kustomize was reading otherwise; when the
 * message does not tell, no file is named rather than the wrong one.
 */
export function describeKustomizeError(
  text: string,
  root: string,
  files: readonly RevisionFile[],
  dir: string,
): string {
  const relative = text.replaceAll(`${root}/`, '').replaceAll(root, '.');
  if (!relative.includes('invalid Kustomization')) return relative;
  const targets = [...relative.matchAll(UNREADABLE_TARGET)];
  const unreadable =
    targets.length > 0
      ? targets.at(-1)![1]!
      : /^\s*(?:Error: )?invalid Kustomization/.test(relative)
        ? dir
        : undefined;
  const file =
    unreadable === undefined
      ? undefined
      : kustomizationIn(files, unreadable === '.' ? '' : unreadable);
  return file ? `${file.path}: ${relative}` : relative;
}

export interface KustomizeOptions {
  readonly binary: string;
  /** The directory to build, relative to the repository root (`''` = root). */
  readonly dir: string;
  readonly allowRemote: boolean;
  readonly timeoutMs: number;
  readonly maxOutputBytes: number;
  /** Aborted when the caller is asked to stop: kills the renderer (run-tool.ts). */
  readonly signal?: AbortSignal;
}

/** Runs `kustomize build` over the revision; resolves with its YAML output. */
export async function kustomizeBuild(
  files: readonly RevisionFile[],
  options: KustomizeOptions,
): Promise<Buffer> {
  checkKustomizations(files, options.dir, options.allowRemote);
  return withRevisionTree(files, async ({ root, scratch }) => {
    const target = options.dir === '' ? root : posix.join(root, options.dir);
    const network: Record<string, string> = options.allowRemote
      ? { PATH: process.env.PATH ?? '', ...networkEnvironment() }
      : { PATH: '', ...NO_NETWORK };
    return runTool({
      tool: `kustomize build ${options.dir === '' ? '.' : options.dir}`,
      binary: options.binary,
      args: ['build', target, '--load-restrictor', 'LoadRestrictionsRootOnly'],
      cwd: root,
      env: {
        HOME: scratch,
        XDG_CONFIG_HOME: scratch,
        KUSTOMIZE_PLUGIN_HOME: posix.join(scratch, 'plugins'),
        ...network,
      },
      timeoutMs: options.timeoutMs,
      maxOutputBytes: options.maxOutputBytes,
      ...(options.signal ? { signal: options.signal } : {}),
      describe: (text) => describeKustomizeError(text, root, files, options.dir),
    });
  });
}
