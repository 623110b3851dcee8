/**
 * Render: the files of a Git revision -> a validated {@link RenderedBundle},
 * and the bundle's canonical bytes and digest (the stored artifact).
 */
export { parseRevision, placeBundle, renderManifests } from './render-manifests.ts';
export {
  renderRevision,
  rendererOf,
  type RenderSpec,
  type RendererKind,
} from './render-revision.ts';
export { capabilitiesDigest, type ClusterCapabilities } from './capabilities.ts';
export { serializeBundle, BUNDLE_FORMAT } from './serialize-bundle.ts';
export { parseBundle } from './parse-bundle.ts';
export { bundleDigest } from './bundle-digest.ts';
export { renderSpecDigest } from './render-spec-digest.ts';
export { DEFAULT_RENDER_LIMITS } from './limits.ts';
export { normalizeSubPath } from './select-manifest-files.ts';
export { formatSubject } from './subject.ts';
export * from './errors.ts';
export type * from './types.ts';
