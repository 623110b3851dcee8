/**
 * The sync use-case: from a Git revision to a reconciled cluster.
 *
 * resolve -> artifact (render once per revision, stored with its digest) ->
 * select -> staged apply -> prune (only when everything applied) -> health ->
 * status, inventory and history. A revision that fails to fetch, parse,
 * render or validate changes nothing in the cluster.
 */
import { applyObjects } from '../apply/apply-objects.ts';
import { hasFailures, type ChangeSetEntry } from '../apply/changeset.ts';
import { waitForHealth } from '../apply/health.ts';
import { inventoryOf, refOfEntry, staleEntries, type InventoryEntry } from '../apply/inventory.ts';
import { pruneObjects } from '../apply/prune.ts';
import { objectKey, type KubeObject, type ObjectRef } from '../cluster/kube-object.ts';
import type { KubernetesPort } from '../cluster/kubernetes-port.ts';
import type { Track } from '../config/types.ts';
import { DriftlessError } from '../errors.ts';
import { parseBundle, renderManifests, serializeBundle } from '../render/index.ts';
import type { RenderedBundle } from '../render/types.ts';
import type { GitSource } from '../source/ports.ts';
import type { ArtifactStore, HistoryTrigger, StateStore } from '../store/ports.ts';
import { selectObjects } from './select-objects.ts';
import {
  conditionOf,
  readTrackState,
  setCondition,
  updateTrackState,
  type TrackState,
} from './track-state.ts';

export interface SyncDeps {
  readonly cluster: KubernetesPort;
  readonly source: GitSource;
  readonly artifacts: ArtifactStore;
  readonly state: StateStore;
  readonly now?: () => Date;
  /** Progress of the apply, for people watching a large set. */
  readonly onProgress?: (done: number, total: number) => void;
}

export interface SyncRequest {
  /** A commit sha or a reference to sync instead of the track's own. */
  readonly revision?: string;
  readonly trigger: HistoryTrigger;
}

export type SyncOutcome = 'applied' | 'unchanged' | 'failed' | 'pinned';

export interface SyncResult {
  readonly track: string;
  readonly revision: string | null;
  readonly result: SyncOutcome;
  readonly changeset: ChangeSetEntry[];
  readonly state: TrackState;
  /** Why the sync failed or was refused; undefined on success. */
  readonly error?: string;
}

const FULL_SHA = /^[0-9a-f]{40}([0-9a-f]{24})?$/;

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function reasonOf(error: unknown, fallback: string): string {
  return error instanceof DriftlessError ? error.code : fallback;
}

