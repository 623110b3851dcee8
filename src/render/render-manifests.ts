import { posix } from 'node:path';
import { collectObjects, type CollectedObject } from './collect-objects.ts';
import { indexCrdScopes } from './crd-scope-index.ts';
import { DuplicateObjectError, ManifestTooLargeError, MissingNamespaceError } from './errors.ts';
import { resolveLimits } from './limits.ts';
import { compareObjectKeys, objectIdentity } from './object-order.ts';
import { parseManifestFile } from './parse-manifest-file.ts';
import { resolveScope } from './resolve-scope.ts';
import { selectManifestFiles } from './select-manifest-files.ts';
import { isJsonObject } from './json-value.ts';
import { KUSTOMIZATION_FILES } from './kustomization-files.ts';
import { formatSubject } from './subject.ts';
import type {
  JsonObject,
  SkippedFile,
  RenderedBundle,
  RenderedObject,
  RenderOptions,
  RevisionFile,
  SourceLocation,
} from './types.ts';

/** Whether a parsed document means to be a Kubernetes object: it names an apiVersion or a kind. */
function namesAnObject(value: unknown): boolean {
  return isJsonObject(value) && (value.apiVersion !== undefined || value.kind !== undefined);
}

/**
 * Whether a file means to hold Kubernetes objects: a document names one, or is a sequence of
 * them (`- apiVersion: …`, a JSON array), which is refused by name rather than skipped — skipped,
 * its objects would be pruned as if they had left Git.
 */
function meansObjects(value: unknown): boolean {
  return namesAnObject(value) || (Array.isArray(value) && value.some(namesAnObject));
}

function readObjects(
  files: readonly RevisionFile[],
  options: Pick<RenderOptions, 'subPath' | 'limits'>,
): { objects: CollectedObject[]; skipped: SkippedFile[] } {
  const limits = resolveLimits(options.limits);
  const budget = { used: 0, limit: limits.maxAliasExpansion };
  const objects: CollectedObject[] = [];
  const skipped: SkippedFile[] = [];
  let totalBytes = 0;
  for (const file of selectManifestFiles(files, options.subPath)) {
    if (KUSTOMIZATION_FILES.includes(posix.basename(file.path))) {
      // Only a kustomization at subPath is built (render-revision.ts); others are not manifests.
      skipped.push({ file: file.path, reason: 'a kustomization, not built here' });
      continue;
    }
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
    // values.yaml, CI workflows, package.json...: YAML or JSON, but no document is an object.
    if (!documents.some((document) => meansObjects(document.value))) {
      skipped.push({ file: file.path, reason: 'holds no Kubernetes object' });
      continue;
    }
    objects.push(...collectObjects(file.path, documents));
  }
  return { objects, skipped };
}

function placeObject(
  object: CollectedObject,
  scope: 'Namespaced' | 'Cluster',
  {
    defaultNamespace,
    targetNamespace,
  }: Pick<RenderOptions, 'defaultNamespace' | 'targetNamespace'>,
): RenderedObject {
  const { manifest, group, version, kind, name, source } = object;
  if (scope === 'Cluster') {
    // Like Flux's ssa normalization: a namespace on a cluster-scoped object is
    // meaningless to the API server, so it is dropped rather than refused.
    delete manifest.metadata.namespace;
    return { manifest, group, version, kind, name, subject: formatSubject(kind, name), source };
  }
  const namespace = targetNamespace || (object.writtenNamespace ?? (defaultNamespace || undefined));
  if (namespace === undefined) {
    throw new MissingNamespaceError(source.file, source.line, formatSubject(kind, name));
  }
  manifest.metadata.namespace = namespace;
  const subject = formatSubject(kind, name, namespace);
  return { manifest, group, version, kind, name, namespace, subject, source };
}

/** Refuses two objects with the same identity, naming both places; returns them in canonical order. */
function unique(objects: readonly RenderedObject[]): RenderedBundle {
  const seen = new Map<string, RenderedObject>();
  for (const object of objects) {
    const identity = objectIdentity(object);
    const first = seen.get(identity);
    if (first !== undefined) {
      throw new DuplicateObjectError(object.subject, first.source, object.source);
    }
    seen.set(identity, object);
  }
  return { objects: [...seen.values()].sort(compareObjectKeys) };
}

/**
 * Parses the plain manifests of one revision without asking any cluster: reads
 * every `.yaml`, `.yml` and `.json` file under `subPath` in path order,
 * flattens lists, checks each object and the revision's CRDs. Objects keep
 * the namespace as written (the fetch side has no cluster to ask which kinds
 * are namespaced); {@link placeBundle} completes them on the apply side.
 * The first problem found throws a render error naming the file and line.
 */
