/**
 * The cluster capabilities a chart renders for, and the digest a bundle
 * records of them. Apart from helm.ts so that the apply side, which compares
 * digests on every sync, does not load the renderers.
 */
import { createHash } from 'node:crypto';

/** What the target cluster serves, as Helm's `.Capabilities` sees it. */
export interface ClusterCapabilities {
  /** e.g. `v1.36.3`. */
  readonly kubeVersion: string;
  /** `group/version` and `group/version/Kind` entries, as `helm template --api-versions` takes them. */
  readonly apiVersions: readonly string[];
}

/** What a bundle records of the capabilities it was rendered for: `none`, or a digest of them. */
export function capabilitiesDigest(capabilities: ClusterCapabilities | undefined): string {
  if (capabilities === undefined) return 'none';
  const text = JSON.stringify([capabilities.kubeVersion, [...capabilities.apiVersions].sort()]);
  return `sha256:${createHash('sha256').update(text).digest('hex')}`;
}
