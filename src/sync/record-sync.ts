/**
 * The second step of a sync: what the attempt came to, written down — the
 * track's status (conditions, counters, inventory, applied revision, pin)
 * in one state write that also gives the apply lease back, then a history
 * line. Pure bookkeeping: it reads nothing from the cluster.
 */
import type { ChangeAction } from '../apply/changeset.ts';
import { describeUnhealthy } from '../apply/health.ts';
import type { ReconcileResult } from '../apply/reconcile-objects.ts';
import type { ClusterCapabilities } from '../render/index.ts';
import type { HistoryEntry, HistoryTrigger, StateStore } from '../store/ports.ts';
import { settledByApply } from './own-writes.ts';
import type { SyncOutcome, SyncResult } from './sync-result.ts';
import {
  conditionOf,
  DEPENDENCY_NOT_READY,
  failedToParse,
  releaseApplyLease,
  setCondition,
  setParsed,
  setUnloaded,
  updateTrackState,
  type TrackState,
} from './track-state.ts';

/** A revision the sync could not use: the condition it failed and why. Nothing was applied. */
export interface Refusal {
  readonly type: 'refused';
  readonly condition: 'FilesParsed' | 'Ready';
  readonly reason: string;
  readonly message: string;
}

/** What a sync attempt came to, before it is recorded. */
export type SyncAttempt =
  /** The track is pinned: nothing was applied. */
  | { readonly type: 'pinned'; readonly pinnedAt: string | null }
  /** A revision resolved later is desired: nothing was applied, nothing goes into history. */
  | { readonly type: 'superseded' }
  /**
   * A chart rendered for other cluster capabilities than the cluster's:
   * nothing was applied; the capabilities are recorded and the commit is
   * rendered again for them.
   */
  | { readonly type: 'rerender'; readonly capabilities: ClusterCapabilities }
  | Refusal
  | {
      readonly type: 'reconciled';
      /** Objects the revision holds, ignored ones included. */
      readonly discovered: number;
      /** Objects the track's filters left out, with why. */
      readonly ignored: Record<string, string>;
      /** Objects applied (all but the ignored ones). */
      readonly selected: number;
      readonly result: ReconcileResult;
    };

export interface RecordOptions {
  readonly trigger: HistoryTrigger;
  /** Rollback: pin the track at the revision. */
  readonly pin?: boolean;
  /** The apply lease to give back in the same write. */
  readonly holder: string;
  /** The track's cluster, recorded with what was applied there. */
  readonly cluster?: string;
  readonly now: () => Date;
  /** When the job took the track: history's `durationMs` counts from here. */
  readonly startedAt?: Date;
  /** Who asked, when a person did: history's `by`. */
  readonly by?: string;
}

type Reconciled = Extract<SyncAttempt, { type: 'reconciled' }>;

function outcomeOf(attempt: SyncAttempt): SyncOutcome {
  switch (attempt.type) {
    case 'pinned':
    case 'superseded':
      return attempt.type;
    case 'rerender':
      return 'superseded';
    case 'refused':
      return 'failed';
    case 'reconciled':
      return attempt.result.outcome;
  }
}

function errorOf(attempt: SyncAttempt): string | undefined {
  if (attempt.type === 'refused') return attempt.message;
  return attempt.type === 'reconciled' ? attempt.result.error : undefined;
}

