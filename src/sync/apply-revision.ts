/**
 * The apply side of a sync: a stored revision -> a reconciled cluster.
 *
 * Under the track's apply lease (one job per track at a time, across
 * processes): precheck (pinned, superseded) and dependency gating, then the
 * stored revision (load-stored-revision.ts), then apply -> prune -> health as
 * one step returning data (apply/reconcile-objects.ts), then the record of
 * it in status and history (record-sync.ts). Runs only where cluster
 * credentials are.
 */
import { reconcileObjects, type ReconcileResult } from '../apply/reconcile-objects.ts';
import { describeUnhealthy } from '../apply/health.ts';
import { interruptionOf } from '../errors.ts';
import { redactDeep, redactError } from '../redact.ts';
import { objectKey, refOf, subjectOf, type KubeObject } from '../cluster/kube-object.ts';
import { mergeInventory, ownedKeys, type InventoryEntry } from '../apply/inventory.ts';
import { prefetchLists, prefetchObjects } from '../apply/read-live.ts';
import type { KubernetesPort } from '../cluster/kubernetes-port.ts';
import { capabilitiesDigest } from '../render/capabilities.ts';
import type { RenderedBundle } from '../render/types.ts';
import type { Track } from '../config/types.ts';
import type { ArtifactStore, HistoryTrigger, StateStore } from '../store/ports.ts';
import type { SyncJob } from './jobs.ts';
import { loadDesiredBundle, loadStoredRevision } from './load-stored-revision.ts';
import { actingAs, TrackDeadline } from './track-cluster.ts';
import { ownWritesSince, unchangedButOwnWrites } from './own-writes.ts';
import { recordSync, type Refusal, type SyncAttempt } from './record-sync.ts';
import type { SecretDeps } from './resolve-secrets.ts';
import type { SyncResult } from './sync-result.ts';
import {
  takeApplyLease,
  conditionOf,
  DEPENDENCY_NOT_READY,
  readTrackState,
  releaseApplyLease,
  updateTrackState,
  type TrackState,
  type UnsyncedWriteBack,
} from './track-state.ts';

export type { SyncOutcome, SyncResult } from './sync-result.ts';

export interface ApplyDeps extends SecretDeps {
  readonly cluster: KubernetesPort;
  readonly artifacts: ArtifactStore;
  readonly state: StateStore;
  readonly now?: () => Date;
  /** Progress of the apply, for people watching a large set. */
  readonly onProgress?: (done: number, total: number) => void;
  /**
   * Aborted, with an InterruptedError (errors.ts), when whoever runs the job
   * asks it to stop (the CLI at Ctrl-C or SIGTERM). Before the lease is taken
   * the job throws it; under the lease nothing more is sent to the cluster,
   * the health wait ends, and the outcome so far is recorded like any other,
   * so the lease is given back at once rather than left to expire.
   *
   * The track's `timeout` ends the job likewise, counted from its start, and
   * also cancels the cluster requests still waiting then (track-cluster.ts
   * TrackDeadline): the job fails saying so, recorded like any failed sync.
   */
  readonly signal?: AbortSignal;
}

export interface ApplyStoredOptions {
  readonly trigger: HistoryTrigger;
  /** Rollback: apply even though the track is pinned, and pin it at this revision. */
  readonly pin?: boolean;
  /** Who asked, when a person did: history's `by`. */
  readonly by?: string;
}

/** Decides, under the lease, whether the job still applies: a reason to stop, or undefined. */
export type Precheck = (state: TrackState) => 'pinned' | 'superseded' | undefined;

/**
 * Whether a dependency stands: applied at its current revision and Ready. Suspending a track
 * sets its Ready to Unknown (reason Suspended) and leaves the rest, so one suspended after a
 * good sync — its objects up to date and not unhealthy — still stands, as a suspended Flux
 * Kustomization stays Ready for its dependents.
 */
function dependencyStands(dependency: TrackState): boolean {
  const current = dependency.pinned ?? dependency.desiredRevision;
  if (!dependency.appliedRevision || dependency.appliedRevision !== current) return false;
  const ready = conditionOf(dependency, 'Ready');
  if (ready?.status === 'True') return true;
  return (
    dependency.suspended === true &&
    ready?.reason === 'Suspended' &&
    conditionOf(dependency, 'ChildrenUpToDate')?.status === 'True' &&
    conditionOf(dependency, 'ChildrenGarbageCollected')?.status !== 'False' &&
    // Healthy is absent for a track that does not wait; Unknown is a wait cut short.
    (conditionOf(dependency, 'Healthy')?.status ?? 'True') === 'True'
  );
}

/** Why the track must wait for its dependencies, or undefined when they all stand. */
async function unreadyDependency(track: Track, state: StateStore): Promise<string | undefined> {
  for (const name of track.dependsOn) {
    const dependency = await readTrackState(state, name);
    if (!dependencyStands(dependency)) {
      const suspended = dependency.suspended === true ? ' (it is suspended)' : '';
      return `dependency "${name}" is not Ready at its current revision${suspended}`;
    }
  }
  return undefined;
}

