/**
 * The apply side of a sync: a stored revision -> a reconciled cluster.
 *
 * artifact -> place (scopes from discovery) -> select -> staged apply ->
 * prune (only when everything applied) -> health -> status, inventory and
 * history. Runs only where cluster credentials are, one job per track at a
 * time (the apply lease in the track's state guards that across processes).
 */
import { randomUUID } from 'node:crypto';
import { applyObjects } from '../apply/apply-objects.ts';
import { hasFailures, type ChangeSetEntry } from '../apply/changeset.ts';
import { waitForHealth } from '../apply/health.ts';
import { inventoryOf, refOfEntry, staleEntries, type InventoryEntry } from '../apply/inventory.ts';
import { pruneObjects } from '../apply/prune.ts';
import { objectKey, type KubeObject, type ObjectRef } from '../cluster/kube-object.ts';
import type { KubernetesPort } from '../cluster/kubernetes-port.ts';
import type { Track } from '../config/types.ts';
import { DriftlessError, messageOf } from '../errors.ts';
import { parseBundle, placeBundle } from '../render/index.ts';
import type { RenderedBundle } from '../render/types.ts';
import type { ArtifactStore, HistoryTrigger, StateStore } from '../store/ports.ts';
import type { SyncJob } from './jobs.ts';
import { selectObjects } from './select-objects.ts';
import {
  acquireApplyLease,
  conditionOf,
  DEPENDENCY_NOT_READY,
  readTrackState,
  releaseApplyLease,
  setCondition,
  updateTrackState,
  type TrackState,
} from './track-state.ts';

export interface ApplyDeps {
  readonly cluster: KubernetesPort;
  readonly artifacts: ArtifactStore;
  readonly state: StateStore;
  readonly now?: () => Date;
  /** Progress of the apply, for people watching a large set. */
  readonly onProgress?: (done: number, total: number) => void;
}

/** `superseded`: a later-resolved revision is desired; this job did nothing. */
export type SyncOutcome = 'applied' | 'unchanged' | 'failed' | 'pinned' | 'superseded';

export interface SyncResult {
  readonly track: string;
  readonly revision: string | null;
  readonly result: SyncOutcome;
  readonly changeset: ChangeSetEntry[];
  readonly state: TrackState;
  /** Why the sync failed or was refused; undefined on success. */
  readonly error?: string;
}