function recordReconciled(
  state: TrackState,
  revision: string,
  attempt: Reconciled,
  options: RecordOptions,
): void {
  const { result } = attempt;
  const now = options.now();
  const counted = (actions: readonly ChangeAction[]): number =>
    result.changeset.filter((e) => actions.includes(e.action)).length;
  if (!result.applyFailed) {
    state.appliedRevision = revision;
    // Everything applied, and what left Git was pruned: nothing is pending any more.
    state.applying = null;
  }
  // The cluster holds what this apply sent (a part of it, when it failed): a write-back made
  // before it no longer tells a person's revert from that (own-writes.ts).
  if (state.unsyncedWriteBacks !== undefined) {
    state.unsyncedWriteBacks = settledByApply(state.unsyncedWriteBacks);
  }
  if (options.cluster !== undefined) state.cluster = options.cluster;
  if (options.pin) state.pinned = revision;
  // Loaded now: FilesParsed, False since an earlier load of it (or of another) failed, holds again.
  if (failedToParse(state, revision)) setParsed(state, revision, now);
  else settleUnloaded(state, revision, now);
  state.inventory = result.inventory;
  state.failedObjects = Object.fromEntries(
    result.changeset
      .filter((entry) => entry.action === 'failed')
      .map((entry) => [entry.subject, entry.error ?? 'failed']),
  );
  state.ignoredObjects = attempt.ignored;
  state.objectsDiscovered = attempt.discovered;
  state.objectsIgnored = Object.keys(attempt.ignored).length;
  state.objectsApplied = counted(['created', 'configured', 'recreated']);
  state.objectsInSync = counted(['created', 'configured', 'unchanged', 'recreated']);
  const failures = result.error ?? '';
  // Another owner's object is the user's to sort out, not a failure to retry: say so.
  const conflict = result.changeset.some((e) => e.conflict === 'ownership');
  const failedReason = conflict ? 'OwnershipConflict' : 'ApplyFailed';
  setCondition(
    state,
    'ChildrenUpToDate',
    result.applyFailed ? 'False' : 'True',
    result.applyFailed ? failedReason : 'Applied',
    result.applyFailed ? failures : `${attempt.selected} objects applied at ${revision}`,
    now,
  );
  if (result.pruneFailed !== undefined) {
    setCondition(
      state,
      'ChildrenGarbageCollected',
      result.pruneFailed ? 'False' : 'True',
      result.pruneFailed ? 'PruneFailed' : 'Pruned',
      result.pruneFailed ? failures : 'objects that left Git were pruned',
      now,
    );
  } else if (result.applyFailed && conditionOf(state, 'ChildrenGarbageCollected') !== undefined) {
    // Nothing is pruned after a failed apply: an earlier sync's "pruned" no longer holds.
    setCondition(
      state,
      'ChildrenGarbageCollected',
      'Unknown',
      'PruneSkipped',
      `nothing was pruned at ${revision}: objects failed to apply`,
      now,
    );
  }
  if (result.health?.cancelled !== undefined) {
    setCondition(
      state,
      'Healthy',
      'Unknown',
      'HealthCheckCanceled',
      `health check of ${revision} cancelled: ${result.health.cancelled}`,
      now,
    );
  } else if (result.health) {
    const { healthy } = result.health;
    setCondition(
      state,
      'Healthy',
      healthy ? 'True' : 'False',
      healthy ? 'Healthy' : 'HealthCheckFailed',
      healthy ? 'all checked objects are ready' : describeUnhealthy(result.health),
      now,
    );
  }
  const failed = result.outcome === 'failed';
  if (!failed && result.health?.cancelled !== undefined) {
    // Applied, health not known: the newer revision's sync decides Ready.
    setCondition(
      state,
      'Ready',
      'Unknown',
      'HealthCheckCanceled',
      `applied revision ${revision}; its health check was cancelled: ${result.health.cancelled}`,
      now,
    );
    return;
  }
  setCondition(
    state,
    'Ready',
    failed ? 'False' : 'True',
    failed
      ? conflict
        ? 'OwnershipConflict'
        : 'SyncFailed'
      : options.pin
        ? 'RolledBack'
        : 'Synced',
    result.error ?? `applied revision ${revision}${options.pin ? ' (pinned)' : ''}`,
    now,
  );
}

/** A commit fetched while the track was pinned at another, which failed to render or be fetched. */
export interface FailedWhilePinned {
  readonly revision: string;
  /** The condition its failure set False. */
  readonly condition: 'FilesFetched' | 'FilesParsed';
}

/**
 * Ready while the track is pinned: the status the pinned revision's sync left is kept, the
 * reason says Git is not followed. A newer commit that failed meanwhile (`failed`) is named but
 * does not make the track unready: with the pin nothing would apply it, and the pinned revision
 * runs as before — as a suspended Flux source or an Argo CD application pinned to a revision
 * takes no notice of new commits. Its own condition (FilesParsed, FilesFetched) says why. A
 * newer commit fetched and stored since (fetch-track.ts) sets it again without `failed`.
 */
