import { joinApiVersion } from './api-version.ts';
import type { CollectedObject } from './collect-objects.ts';
import type { CrdScopeIndex } from './crd-scope-index.ts';
import { UnknownResourceError } from './errors.ts';
import { formatSubject } from './subject.ts';
import type { ResourceScope, ScopeResolver } from './types.ts';

/**
 * Decides an object's scope: a CRD in the same revision wins over the cluster's
 * discovery; a kind neither knows is an error rather than a guess.
 */
export function resolveScope(
  object: CollectedObject,
  crds: CrdScopeIndex,
  scopeOf: ScopeResolver,
): ResourceScope {
  const { group, version, kind, source } = object;
  const apiVersion = joinApiVersion(group, version);
  const subject = formatSubject(kind, object.name, object.writtenNamespace);
  const declared = crds.lookup(group, kind);
  if (declared !== undefined) {
    if (declared.versions.includes(version)) return declared.scope;
    // The revision's CRD replaces the cluster's: a version it does not list will not be served.
    throw new UnknownResourceError(
      source.file,
      source.line,
      subject,
      apiVersion,
      kind,
      `${declared.crd} (${declared.source.file}:${declared.source.line}) serves only ${declared.versions.join(', ')}`,
    );
  }
  const scope = scopeOf(group, version, kind);
  if (scope === undefined) {
    throw new UnknownResourceError(
      source.file,
      source.line,
      subject,
      apiVersion,
      kind,
      'is its CRD installed?',
    );
  }
  return scope;
}
