/**
 * A stored revision as people read it on the dashboard: its manifests as
 * YAML, with every Secret's values masked (as Argo CD masks them: a plain
 * Secret committed to Git is still not shown to every reader), and the
 * unified diff between two revisions.
 */
import type { Track } from '../config/types.ts';
import { parseBundle } from '../render/parse-bundle.ts';
import { formatManifests } from '../render/manifests-yaml.ts';
import type { JsonObject, RenderedBundle } from '../render/types.ts';
import type { ArtifactStore } from '../store/ports.ts';
import { unifiedDiff } from '../unified-diff.ts';
import { MASKED_VALUE } from '../sync/observed-object.ts';

function maskSecret(manifest: JsonObject): JsonObject {
  if (manifest['kind'] !== 'Secret' || manifest['apiVersion'] !== 'v1') return manifest;
  const masked: JsonObject = { ...manifest };
  for (const field of ['data', 'stringData'] as const) {
    const values = manifest[field];
    if (values && typeof values === 'object' && !Array.isArray(values)) {
      masked[field] = Object.fromEntries(Object.keys(values).map((key) => [key, MASKED_VALUE]));
    }
  }
  return masked;
}

function masked(bundle: RenderedBundle): Pick<RenderedBundle, 'objects'> {
  return {
    objects: bundle.objects.map((object) => ({ ...object, manifest: maskSecret(object.manifest) })),
  };
}

/** The manifests of a stored revision as multi-document YAML, Secret values masked. */
export async function revisionManifests(
  track: Pick<Track, 'name'>,
  revision: string,
  artifacts: ArtifactStore,
): Promise<string> {
  return formatManifests(masked(parseBundle(await artifacts.get(track.name, revision))));
}

/** The unified diff of two stored revisions' manifests; '' when they render the same. */
export async function revisionDiff(
  track: Pick<Track, 'name'>,
  from: string,
  to: string,
  artifacts: ArtifactStore,
): Promise<string> {
  const [before, after] = await Promise.all([
    revisionManifests(track, from, artifacts),
    revisionManifests(track, to, artifacts),
  ]);
  return unifiedDiff(
    `${track.name}@${from.slice(0, 12)}`,
    `${track.name}@${to.slice(0, 12)}`,
    before,
    after,
  );
}