/**
 * The `syncTo: git` objects Git has not changed since the revision applied
 * last: the cluster drives those, so the sync creates them when missing and
 * leaves them alone otherwise (their cluster changes go to Git). An object
 * Git did change is applied, so both directions meet: Git's change reaches
 * the cluster, and a change made in the cluster is written back. `diff` asks
 * the same, to show what the sync would change.
 *
 * Driftless' own write-backs not synced yet (`own`: the track state's, and the
 * revision to apply) are no change made in Git (own-writes.ts): a cluster
 * changed again before such a commit is synced keeps its newer value, and the
 * next drift check writes that back. Without `own`, every difference counts.
 */
export async function unchangedInGit(
  track: Track,
  stored: { readonly objects: readonly KubeObject[]; readonly toGit: ReadonlySet<string> },
  appliedRevision: string | null,
  deps: Parameters<typeof loadDesiredBundle>[2],
  own?: {
    readonly writeBacks: readonly UnsyncedWriteBack[] | undefined;
    readonly revision: string;
  },
): Promise<ReadonlySet<string>> {
  if (stored.toGit.size === 0) return stored.toGit;
  if (appliedRevision === null) return new Set();
  let previous: RenderedBundle;
  try {
    previous = await loadDesiredBundle(track, appliedRevision, deps);
  } catch (error) {
    // Cut short by the job's deadline or an interruption: the job ends with that, not an apply.
    if (deps.signal?.aborted) throw error;
    // The revision applied last cannot be read: every such object is applied, as Git has it.
    return new Set();
  }
  const before = new Map(previous.objects.map((object) => [object.subject, object.manifest]));
  const writes =
    own === undefined ? [] : ownWritesSince(own.writeBacks, appliedRevision, own.revision);
  const unchanged = new Set<string>();
  for (const object of stored.objects) {
    const subject = subjectOf(refOf(object));
    const ours = writes.filter((write) => write.subject === subject);
    if (stored.toGit.has(subject) && unchangedButOwnWrites(before.get(subject), object, ours)) {
      unchanged.add(subject);
    }
  }
  return unchanged;
}

/**
 * Writes down, before anything is applied, the objects of the revision the
 * inventory does not hold: if this job dies mid-apply (a killed process, a
 * function's timeout), the next sync still finds what it created and prunes
 * what Git no longer has. Returns every such entry, a dead job's included.
 */
async function notePending(
  state: StateStore,
  track: string,
  before: TrackState,
  objects: readonly KubeObject[],
): Promise<InventoryEntry[]> {
  const known = ownedKeys([...before.inventory, ...(before.applying ?? [])]);
  const added = objects.map(refOf).filter((ref) => !known.has(objectKey(ref)));
  // Stored like the inventory: a name substituted from a secret value is redacted (src/redact.ts).
  const pending = mergeInventory(before.applying ?? [], redactDeep(added));
  if (added.length > 0) await updateTrackState(state, track, (s) => (s.applying = pending));
  return pending;
}

/**
 * How often the health wait polls (apply/reconcile-objects.ts). It asks between polls whether
 * to stop; asked when its next poll would run into the deadline, it stops with the judgement it
 * just made, from the cluster's own answers, rather than with requests cut off.
 */
const HEALTH_POLL_MS = 500;

/**
 * A health wait the track's deadline ended is a failure, worded as one that ran out of its own
 * time (reconcile-objects.ts), not a cancellation: no newer revision is coming to judge health
 * instead.
 */
function failedAtDeadline(
  track: Track,
  result: ReconcileResult,
  deadline: TrackDeadline,
  healthCut: string,
): ReconcileResult {
  const cancelled = result.health?.cancelled;
  if (cancelled !== healthCut && cancelled !== deadline.error.message) return result;
  const health = { healthy: false, results: result.health?.results ?? [] };
  const unhealthy = `not healthy within ${track.timeout} ms: ${describeUnhealthy(health)}`;
  return { ...result, outcome: 'failed', health, error: result.error ?? unhealthy };
}

/**
 * {@link attemptSync} with its cluster requests ending at the track's deadline. A job the
 * deadline stopped before the apply step could record its own outcome (discovery, the
 * capabilities, the live reads were still waiting) fails like any sync, recorded with why: it
 * is the track's time that ran out, not a fault to retry at once.
 */
async function attemptWithin(
  deadline: TrackDeadline,
  track: Track,
  revision: string,
  before: TrackState,
  deps: ApplyDeps,
  precheck: Precheck | undefined,
  pin: boolean,
): Promise<SyncAttempt> {
  const bounded = { ...deps, cluster: deadline.bound(deps.cluster), signal: deadline.signal };
  const timedOut: Refusal = {
    type: 'refused',
    condition: 'Ready',
    reason: 'SyncFailed',
    message: deadline.error.message,
  };
  try {
    const attempt = await attemptSync(track, revision, before, bounded, precheck, pin, deadline);
    // Placing the revision reads discovery, and a failure there is the revision's
    // (load-stored-revision.ts: FilesParsed): not so when the track's time ran out during it.
    const placing = attempt.type === 'refused' && attempt.reason === deadline.error.code;
    return placing ? timedOut : attempt;
  } catch (error) {
    if (!deadline.passed || interruptionOf(deps.signal) !== undefined) throw error;
    return timedOut;
  }
}