/** A revision the sync could not use: the stage it failed at, and why. */
class RevisionRefused extends Error {
  constructor(
    readonly condition: 'FilesFetched' | 'FilesParsed' | 'Ready',
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

/** Loads the revision's rendered bundle from the store, rendering and storing it the first time. */
async function loadBundle(track: Track, revision: string, deps: SyncDeps): Promise<RenderedBundle> {
  if (await deps.artifacts.has(track.name, revision)) {
    try {
      return parseBundle(await deps.artifacts.get(track.name, revision));
    } catch (error) {
      throw new RevisionRefused(
        'FilesParsed',
        reasonOf(error, 'ArtifactInvalid'),
        `stored artifact: ${messageOf(error)}`,
      );
    }
  }
  let files;
  try {
    files = await deps.source.readFiles(track, revision);
  } catch (error) {
    throw new RevisionRefused('FilesFetched', reasonOf(error, 'FetchFailed'), messageOf(error));
  }
  try {
    const catalog = await deps.cluster.discover();
    const bundle = renderManifests(files, {
      ...(track.subPath ? { subPath: track.subPath } : {}),
      ...(track.namespace ? { defaultNamespace: track.namespace } : {}),
      scopeOf: (group, version, kind) => catalog.scopeOf(group, version, kind),
    });
    await deps.artifacts.put(track.name, revision, serializeBundle(bundle));
    return bundle;
  } catch (error) {
    throw new RevisionRefused('FilesParsed', reasonOf(error, 'RenderFailed'), messageOf(error));
  }
}

async function resolveRevision(
  track: Track,
  request: SyncRequest,
  deps: SyncDeps,
): Promise<string> {
  if (request.revision && FULL_SHA.test(request.revision)) return request.revision;
  try {
    const target = request.revision
      ? { ...track, reference: request.revision, semver: undefined }
      : track;
    return (await deps.source.resolve(target)).revision;
  } catch (error) {
    throw new RevisionRefused('FilesFetched', reasonOf(error, 'FetchFailed'), messageOf(error));
  }
}

/** Why the track must wait for its dependencies, or undefined when they are all Ready. */
async function unreadyDependency(track: Track, deps: SyncDeps): Promise<string | undefined> {
  for (const name of track.dependsOn) {
    const state = await readTrackState(deps.state, name);
    const ready = conditionOf(state, 'Ready')?.status === 'True';
    if (
      !ready ||
      !state.appliedRevision ||
      state.appliedRevision !== (state.pinned ?? state.desiredRevision)
    ) {
      return `dependency "${name}" is not Ready at its current revision`;
    }
  }
  return undefined;
}

function outcomeOf(changeset: readonly ChangeSetEntry[]): SyncOutcome {
  if (hasFailures(changeset)) return 'failed';
  const changed = changeset.some((e) => e.action !== 'unchanged' && e.action !== 'skipped');
  return changed ? 'applied' : 'unchanged';
}

/** Syncs one track to its newest revision (or `request.revision`), recording status and history. */
export async function syncTrack(
  track: Track,
  request: SyncRequest,
  deps: SyncDeps,
): Promise<SyncResult> {
  const now = deps.now ?? (() => new Date());
  const before = await readTrackState(deps.state, track.name);
  let revision: string | null = null;
  let changeset: ChangeSetEntry[] = [];

  const finish = async (
    result: SyncOutcome,
    change: (state: TrackState) => void,
    error?: string,
  ): Promise<SyncResult> => {
    const state = await updateTrackState(deps.state, track.name, change);
    if (result !== 'pinned' && revision) {
      await deps.state.appendHistory(track.name, {
        revision,
        appliedAt: now().toISOString(),
        result,
        trigger: request.trigger,
        ...(error ? { error } : {}),
      });
    }
    return { track: track.name, revision, result, changeset, state, ...(error ? { error } : {}) };
  };

  try {
    revision = await resolveRevision(track, request, deps);
    const resolvedAt = now().toISOString();
    const recordDesired = (state: TrackState): void => {
      state.desiredRevision = revision;
      state.desiredResolvedAt = resolvedAt;
      setCondition(state, 'FilesFetched', 'True', 'Fetched', `fetched revision ${revision}`, now());
    };
    if (before.pinned) {
      const pinnedAt = before.pinned;
      return await finish('pinned', (state) => {
        recordDesired(state);
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
    const waitingFor = await unreadyDependency(track, deps);
    if (waitingFor) throw new RevisionRefused('Ready', 'DependencyNotReady', waitingFor);

    const bundle = await loadBundle(track, revision, deps);
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
    const inSync = changeset.filter((e) =>
      ['created', 'configured', 'unchanged', 'recreated'].includes(e.action),
    ).length;

    return await finish(
      result,
      (state) => {
        recordDesired(state);
        setCondition(
          state,
          'FilesParsed',
          'True',
          'Parsed',
          `${bundle.objects.length} objects rendered`,
          now(),
        );
        if (!applyFailed) state.appliedRevision = revision;
        state.inventory = inventory;
        state.ignoredObjects = ignored;
        state.objectsDiscovered = bundle.objects.length;
        state.objectsIgnored = Object.keys(ignored).length;
        state.objectsApplied = changeset.filter((e) =>
          ['created', 'configured', 'recreated'].includes(e.action),
        ).length;
        state.objectsInSync = inSync;
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
          result === 'failed' ? 'SyncFailed' : 'Synced',
          error ?? `applied revision ${revision}`,
          now(),
        );
      },
      error,
    );
  } catch (error) {
    if (!(error instanceof RevisionRefused)) throw error;
    // Nothing was applied: the last good revision stays, the reason goes into status.
    const refused = error;
    return await finish(
      'failed',
      (state) => {
        if (refused.condition !== 'FilesFetched' && revision) {
          state.desiredRevision = revision;
          setCondition(
            state,
            'FilesFetched',
            'True',
            'Fetched',
            `fetched revision ${revision}`,
            now(),
          );
        }
        if (refused.condition !== 'Ready')
          setCondition(state, refused.condition, 'False', refused.reason, refused.message, now());
        setCondition(state, 'Ready', 'False', refused.reason, refused.message, now());
      },
      refused.message,
    );
  }
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
