import type { CollectedObject } from './collect-objects.ts';
import { InvalidManifestError } from './errors.ts';
import { isJsonObject } from './json-value.ts';
import { formatSubject } from './subject.ts';
import type { ResourceScope, SourceLocation } from './types.ts';

/** What a CustomResourceDefinition in the revision declares about its kind. */
export interface DeclaredResource {
  readonly scope: ResourceScope;
  readonly versions: readonly string[];
  /** `CustomResourceDefinition/<name>`, for messages. */
  readonly crd: string;
  readonly source: SourceLocation;
}

/** Scopes declared by the revision's own CRDs, keyed by group and kind. */
export interface CrdScopeIndex {
  lookup(group: string, kind: string): DeclaredResource | undefined;
}

const key = (group: string, kind: string): string => `${group}\u0000${kind}`;

function isCrd(object: CollectedObject): boolean {
  return (
    object.group === 'apiextensions.k8s.io' &&
    object.version === 'v1' &&
    object.kind === 'CustomResourceDefinition'
  );
}

function readCrd(object: CollectedObject): {
  group: string;
  kind: string;
  declared: DeclaredResource;
} {
  const subject = formatSubject(object.kind, object.name);
  const invalid = (reason: string): InvalidManifestError =>
    new InvalidManifestError(object.source.file, object.source.line, subject, reason);
  const spec = object.manifest.spec;
  if (!isJsonObject(spec)) throw invalid('spec must be a mapping');
  const names = spec.names;
  const group = spec.group;
  const kind = isJsonObject(names) ? names.kind : undefined;
  const scope = spec.scope;
  if (typeof group !== 'string' || group === '')
    throw invalid('spec.group must be a non-empty string');
  if (typeof kind !== 'string' || kind === '')
    throw invalid('spec.names.kind must be a non-empty string');
  // A wrong scope would put every custom resource of the kind in the wrong place: refuse it here.
  if (scope !== 'Namespaced' && scope !== 'Cluster') {
    throw invalid('spec.scope must be "Namespaced" or "Cluster"');
  }
  const versions = Array.isArray(spec.versions) ? spec.versions : [];
  const versionNames = versions.map((version) =>
    isJsonObject(version) && typeof version.name === 'string' ? version.name : undefined,
  );
  if (versionNames.length === 0 || versionNames.some((name) => name === undefined || name === '')) {
    throw invalid('spec.versions must list at least one version, each with a name');
  }
  return {
    group,
    kind,
    declared: { scope, versions: versionNames as string[], crd: subject, source: object.source },
  };
}

/**
 * Indexes the CustomResourceDefinitions (apiextensions.k8s.io/v1) among the
 * revision's objects. They win over discovery: once applied, they are what
 * the cluster will serve, and on a first sync discovery does not know them yet.
 */
export function indexCrdScopes(objects: readonly CollectedObject[]): CrdScopeIndex {
  const index = new Map<string, DeclaredResource>();
  for (const object of objects) {
    if (!isCrd(object)) continue;
    const { group, kind, declared } = readCrd(object);
    const existing = index.get(key(group, kind));
    if (existing !== undefined) {
      throw new InvalidManifestError(
        declared.source.file,
        declared.source.line,
        declared.crd,
        `defines ${group} ${kind} again, already defined by ${existing.crd} at ${existing.source.file}:${existing.source.line}`,
      );
    }
    index.set(key(group, kind), declared);
  }
  return { lookup: (group, kind) => index.get(key(group, kind)) };
}