/** Applies `revision` under the lease; `before` is the track's state as the lease was taken. */
async function attemptSync(
  track: Track,
  revision: string,
  before: TrackState,
  deps: ApplyDeps,
  precheck: Precheck | undefined,
  pin: boolean,
  deadline: TrackDeadline,
): Promise<SyncAttempt> {
  const stop = precheck?.(before);
  if (stop === 'pinned') return { type: 'pinned', pinnedAt: before.pinned };
  if (stop === 'superseded') return { type: 'superseded' };
  // A rollback is a person's decision, often made because a dependency broke: it is not held.
  const waitingFor = pin ? undefined : await unreadyDependency(track, deps.state);
  if (waitingFor) {
    return {
      type: 'refused',
      condition: 'Ready',
      reason: DEPENDENCY_NOT_READY,
      message: waitingFor,
    };
  }
  // Apply, prune and health as the track's service account, when it names one.
  deps = { ...deps, cluster: actingAs(deps.cluster, track) };
  // The kinds the last sync applied are most likely this revision's: their LISTs run
  // while the artifact is read and placed (read-live.ts).
  const prefetched = prefetchLists(deps.cluster, before.inventory);
  const stored = await loadStoredRevision(track, revision, deps);
  if (stored.type === 'refused') return stored;
  if (stored.capabilities !== undefined && !pin) {
    // A chart renders for a cluster: one rendered for other capabilities is
    // not applied (a rollback applies what was stored, as asked).
    const capabilities = {
      kubeVersion: await deps.cluster.serverVersion(),
      apiVersions: (await deps.cluster.discover()).apiVersions(),
    };
    if (capabilitiesDigest(capabilities) !== stored.capabilities) {
      return { type: 'rerender', capabilities };
    }
  }
  // Kinds the last sync did not apply (all of them, on a first sync): their LISTs start now.
  prefetchObjects(prefetched, deps.cluster, stored.objects);
  const pending = await notePending(deps.state, track.name, before, stored.objects);
  const healthCut = `the track's timeout (${track.timeout} ms) ends before the next look`;
  const result = await reconcileObjects(deps.cluster, track, stored.objects, before.inventory, {
    pending,
    prefetched,
    ...(deps.signal ? { signal: deps.signal } : {}),
    keep: stored.ruledOut,
    sources: stored.sources,
    createOnly: await unchangedInGit(track, stored, before.appliedRevision, deps, {
      writeBacks: before.unsyncedWriteBacks,
      revision,
    }),
    ...(deps.onProgress ? { onProgress: deps.onProgress } : {}),
    cancelHealth: async () => {
      if (deadline.msLeft() <= HEALTH_POLL_MS) return healthCut;
      // A sync job stops waiting for health once a newer revision is queued (newest wins).
      if (precheck === undefined) return undefined;
      const now = await readTrackState(deps.state, track.name);
      return precheck(now) === 'superseded'
        ? `revision ${now.desiredRevision} was queued`
        : undefined;
    },
  });
  return {
    type: 'reconciled',
    discovered: stored.discovered,
    ignored: stored.ignored,
    selected: stored.objects.length,
    result: failedAtDeadline(track, result, deadline, healthCut),
  };
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
  precheck?: Precheck,
): Promise<SyncResult> {
  const now = deps.now ?? (() => new Date());
  const startedAt = now();
  // From the job's start: time spent waiting for the lease counts too.
  const deadline = new TrackDeadline(
    track,
    options.pin === true ? 'rollback' : 'sync',
    deps.signal,
  );
  try {
    const { holder, state: before } = await takeApplyLease(
      deps.state,
      track,
      options.pin === true ? 'rollback' : 'sync',
      startedAt,
      deps.signal,
    );
    try {
      // What the cluster answered may quote a decrypted or substituted value (src/redact.ts).
      const attempt = redactDeep(
        await attemptWithin(
          deadline,
          track,
          revision,
          before,
          deps,
          precheck,
          options.pin === true,
        ),
      );
      return await recordSync(deps.state, track.name, revision, attempt, {
        ...options,
        holder,
        now,
        startedAt,
        cluster: track.cluster,
      });
    } catch (error) {
      // Not an outcome but a fault (a store or connection failing): free the track, let the job retry.
      await updateTrackState(deps.state, track.name, (s) => releaseApplyLease(s, holder));
      throw redactError(error);
    }
  } finally {
    deadline.dispose();
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
  const options = { trigger: job.trigger, ...(job.by === undefined ? {} : { by: job.by }) };
  return applyStoredRevision(track, job.revision, options, deps, (state) => {
    if (state.pinned) return 'pinned';
    const newer = state.desiredResolvedAt !== null && state.desiredResolvedAt > job.resolvedAt;
    if (newer && state.desiredRevision !== job.revision) return 'superseded';
    return undefined;
  });
}
