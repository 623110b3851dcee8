import { collectObjects, type CollectedObject } from './collect-objects.ts';
import { indexCrdScopes } from './crd-scope-index.ts';
import { DuplicateObjectError, ManifestTooLargeError, MissingNamespaceError } from './errors.ts';
import { resolveLimits } from './limits.ts';
import { compareObjectKeys, objectIdentity } from './object-order.ts';
import { parseManifestFile } from './parse-manifest-file.ts';
import { resolveScope } from './resolve-scope.ts';
import { selectManifestFiles } from './select-manifest-files.ts';
import { formatSubject } from './subject.ts';
import type { RenderedBundle, RenderedObject, RenderOptions, RevisionFile } from './types.ts';

function readObjects(files: readonly RevisionFile[], options: RenderOptions): CollectedObject[] {
  const limits = resolveLimits(options.limits);
  const budget = { used: 0, limit: limits.maxAliasExpansion };
  const objects: CollectedObject[] = [];
  let totalBytes = 0;
  for (const file of selectManifestFiles(files, options.subPath)) {
    const size = file.content.byteLength;
    if (size > limits.maxFileBytes) {
      throw new ManifestTooLargeError(
        file.path,
        undefined,
        'maxFileBytes',
        `file is ${size} bytes, over the limit of ${limits.maxFileBytes} bytes per file`,
      );
    }
    totalBytes += size;
    if (totalBytes > limits.maxTotalBytes) {
      throw new ManifestTooLargeError(
        file.path,
        undefined,
        'maxTotalBytes',
        `manifests reach ${totalBytes} bytes with this file, over the limit of ${limits.maxTotalBytes} bytes per revision`,
      );
    }
    const documents = parseManifestFile(file, budget, limits.maxDepth);
    objects.push(...collectObjects(file.path, documents));
  }
  return objects;
}

function placeObject(
  object: CollectedObject,
  scope: 'Namespaced' | 'Cluster',
  defaultNamespace: string | undefined,
): RenderedObject {
  const { manifest, group, version, kind, name, source } = object;
  if (scope === 'Cluster') {
    // Like Flux's ssa normalization: a namespace on a cluster-scoped object is
    // meaningless to the API server, so it is dropped rather than refused.
    delete manifest.metadata.namespace;
    return { manifest, group, version, kind, name, subject: formatSubject(kind, name), source };
  }
  const namespace = object.writtenNamespace ?? (defaultNamespace || undefined);
  if (namespace === undefined) {
    throw new MissingNamespaceError(source.file, source.line, formatSubject(kind, name));
  }
  manifest.metadata.namespace = namespace;
  const subject = formatSubject(kind, name, namespace);
  return { manifest, group, version, kind, name, namespace, subject, source };
}

/**
 * Renders the plain manifests of one revision: reads every `.yaml`, `.yml`
 * and `.json` file under `subPath` in path order, flattens lists, checks each
 * object, decides its scope (the revision's CRDs first, then `scopeOf`), fills
 * in or drops its namespace, and refuses duplicates. The first problem found
 * throws a render error naming the file and line; nothing partial is returned.
 */
export function renderManifests(
  files: readonly RevisionFile[],
  options: RenderOptions,
): RenderedBundle {
  const collected = readObjects(files, options);
  const crds = indexCrdScopes(collected);
  const seen = new Map<string, RenderedObject>();
  for (const object of collected) {
    const scope = resolveScope(object, crds, options.scopeOf);
    const rendered = placeObject(object, scope, options.defaultNamespace);
    const identity = objectIdentity(rendered);
    const first = seen.get(identity);
    if (first !== undefined) {
      throw new DuplicateObjectError(rendered.subject, first.source, rendered.source);
    }
    seen.set(identity, rendered);
  }
  return { objects: [...seen.values()].sort(compareObjectKeys) };
}
