/**
 * One reconciliation of a track's objects: apply -> prune -> health, as one
 * step whose result is data, as fluxcd/pkg `ssa` returns a ChangeSet: what was
 * done so far and why it failed — never a throw for an outcome to expect.
 * Prune runs only when every object applied, health is waited for only then,
 * so a failed apply leaves everything else as it was.
 */
import { subjectOf, type KubeObject, type ObjectRef } from '../cluster/kube-object.ts';
import type { KubernetesPort } from '../cluster/kubernetes-port.ts';
import type { Track } from '../config/types.ts';
import { applyObjects } from './apply-objects.ts';
import { describeFailures, hasFailures, type ChangeSetEntry } from './changeset.ts';
import { describeUnhealthy, waitForHealth, type WaitForHealthResult } from './health.ts';
import {
  inventoryOf,
  mergeInventory,
  ownedKeys,
  refOfEntry,
  staleEntries,
  type InventoryEntry,
} from './inventory.ts';
import { pruneObjects } from './prune.ts';
import type { PrefetchedLists } from './read-live.ts';
import { exprHealth } from './health-exprs.ts';
import { interruptionOf } from '../errors.ts';

export interface ReconcileResult {
  /** `unchanged` when no object had to be written or deleted. */
  readonly outcome: 'applied' | 'unchanged' | 'failed';
  /** One entry per object applied, in the order given, then one per object pruned. */
  readonly changeset: ChangeSetEntry[];
  /** What the track now has in the cluster: the inventory to store. */
  readonly inventory: InventoryEntry[];
  /** True when some object failed to apply: then nothing was pruned nor waited for. */
  readonly applyFailed: boolean;
  /** Whether some delete failed; undefined when prune did not run. */
  readonly pruneFailed?: boolean;
  /** The health wait, when the track waits for health and everything applied. */
  readonly health?: WaitForHealthResult;
  /** Why the outcome is `failed`: the failed objects' errors, or what is not healthy. */
  readonly error?: string;
}

export interface ReconcileOptions {
  /** Progress of the apply, for people watching a large set. */
  readonly onProgress?: (done: number, total: number) => void;
  /**
   * Asked while waiting for health: a reason to stop (a newer revision of the
   * track was queued, which will be applied and waited for instead).
   */
  readonly cancelHealth?: () => Promise<string | undefined>;
  /**
   * Subjects never pruned, though the revision does not apply them: objects
   * a `syncTo: ignore` rule leaves alone. They stay in the inventory.
   */
  readonly keep?: ReadonlySet<string>;
  /** Subjects created when missing but never updated (`syncTo: git`; apply-objects.ts). */
  readonly createOnly?: ReadonlySet<string>;
  /**
   * Objects an earlier apply may have created without recording them (it died mid-apply):
   * prune candidates like the inventory's (deleted only if labelled with the track), never
   * counted as owned.
   */
  readonly pending?: readonly InventoryEntry[];
  /** LISTs started early for the apply's reads (apply-objects.ts). */
  readonly prefetched?: PrefetchedLists;
  /**
   * Aborted when the caller is asked to stop (errors.ts): nothing more is
   * applied or pruned, and the health wait ends as cancelled.
   */
  readonly signal?: AbortSignal;
  /** Where each object was written, by subject, for its apply error (apply-objects.ts). */
  readonly sources?: ReadonlyMap<string, string>;
}

type Reconciled = Pick<
  Track,
  'name' | 'prune' | 'wait' | 'healthChecks' | 'timeout' | 'adopt' | 'force'
> &
  Partial<Pick<Track, 'healthCheckExprs'>>;

/** The health wait's reason to stop: the interruption first, then the caller's own. */
function cancelHealthOf(
  options: ReconcileOptions,
): (() => Promise<string | undefined>) | undefined {
  const { signal, cancelHealth } = options;
  if (signal === undefined) return cancelHealth;
  return async () => interruptionOf(signal)?.message ?? (await cancelHealth?.());
}

/** How a health wait ended badly: an object failed (the wait ends at once), or time ran out. */
function unhealthyHow(health: WaitForHealthResult, timeoutMs: number): string {
  return health.results.some((result) => result.state === 'Failed')
    ? 'not healthy: an object failed'
    : `not healthy within ${timeoutMs} ms`;
}

