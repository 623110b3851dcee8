import type { RenderLimits } from './types.ts';

const MiB = 1024 * 1024;

/**
 * Default bounds. 4 MiB per file and 64 MiB per revision are far above real
 * manifest repositories yet keep a Lambda's memory safe; alias expansion is
 * capped at ~1 MB of added content, orders of magnitude above what anchors in
 * hand-written manifests add, and far below what a "billion laughs" needs.
 */
export const DEFAULT_RENDER_LIMITS: RenderLimits = Object.freeze({
  maxFileBytes: 4 * MiB,
  maxTotalBytes: 64 * MiB,
  maxAliasExpansion: 1_000_000,
  maxDepth: 100,
  // Well inside the fetch function's 120 s, which also fetches and stores.
  rendererTimeoutMs: 60_000,
});

/** Fills the limits a caller left out with {@link DEFAULT_RENDER_LIMITS}. */
export function resolveLimits(limits: Partial<RenderLimits> | undefined): RenderLimits {
  return { ...DEFAULT_RENDER_LIMITS, ...limits };
}
