/**
 * A digest of how a track renders a commit. A module of its own: the fetch step computes it
 * for every fetch, and loads the renderers only when it renders.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical-json.ts';
import type { RenderSpec } from './render-revision.ts';

/**
 * A digest of how a track renders a commit, beyond the commit itself: the spec's fields but its
 * name. A fetch renders a stored commit again when it changed (fetch-track.ts), since a new
 * subPath, kustomize or sourceIgnore setting renders the same commit to other objects.
 */
export function renderSpecDigest(spec: RenderSpec): string {
  // Picked one by one: a whole Track is passed at run time, and its other fields do not count.
  const picked: Omit<RenderSpec, 'name'> = {
    subPath: spec.subPath,
    namespace: spec.namespace,
    kustomize: spec.kustomize,
    kustomizeRemoteResources: spec.kustomizeRemoteResources,
    helm: spec.helm,
    sourceIgnore: spec.sourceIgnore,
    substitute: spec.substitute,
    substituteFrom: spec.substituteFrom,
    decryption: spec.decryption,
  };
  // Through JSON first: fields left unset are dropped, as canonical JSON has no undefined.
  const text = canonicalJson(JSON.parse(JSON.stringify(picked)));
  return `sha256:${createHash('sha256').update(text).digest('hex')}`;
}