function changedAnything(changeset: readonly ChangeSetEntry[]): boolean {
  return changeset.some((e) => e.action !== 'unchanged' && e.action !== 'skipped');
}

/**
 * Applies `objects` for `track`, prunes what left `previous` (the stored
 * inventory) when the track prunes, and waits for health when it asks to.
 */
export async function reconcileObjects(
  cluster: KubernetesPort,
  track: Reconciled,
  objects: readonly KubeObject[],
  previous: readonly InventoryEntry[],
  options: ReconcileOptions = {},
): Promise<ReconcileResult> {
  const applied = await applyObjects(cluster, objects, {
    track: track.name,
    owned: ownedKeys(previous),
    adopt: track.adopt,
    force: track.force,
    timeoutMs: track.timeout,
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    ...(options.createOnly ? { createOnly: options.createOnly } : {}),
    ...(options.prefetched ? { prefetched: options.prefetched } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.sources ? { sources: options.sources } : {}),
  });
  const changeset = [...applied.changeset];
  if (hasFailures(changeset)) {
    // Objects created by the failed apply stay in the inventory, so a later prune finds them.
    return {
      outcome: 'failed',
      changeset,
      inventory: mergeInventory(previous, applied.applied),
      applyFailed: true,
      error: describeFailures(
        changeset,
        applied.interrupted && {
          interrupted: applied.interrupted,
          of: changeset.length,
          verb: 'applied',
        },
      ),
    };
  }

  let inventory = inventoryOf(applied.applied);
  let pruneFailed: boolean | undefined;
  let pruneInterrupted: Parameters<typeof describeFailures>[1];
  if (track.prune) {
    const keep = options.keep ?? new Set<string>();
    const candidates = options.pending?.length
      ? mergeInventory(previous, options.pending.map(refOfEntry))
      : previous;
    const allStale = staleEntries(candidates, applied.applied);
    const stale = allStale.filter((entry) => !keep.has(entry.subject));
    const pruned = await pruneObjects(cluster, stale, {
      track: track.name,
      inRevision: new Set([...applied.applied.map(subjectOf), ...keep]),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    changeset.push(...pruned.changeset);
    pruneInterrupted = pruned.interrupted && {
      interrupted: pruned.interrupted,
      of: stale.length,
      verb: 'deleted',
    };
    pruneFailed = hasFailures(pruned.changeset);
    // What could not be deleted, or was left in place for what it holds, is still ours: keep
    // it in the inventory for the next prune.
    const failed = new Set([
      ...pruned.changeset.filter((e) => e.action === 'failed').map((e) => e.subject),
      ...pruned.retained,
    ]);
    const kept = allStale
      .filter((entry) => failed.has(entry.subject) || keep.has(entry.subject))
      .map(refOfEntry);
    inventory = inventoryOf([...applied.applied, ...kept]);
  }

  const healthRefs: readonly ObjectRef[] =
    track.healthChecks.length > 0 ? track.healthChecks : track.wait ? applied.applied : [];
  const health =
    healthRefs.length > 0
      ? await waitForHealth(
          cluster,
          healthRefs,
          track.timeout,
          500,
          await exprHealth(track.healthCheckExprs),
          cancelHealthOf(options),
          applied.observed,
        )
      : undefined;
  // A cancelled wait judged nothing: the newer revision's sync waits for health instead.
  const unhealthy = health !== undefined && !health.healthy && health.cancelled === undefined;
  const error =
    describeFailures(changeset, pruneInterrupted) ||
    (unhealthy ? `${unhealthyHow(health, track.timeout)}: ${describeUnhealthy(health)}` : '');
  return {
    outcome:
      pruneFailed || unhealthy ? 'failed' : changedAnything(changeset) ? 'applied' : 'unchanged',
    changeset,
    inventory,
    applyFailed: false,
    ...(pruneFailed === undefined ? {} : { pruneFailed }),
    ...(health ? { health } : {}),
    ...(error ? { error } : {}),
  };
}
