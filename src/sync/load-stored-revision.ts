/**
 * The first step of applying a stored revision: its artifact, placed in the
 * track's cluster (namespaces filled in, scopes from discovery) and filtered
 * by the track. A revision that cannot be used is a refusal (data), not a
 * throw: the sync records it and the last good revision stays.
 */
import type { ResourceCatalog } from '../cluster/discovery.ts';
import type { KubeObject } from '../cluster/kube-object.ts';
import type { KubernetesPort } from '../cluster/kubernetes-port.ts';
import type { Track } from '../config/types.ts';
import { DriftlessError, messageOf, untilInterrupted } from '../errors.ts';
// The modules themselves, not render/index.ts: that would load every renderer.
import { parseBundle } from '../render/parse-bundle.ts';
import { placeBundle } from '../render/render-manifests.ts';
import { describeSource } from '../render/subject.ts';
import type { RenderedBundle } from '../render/types.ts';
import type { ArtifactStore } from '../store/ports.ts';
import type { Refusal } from './record-sync.ts';
import { resolveSecrets, type SecretDeps } from './resolve-secrets.ts';
import { selectObjects } from './select-objects.ts';

export interface StoredRevision {
  readonly type: 'loaded';
  /** The objects to apply, in the revision's order. */
  readonly objects: KubeObject[];
  /** Objects the track's filters leave out, with why. */
  readonly ignored: Record<string, string>;
  /** Those left out by a `syncTo: ignore` rule, which are never pruned either. */
  readonly ruledOut: ReadonlySet<string>;
  /** Objects a `syncTo: git` rule gives to the cluster: created when missing, not updated. */
  readonly toGit: ReadonlySet<string>;
  /** Objects the revision holds, ignored ones included. */
  readonly discovered: number;
  /** The capabilities digest a chart was rendered for (RenderedBundle.capabilities). */
  readonly capabilities?: string;
  /** Where each object to apply was written (`file:line`), by subject: for apply errors. */
  readonly sources: ReadonlyMap<string, string>;
}

interface LoadDeps extends SecretDeps {
  readonly cluster: KubernetesPort;
  readonly artifacts: ArtifactStore;
  /**
   * The job's deadline or interruption: reading the track's secrets stops waiting at it (the
   * cluster's requests end by it already, through `cluster`).
   */
  readonly signal?: AbortSignal;
}

/**
 * The stored artifact of `revision` as the cluster gets it: secrets resolved
 * (resolve-secrets.ts), then placed in the track's cluster. Throws when it
 * cannot be used. Shared by sync, rollback and drift.
 */
export async function loadDesiredBundle(
  track: Track,
  revision: string,
  deps: LoadDeps,
): Promise<RenderedBundle> {
  // Within the job's deadline too: a store that stops answering ends the job as a cluster does.
  const stored = parseBundle(
    await untilInterrupted(deps.artifacts.get(track.name, revision), deps.signal),
  );
  const bundle = await resolveSecrets(track, stored, deps, deps.signal);
  return placeForTrack(bundle, track, await deps.cluster.discover());
}

/**
 * Places a stored bundle in the track's cluster: the track's `namespace` for
 * objects that name none, its `targetNamespace` for every namespaced object.
 */
export function placeForTrack(
  bundle: RenderedBundle,
  track: Pick<Track, 'namespace' | 'targetNamespace'>,
  catalog: Pick<ResourceCatalog, 'scopeOf'>,
): RenderedBundle {
  return placeBundle(bundle, {
    ...(track.namespace ? { defaultNamespace: track.namespace } : {}),
    ...(track.targetNamespace ? { targetNamespace: track.targetNamespace } : {}),
    scopeOf: (group, version, kind) => catalog.scopeOf(group, version, kind),
  });
}

async function placedBundle(
  track: Track,
  revision: string,
  deps: LoadDeps,
): Promise<RenderedBundle | Refusal> {
  try {
    return await loadDesiredBundle(track, revision, deps);
  } catch (error) {
    // Cut short by the job's deadline or an interruption: not the revision's fault. The job
    // ends as it does for those (apply-revision.ts attemptWithin), nothing recorded against it.
    if (deps.signal?.aborted) throw error;
    const reason = error instanceof DriftlessError ? error.code : 'ArtifactInvalid';
    return { type: 'refused', condition: 'FilesParsed', reason, message: messageOf(error) };
  }
}

/** The objects of stored `revision` that `track` applies, or why it cannot apply them. */
export async function loadStoredRevision(
  track: Track,
  revision: string,
  deps: LoadDeps,
): Promise<StoredRevision | Refusal> {
  const bundle = await placedBundle(track, revision, deps);
  if ('type' in bundle) return bundle;
  const { selected, ignored, ruledOut, toGit } = selectObjects(
    track,
    bundle.objects,
    await deps.cluster.discover(),
  );
  if (selected.length === 0 && !track.allowEmpty) {
    // Left out by the track's filters, not absent: say which and why, not "renders no objects".
    const left = Object.entries(ignored);
    const why =
      left.length === 0
        ? 'renders no objects to apply'
        : `has ${left.length} object${left.length === 1 ? '' : 's'}, and the track's filters leave out every one (${left
            .slice(0, 3)
            .map(([subject, reason]) => `${subject}: ${reason}`)
            .join('; ')}${left.length > 3 ? `; and ${left.length - 3} more` : ''})`;
    return {
      type: 'refused',
      condition: 'FilesParsed',
      reason: 'EmptyRevision',
      message: `revision ${revision} ${why}; set allowEmpty: true on track "${track.name}" to accept that (it prunes everything)`,
    };
  }
  return {
    type: 'loaded',
    objects: selected.map((object) => object.manifest as unknown as KubeObject),
    ignored,
    ruledOut,
    toGit,
    discovered: bundle.objects.length,
    sources: new Map(selected.map((object) => [object.subject, describeSource(object.source)])),
    ...(bundle.capabilities === undefined ? {} : { capabilities: bundle.capabilities }),
  };
}