export function setPinnedReady(
  state: TrackState,
  pinnedAt: string | null,
  now: Date,
  failed?: FailedWhilePinned,
): void {
  const newer =
    failed === undefined
      ? ''
      : `; revision ${failed.revision}, fetched meanwhile, failed (see ${failed.condition}) and is not applied`;
  setCondition(
    state,
    'Ready',
    conditionOf(state, 'Ready')?.status ?? 'Unknown',
    'Pinned',
    `pinned at ${pinnedAt}; run "driftless unpin" to follow Git again${newer}`,
    now,
  );
}

/**
 * FilesParsed False because another revision than `concerned` could not be loaded no longer
 * holds: the track is about `concerned` now — the revision a sync loaded or waits to apply, the
 * pin that stopped it, the newer revision that superseded it. `concerned` was parsed and stored
 * (a fetch, or the rollback that pinned it, did). A False of `concerned` itself stays until a
 * sync loads it; so does one of a commit that failed to render (no unloadedRevision), which the
 * next fetch judges.
 */
function settleUnloaded(state: TrackState, concerned: string | null, now: Date): void {
  const unloaded = state.unloadedRevision;
  if (concerned === null || typeof unloaded !== 'string' || unloaded === concerned) return;
  if (conditionOf(state, 'FilesParsed')?.status === 'False') setParsed(state, concerned, now);
}

/**
 * Whether `entry` is the outcome of a sync or rollback (or of a fetch or render that failed) as
 * {@link recordSync} and the fetch write them: not a write-back, drift correction or lifecycle
 * action (a delete), which use the results `unchanged` and `failed` too.
 */
export function isSyncEntry(entry: HistoryEntry): boolean {
  return (
    (entry.result === 'applied' || entry.result === 'unchanged' || entry.result === 'failed') &&
    entry.trigger !== 'write-back' &&
    entry['action'] === undefined &&
    entry['drifted'] === undefined
  );
}

/** Writes the attempt into the track's state (releasing the lease) and history. */
export async function recordSync(
  store: StateStore,
  track: string,
  revision: string,
  attempt: SyncAttempt,
  options: RecordOptions,
): Promise<SyncResult> {
  const state = await updateTrackState(store, track, (s) => {
    const now = options.now();
    switch (attempt.type) {
      case 'pinned':
        setPinnedReady(s, attempt.pinnedAt, now);
        settleUnloaded(s, s.pinned, now);
        break;
      case 'superseded':
        settleUnloaded(s, s.desiredRevision, now);
        break;
      case 'rerender':
        s.capabilities = attempt.capabilities;
        setCondition(
          s,
          'Ready',
          'Unknown',
          'RenderingForCluster',
          `revision ${revision} was rendered for other cluster capabilities; rendering it again for this cluster (Kubernetes ${attempt.capabilities.kubeVersion})`,
          now,
        );
        break;
      case 'refused':
        // The last good revision stays; the reason goes into status.
        if (attempt.condition === 'FilesParsed') {
          setUnloaded(s, revision, attempt.reason, attempt.message, now);
        } else if (attempt.reason === DEPENDENCY_NOT_READY) {
          settleUnloaded(s, revision, now);
        }
        setCondition(s, 'Ready', 'False', attempt.reason, attempt.message, now);
        break;
      case 'reconciled':
        recordReconciled(s, revision, attempt, options);
        break;
    }
    releaseApplyLease(s, options.holder);
  });
  const result = outcomeOf(attempt);
  const error = errorOf(attempt);
  if (attempt.type === 'refused' || attempt.type === 'reconciled') {
    const finishedAt = options.now();
    await store.appendHistory(track, {
      revision,
      appliedAt: finishedAt.toISOString(),
      result,
      trigger: options.trigger,
      ...(options.by === undefined ? {} : { by: options.by }),
      ...(options.startedAt === undefined
        ? {}
        : { durationMs: finishedAt.getTime() - options.startedAt.getTime() }),
      ...(error ? { error } : {}),
    });
  }
  return {
    track,
    revision,
    result,
    changeset: attempt.type === 'reconciled' ? attempt.result.changeset : [],
    state,
    ...(attempt.type === 'rerender' ? { rerender: true } : {}),
    ...(error ? { error } : {}),
  };
}