/** A revision the apply could not use: the condition it failed and why. Nothing was applied. */
class RevisionRefused extends Error {
  constructor(
    readonly condition: 'FilesParsed' | 'Ready',
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

/** Why the track must wait for its dependencies, or undefined when they are all Ready. */
async function unreadyDependency(track: Track, state: StateStore): Promise<string | undefined> {
  for (const name of track.dependsOn) {
    const dependency = await readTrackState(state, name);
    const ready = conditionOf(dependency, 'Ready')?.status === 'True';
    const current = dependency.pinned ?? dependency.desiredRevision;
    if (!ready || !dependency.appliedRevision || dependency.appliedRevision !== current) {
      return `dependency "${name}" is not Ready at its current revision`;
    }
  }
  return undefined;
}

/** The stored revision placed in the cluster: namespaces filled in, scopes from discovery. */
async function loadPlacedBundle(
  track: Track,
  revision: string,
  deps: ApplyDeps,
): Promise<RenderedBundle> {
  try {
    const bundle = parseBundle(await deps.artifacts.get(track.name, revision));
    const catalog = await deps.cluster.discover();
    return placeBundle(bundle, {
      ...(track.namespace ? { defaultNamespace: track.namespace } : {}),
      scopeOf: (group, version, kind) => catalog.scopeOf(group, version, kind),
    });
  } catch (error) {
    const reason = error instanceof DriftlessError ? error.code : 'ArtifactInvalid';
    throw new RevisionRefused('FilesParsed', reason, messageOf(error));
  }
}

function outcomeOf(changeset: readonly ChangeSetEntry[]): SyncOutcome {
  if (hasFailures(changeset)) return 'failed';
  const changed = changeset.some((e) => e.action !== 'unchanged' && e.action !== 'skipped');
  return changed ? 'applied' : 'unchanged';
}

/** Previous inventory plus what was applied: objects created by a failed sync are still pruned later. */
function mergeInventory(
  previous: readonly InventoryEntry[],
  applied: readonly ObjectRef[],
): InventoryEntry[] {
  const byKey = new Map<string, ObjectRef>();
  for (const entry of previous) byKey.set(objectKey(refOfEntry(entry)), refOfEntry(entry));
  for (const ref of applied) byKey.set(objectKey(ref), ref);
  return inventoryOf([...byKey.values()]);
}

export interface ApplyStoredOptions {
  readonly trigger: HistoryTrigger;
  /** Rollback: apply even though the track is pinned, and pin it at this revision. */
  readonly pin?: boolean;
}

/**
 * Applies a stored revision under the track's apply lease and records the
 * outcome. The shared core of sync and rollback jobs.
 */
export async function applyStoredRevision(
  track: Track,
  revision: string,
  options: ApplyStoredOptions,
  deps: ApplyDeps,
  /** Decides, under the lease, whether the job still applies; return a result to stop. */
  precheck?: (state: TrackState) => SyncOutcome | undefined,
): Promise<SyncResult> {
  const now = deps.now ?? (() => new Date());
  const holder = randomUUID();
  await acquireApplyLease(deps.state, track.name, holder, track.timeout * 2 + 60_000, now());
  let changeset: ChangeSetEntry[] = [];
  const finish = async (
    result: SyncOutcome,
    change: (state: TrackState) => void,
    error?: string,
  ): Promise<SyncResult> => {
    const state = await updateTrackState(deps.state, track.name, (s) => {
      change(s);
      releaseApplyLease(s, holder);
    });
    if (result !== 'pinned' && result !== 'superseded') {
      await deps.state.appendHistory(track.name, {
        revision,
        appliedAt: now().toISOString(),
        result,
        trigger: options.trigger,
        ...(error ? { error } : {}),
      });
    }
    return { track: track.name, revision, result, changeset, state, ...(error ? { error } : {}) };
  };

  try {
    const before = await readTrackState(deps.state, track.name);
    const early = precheck?.(before);
    if (early === 'pinned') {
      const pinnedAt = before.pinned;
      return await finish('pinned', (state) => {
        setCondition(
          state,
          'Ready',
          conditionOf(state, 'Ready')?.status ?? 'Unknown',
          'Pinned',
          `pinned at ${pinnedAt}; run "driftless unpin" to follow Git again`,
          now(),
        );
      });
    }
    if (early) return await finish(early, () => undefined);
    const waitingFor = await unreadyDependency(track, deps.state);
    if (waitingFor) throw new RevisionRefused('Ready', DEPENDENCY_NOT_READY, waitingFor);

    const bundle = await loadPlacedBundle(track, revision, deps);
    const catalog = await deps.cluster.discover();
    const { selected, ignored } = selectObjects(track, bundle.objects, catalog);
    if (selected.length === 0 && !track.allowEmpty) {
      throw new RevisionRefused(
        'FilesParsed',
        'EmptyRevision',
        `revision ${revision} renders no objects to apply; set allowEmpty: true on track "${track.name}" to accept that (it prunes everything)`,
      );
    }

    const desired = selected.map((object) => object.manifest as unknown as KubeObject);
    const applied = await applyObjects(deps.cluster, desired, {
      track: track.name,
      timeoutMs: track.timeout,
      ...(deps.onProgress ? { onProgress: deps.onProgress } : {}),
    });
    changeset = [...applied.changeset];
    const applyFailed = hasFailures(applied.changeset);

    // Prune only when every object of the new revision applied.
    let inventory: InventoryEntry[];
    let pruneFailed = false;
    if (applyFailed) {
      inventory = mergeInventory(before.inventory, applied.applied);
    } else if (track.prune) {
      const stale = staleEntries(before.inventory, applied.applied);
      const pruned = await pruneObjects(deps.cluster, stale, { track: track.name });
      changeset.push(...pruned);
      pruneFailed = hasFailures(pruned);
      const failedSubjects = new Set(
        pruned.filter((e) => e.action === 'failed').map((e) => e.subject),
      );
      const kept = stale.filter((entry) => failedSubjects.has(entry.subject)).map(refOfEntry);
      inventory = inventoryOf([...applied.applied, ...kept]);
    } else {
      inventory = inventoryOf(applied.applied);
    }

    const healthRefs: ObjectRef[] =
      track.healthChecks.length > 0 ? track.healthChecks : track.wait ? applied.applied : [];
    const health =
      !applyFailed && healthRefs.length > 0
        ? await waitForHealth(deps.cluster, healthRefs, track.timeout)
        : undefined;
    const unhealthy = health?.results.filter((r) => r.state !== 'Current') ?? [];

    const result =
      applyFailed || pruneFailed || (health && !health.healthy) ? 'failed' : outcomeOf(changeset);
    const failures = changeset
      .filter((e) => e.action === 'failed')
      .map((e) => e.error ?? e.subject);
    const healthMessage = unhealthy.map((r) => `${r.subject}: ${r.message}`).join('; ');
    const error =
      failures.length > 0
        ? failures.join('; ')
        : health && !health.healthy
          ? `not healthy within ${track.timeout} ms: ${healthMessage}`
          : undefined;
    const counted = (actions: readonly string[]): number =>
      changeset.filter((e) => actions.includes(e.action)).length;

    return await finish(
      result,
      (state) => {
        if (!applyFailed) state.appliedRevision = revision;
        if (options.pin) state.pinned = revision;
        state.inventory = inventory;
        state.ignoredObjects = ignored;
        state.objectsDiscovered = bundle.objects.length;
        state.objectsIgnored = Object.keys(ignored).length;
        state.objectsApplied = counted(['created', 'configured', 'recreated']);
        state.objectsInSync = counted(['created', 'configured', 'unchanged', 'recreated']);
        setCondition(
          state,
          'ChildrenUpToDate',
          applyFailed ? 'False' : 'True',
          applyFailed ? 'ApplyFailed' : 'Applied',
          applyFailed ? failures.join('; ') : `${selected.length} objects applied at ${revision}`,
          now(),
        );
        if (!applyFailed && track.prune) {
          setCondition(
            state,
            'ChildrenGarbageCollected',
            pruneFailed ? 'False' : 'True',
            pruneFailed ? 'PruneFailed' : 'Pruned',
            pruneFailed ? failures.join('; ') : 'objects that left Git were pruned',
            now(),
          );
        }
        if (health) {
          setCondition(
            state,
            'Healthy',
            health.healthy ? 'True' : 'False',
            health.healthy ? 'Healthy' : 'HealthCheckFailed',
            health.healthy ? 'all checked objects are ready' : healthMessage,
            now(),
          );
        }
        setCondition(
          state,
          'Ready',
          result === 'failed' ? 'False' : 'True',
          result === 'failed' ? 'SyncFailed' : options.pin ? 'RolledBack' : 'Synced',
          error ?? `applied revision ${revision}${options.pin ? ' (pinned)' : ''}`,
          now(),
        );
      },
      error,
    );
  } catch (error) {
    if (!(error instanceof RevisionRefused)) {
      await updateTrackState(deps.state, track.name, (s) => releaseApplyLease(s, holder));
      throw error;
    }
    // Nothing was applied: the last good revision stays, the reason goes into status.
    const refused = error;
    return await finish(
      'failed',
      (state) => {
        if (refused.condition !== 'Ready') {
          setCondition(state, refused.condition, 'False', refused.reason, refused.message, now());
        }
        setCondition(state, 'Ready', 'False', refused.reason, refused.message, now());
      },
      refused.message,
    );
  }
}

/**
 * A sync job: applies the job's revision unless the track is pinned or a
 * revision resolved later is desired by now (newest wins).
 */
export async function applyRevision(
  track: Track,
  job: SyncJob,
  deps: ApplyDeps,
): Promise<SyncResult> {
  return applyStoredRevision(track, job.revision, { trigger: job.trigger }, deps, (state) => {
    if (state.pinned) return 'pinned';
    const newer = state.desiredResolvedAt !== null && state.desiredResolvedAt > job.resolvedAt;
    if (newer && state.desiredRevision !== job.revision) return 'superseded';
    return undefined;
  });
}