export function parseRevision(
  files: readonly RevisionFile[],
  options: Pick<RenderOptions, 'subPath' | 'limits'> = {},
): RenderedBundle {
  const { objects, skipped } = readObjects(files, options);
  const bundle = unplacedBundle(objects);
  return skipped.length === 0 ? bundle : { ...bundle, skipped };
}

/**
 * Parses what a renderer (kustomize, helm) printed: one YAML stream, each
 * document reported at the file `sourceOf` names for its first line.
 */
export function parseRendererOutput(
  output: RevisionFile,
  sourceOf: (line: number) => SourceLocation,
  options: Pick<RenderOptions, 'limits'> = {},
): RenderedBundle {
  const limits = resolveLimits(options.limits);
  const budget = { used: 0, limit: limits.maxAliasExpansion };
  const objects: CollectedObject[] = [];
  for (const document of parseManifestFile(output, budget, limits.maxDepth)) {
    const source = sourceOf(document.line);
    const shift = source.line - document.line;
    const itemLines = document.itemLines?.map((line) => line + shift);
    objects.push(...collectObjects(source.file, [{ ...document, line: source.line, itemLines }]));
  }
  return unplacedBundle(objects);
}

/** Objects as written (namespace as given or none), CRDs checked, duplicates refused. */
function unplacedBundle(collected: CollectedObject[]): RenderedBundle {
  indexCrdScopes(collected); // refuses malformed or conflicting CRDs now, not at apply time
  return unique(
    collected.map((object) => {
      const { manifest, group, version, kind, name, source } = object;
      const namespace = object.writtenNamespace;
      if (namespace === undefined) delete manifest.metadata.namespace;
      const subject = formatSubject(kind, name, namespace);
      return namespace === undefined
        ? { manifest, group, version, kind, name, subject, source }
        : { manifest, group, version, kind, name, namespace, subject, source };
    }),
  );
}

/**
 * The bundle with each object's manifest replaced by `transform`'s (e.g.
 * variables substituted), checked again as if read from Git: the identity
 * may have changed (`name: web-${ENV}`), so kinds, names, CRDs and
 * duplicates are derived anew. Other fields of the bundle stay.
 */
export function rebuildBundle(
  bundle: RenderedBundle,
  transform: (object: RenderedObject) => JsonObject,
): RenderedBundle {
  const collected = bundle.objects.flatMap((object) =>
    collectObjects(object.source.file, [
      { value: transform(object), line: object.source.line, itemLines: undefined },
    ]),
  );
  return { ...bundle, ...unplacedBundle(collected) };
}

/**
 * Places a parsed revision in a cluster: decides each object's scope (the
 * revision's CRDs first, then `scopeOf`), fills in or drops its namespace, and
 * refuses duplicates that placement reveals. Placement only sets or drops
 * `metadata.namespace`, so each manifest and its metadata are copied and the
 * rest is shared with `bundle` (every caller places a bundle it has just
 * read or parsed and uses only the placed one): a deep copy of 500
 * manifests cost more than the placement itself.
 */
export function placeBundle(
  bundle: RenderedBundle,
  options: Pick<RenderOptions, 'scopeOf' | 'defaultNamespace' | 'targetNamespace'>,
): RenderedBundle {
  const collected: CollectedObject[] = bundle.objects.map((object) => ({
    manifest: {
      ...object.manifest,
      metadata: { ...(object.manifest.metadata as object) },
    } as CollectedObject['manifest'],
    group: object.group,
    version: object.version,
    kind: object.kind,
    name: object.name,
    writtenNamespace: object.namespace,
    source: object.source,
  }));
  const crds = indexCrdScopes(collected);
  const placed = unique(
    collected.map((object) =>
      placeObject(object, resolveScope(object, crds, options.scopeOf), options),
    ),
  );
  // What the bundle says besides its objects stays as it is.
  return {
    ...placed,
    ...(bundle.skipped === undefined ? {} : { skipped: bundle.skipped }),
    ...(bundle.capabilities === undefined ? {} : { capabilities: bundle.capabilities }),
  };
}

/**
 * Renders the plain manifests of one revision for a cluster: {@link parseRevision}
 * then {@link placeBundle}. Nothing partial is returned.
 */
export function renderManifests(
  files: readonly RevisionFile[],
  options: RenderOptions,
): RenderedBundle {
  return placeBundle(parseRevision(files, options), options);
}
