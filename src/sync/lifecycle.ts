/**
 * A track's lifecycle, as stored state rather than config, so that it works
 * in AWS without a redeploy (DESIGN.md "Lifecycle and safety"): suspend and
 * resume, unpin, and delete — which collects the track's objects according
 * to its deletion policy and removes its state. Each that changes the track
 * writes a history line, so an auditor sees who stopped or removed a track and
 * when; one that finds the track as asked writes nothing, so the trail shows
 * only what happened.
 */
import { describeFailures, type ChangeSetEntry, type Interrupted } from '../apply/changeset.ts';
import { pruneObjects } from '../apply/prune.ts';
import type { KubernetesPort } from '../cluster/kubernetes-port.ts';
import type { DeletionPolicy, Track } from '../config/types.ts';
import { DriftlessError } from '../errors.ts';
import { seeHolder } from '../local-process.ts';
import { redactDeep } from '../redact.ts';
import type { StateStore } from '../store/ports.ts';
import type { LifecycleJob } from './jobs.ts';
import { unpinTrack } from './rollback.ts';
import { actingAs, TrackDeadline } from './track-cluster.ts';
import {
  takeApplyLease,
  busyJsonOf,
  describeLease,
  emptyTrackState,
  isSuspended,
  leaseIdOf,
  liveLease,
  readTrackState,
  releaseApplyLease,
  setCondition,
  updateTrackState,
  type ApplyLease,
  type BusyJson,
  type TrackState,
} from './track-state.ts';

export type LifecycleAction = LifecycleJob['action'];

/** What deleting needs of a track: also a track the config no longer names (see the CLI). */
export type DeletedTrack = Pick<
  Track,
  'name' | 'prune' | 'deletionPolicy' | 'suspend' | 'timeout'
> &
  Partial<Pick<Track, 'serviceAccountName' | 'namespace' | 'targetNamespace'>>;

/** What a lifecycle action did. */
export interface LifecycleResult {
  readonly track: string;
  readonly action: LifecycleAction;
  /** `suspended`, `resumed`, `unpinned`, `deleted`, or `failed` when a delete could not collect everything. */
  readonly result: 'suspended' | 'resumed' | 'unpinned' | 'deleted' | 'failed';
  /** The revision applied when the action ran. */
  readonly revision: string | null;
  /** Whether the track is suspended after the action (config or state). */
  readonly suspended: boolean;
  /** Delete: the policy applied (MirrorPrune resolved to Delete or Orphan). */
  readonly policy?: Exclude<DeletionPolicy, 'MirrorPrune'>;
  /** Delete: what was done to each object of the inventory. */
  readonly changeset: ChangeSetEntry[];
  /** Delete: why nothing was collected (no state, a suspended track, Orphan), for people. */
  readonly note?: string;
  /**
   * `true` when the track already was as asked (already suspended, not suspended, not pinned,
   * no state to delete): nothing was written, not even to the history. Absent otherwise.
   */
  readonly unchanged?: true;
  readonly error?: string;
}

export interface LifecycleDeps {
  readonly state: StateStore;
  readonly now?: () => Date;
  /** Who asked, when a person did (a dashboard user): history's `by`. */
  readonly by?: string;
}

export interface DeleteDeps extends LifecycleDeps {
  readonly cluster: KubernetesPort;
  /**
   * Aborted when the caller is asked to stop: no delete is sent after it (apply-revision.ts
   * ApplyDeps). The track's `timeout` stops a delete likewise, and cancels its requests still
   * waiting then (track-cluster.ts TrackDeadline).
   */
  readonly signal?: AbortSignal;
  /**
   * Set by a discovery, which tries a deleted GitTrack's collection again at every run while it
   * fails: a failure the same as the track's newest history entry is not recorded again (a
   * refused delete would otherwise add an entry a minute).
   */
  readonly recordRepeatedFailureOnce?: boolean;
}

/** MirrorPrune follows `prune`, as in Flux. */
export function effectivePolicy(
  track: Pick<Track, 'prune' | 'deletionPolicy'>,
  policy: DeletionPolicy = track.deletionPolicy,
): Exclude<DeletionPolicy, 'MirrorPrune'> {
  if (policy === 'MirrorPrune') return track.prune ? 'Delete' : 'Orphan';
  return policy;
}

async function record(
  deps: LifecycleDeps,
  track: string,
  revision: string | null,
  result: string,
  extra: Record<string, unknown> = {},
): Promise<void> {
  await deps.state.appendHistory(track, {
    revision: revision ?? '',
    appliedAt: (deps.now?.() ?? new Date()).toISOString(),
    result,
    trigger: 'manual',
    ...(deps.by === undefined ? {} : { by: deps.by }),
    ...extra,
  });
}

/** Stops webhooks, polls and drift checks from touching the track until it is resumed. */
export async function suspendTrack(track: Track, deps: LifecycleDeps): Promise<LifecycleResult> {
  const now = deps.now?.() ?? new Date();
  const before = await readTrackState(deps.state, track.name);
  // Already suspended: suspending again would only move the Ready condition's time.
  if (before.suspended === true) return unchangedResult(track, 'suspend', 'suspended', before);
  let was = false;
  const state = await updateTrackState(deps.state, track.name, (s) => {
    was = s.suspended === true;
    s.suspended = true;
    if (!was) {
      setCondition(s, 'Ready', 'Unknown', 'Suspended', 'suspended: run "driftless resume"', now);
    }
  });
  // Someone else suspended it between the read and the write: theirs is the entry.
  if (was) return unchangedResult(track, 'suspend', 'suspended', state);
  await record(deps, track.name, state.appliedRevision, 'suspended');
  return lifecycleResult(track, 'suspend', 'suspended', state);
}

/** Lets webhooks, polls and drift checks reach the track again (config `suspend: true` still holds). */
export async function resumeTrack(track: Track, deps: LifecycleDeps): Promise<LifecycleResult> {
  const now = deps.now?.() ?? new Date();
  const before = await readTrackState(deps.state, track.name);
  if (before.suspended !== true) return unchangedResult(track, 'resume', 'resumed', before);
  let was = false;
  const state = await updateTrackState(deps.state, track.name, (s) => {
    was = s.suspended === true;
    s.suspended = false;
    if (was) {
      setCondition(
        s,
        'Ready',
        'Unknown',
        'Resumed',
        'resumed; the next sync applies the newest revision',
        now,
      );
    }
  });
  if (!was) return unchangedResult(track, 'resume', 'resumed', state);
  await record(deps, track.name, state.appliedRevision, 'resumed');
  return lifecycleResult(track, 'resume', 'resumed', state);
}

/** The pin a rollback set is removed (as `driftless unpin`), recorded in history. */
export async function unpinTrackAction(
  track: Track,
  deps: LifecycleDeps,
): Promise<LifecycleResult> {
  // Read first: unpinTrack writes even when there is no pin. A pin removed by someone else
  // between the two is recorded once more, which says no more than that it is gone.
  const before = await readTrackState(deps.state, track.name);
  if (!before.pinned) return unchangedResult(track, 'unpin', 'unpinned', before);
  const state = await unpinTrack(track, deps.state, deps.now?.() ?? new Date());
  await record(deps, track.name, state.appliedRevision, 'unpinned');
  return lifecycleResult(track, 'unpin', 'unpinned', state);
}

/** What `deleteTrack` says of a track without state (its result's `note`, which the CLI prints). */
const NO_STATE_NOTE =
  'the track has no state (no inventory): nothing was collected; objects labelled for it, if any, stay in the cluster';

/**
 * Deletes the track: under its apply lease, collects its inventory by the
 * policy (Delete removes what carries its label and is not `prune: disabled`;
 * Orphan leaves everything), then removes its state. A suspended track
 * collects nothing; a track with no state (deleted already, never synced) has
 * no inventory to collect, and nothing is written, not even history. History
 * and stored artifacts stay, for audit and for a track created again under
 * the same name. When some object cannot be deleted, the state stays (with
 * the inventory of what is left) so the delete can be run again.
 *
 * Its cluster requests end at its start plus the track's `timeout`, as a
 * sync's do (track-cluster.ts TrackDeadline): at the deadline the requests
 * still waiting are cancelled and no delete is sent after them; what was
 * deleted is reported as such and the rest stays in the inventory, the
 * delete failing with the deadline's message, its lease given back.
 */
export async function deleteTrack(
  track: DeletedTrack,
  policy: DeletionPolicy | undefined,
  deps: DeleteDeps,
): Promise<LifecycleResult> {
  const applied = effectivePolicy(track, policy);
  // Already deleted (or never synced): without an inventory nothing says which objects are
  // the track's, and a history entry would claim a deletion that did not happen. Checked
  // before the lease, which would write a state of its own.
  if ((await deps.state.read(track.name)) === undefined) {
    return {
      ...unchangedResult(track, 'delete', 'deleted', emptyTrackState()),
      policy: applied,
      note: NO_STATE_NOTE,
    };
  }
  // From here: time spent waiting for the lease counts too, as for a sync.
  const deadline = new TrackDeadline(track, 'delete', deps.signal);
  try {
    return await collectTrack(track, applied, deps, deadline);
  } finally {
    deadline.dispose();
  }
}

/** {@link deleteTrack} of a track that has state: under its lease, its cluster bounded by `deadline`. */
async function collectTrack(
  track: DeletedTrack,
  applied: Exclude<DeletionPolicy, 'MirrorPrune'>,
  deps: DeleteDeps,
  deadline: TrackDeadline,
): Promise<LifecycleResult> {
  const now = deps.now ?? (() => new Date());
  // The lease is taken with the caller's own signal; the collection stops at the deadline too.
  const { holder, state } = await takeApplyLease(deps.state, track, 'delete', now(), deps.signal);
  let changeset: ChangeSetEntry[] = [];
  let interrupted: Interrupted | undefined;
  let retained: readonly string[] = [];
  let note: string | undefined;
  try {
    if (isSuspended(track, state)) {
      note = 'the track is suspended: nothing was collected';
    } else if (applied === 'Delete') {
      // Collected as the track's service account, when it names one.
      const pruned = await pruneObjects(
        actingAs(deadline.bound(deps.cluster), track),
        state.inventory,
        { track: track.name, signal: deadline.signal },
      );
      changeset = redactDeep(pruned.changeset);
      interrupted = pruned.interrupted;
      retained = pruned.retained;
    } else {
      note = 'deletion policy Orphan: the objects were left in the cluster';
    }
  } catch (error) {
    await updateTrackState(deps.state, track.name, (s) => releaseApplyLease(s, holder));
    throw error;
  }
  const failed = changeset.filter((entry) => entry.action === 'failed');
  const collected = changeset.filter((entry) => entry.action === 'deleted').map((e) => e.subject);
  // A Namespace or CRD left in place for what it holds (cascade.ts) is still the track's: the
  // state stays with it, as with an object that could not be deleted, and the delete can be run
  // again once those objects are gone.
  const held = changeset.filter((entry) => retained.includes(entry.subject));
  if (failed.length > 0 || held.length > 0) {
    const error = [
      // What the deadline or a stop request cut short is told once (apply/changeset.ts).
      describeFailures(
        changeset,
        interrupted && { interrupted, of: state.inventory.length, verb: 'deleted' },
      ),
      ...held.map((entry) => `${entry.subject}: not deleted: ${entry.reason ?? ''}`),
    ]
      .filter((part) => part !== '')
      .join('; ');
    const left = new Set([...failed, ...held].map((entry) => entry.subject));
    const kept = await updateTrackState(deps.state, track.name, (s) => {
      s.inventory = s.inventory.filter((entry) => left.has(entry.subject));
      setCondition(s, 'Ready', 'False', 'DeletionFailed', error, now());
      releaseApplyLease(s, holder);
    });
    // What it did delete before it stopped (a failure, the track's timeout) is history too.
    const [newest] = deps.recordRepeatedFailureOnce
      ? await deps.state.listHistory(track.name, 1)
      : [];
    const repeated =
      newest?.['action'] === 'delete' &&
      newest.result === 'failed' &&
      newest['error'] === error &&
      collected.length === 0;
    if (!repeated) {
      await record(deps, track.name, kept.appliedRevision, 'failed', {
        action: 'delete',
        error,
        ...(collected.length > 0 ? { collected } : {}),
      });
    }
    return {
      ...lifecycleResult(track, 'delete', 'failed', kept),
      policy: applied,
      changeset,
      error,
    };
  }
  await deps.state.remove(track.name);
  await record(deps, track.name, state.appliedRevision, 'deleted', {
    action: 'delete',
    policy: applied,
    collected,
  });
  return {
    ...lifecycleResult(track, 'delete', 'deleted', state),
    policy: applied,
    changeset,
    ...(note === undefined ? {} : { note }),
  };
}

function lifecycleResult(
  track: Pick<Track, 'name' | 'suspend'>,
  action: LifecycleAction,
  result: LifecycleResult['result'],
  state: TrackState,
): LifecycleResult {
  return {
    track: track.name,
    action,
    result,
    revision: state.appliedRevision,
    suspended: isSuspended(track, state),
    changeset: [],
  };
}

/** A lifecycle action that found the track as asked and wrote nothing. */
function unchangedResult(
  track: Pick<Track, 'name' | 'suspend'>,
  action: LifecycleAction,
  result: LifecycleResult['result'],
  state: TrackState,
): LifecycleResult {
  return { ...lifecycleResult(track, action, result, state), unchanged: true };
}

/** Runs a lifecycle job (the rollback function's `action` payloads, queued to apply). */
export function runLifecycleAction(
  track: Track,
  job: LifecycleJob,
  given: DeleteDeps,
): Promise<LifecycleResult> {
  const deps = job.by === undefined ? given : { ...given, by: job.by };
  switch (job.action) {
    case 'suspend':
      return suspendTrack(track, deps);
    case 'resume':
      return resumeTrack(track, deps);
    case 'unpin':
      return unpinTrackAction(track, deps);
    case 'delete':
      return deleteTrack(track, job.policy, deps);
  }
}

/**
 * `driftless unlock` named a lease that does not hold the track: a mistyped id, or a lease
 * another job's replaced since (the two cannot be told apart).
 */
export class LeaseChangedError extends DriftlessError {
  readonly code = 'LEASE_CHANGED';
}

/** The lease's process runs on this machine: stopping it gives the lease back, breaking it would not stop it. */
export class LeaseHolderRunningError extends DriftlessError {
  readonly code = 'LEASE_HOLDER_RUNNING';
}

/** What `driftless unlock` did. */
export interface UnlockResult {
  readonly track: string;
  /**
   * `unlocked`: the lease is gone; `free`: the track held no live lease (or its job gave it back
   * while the unlock ran), so nothing was broken or written to history.
   */
  readonly result: 'unlocked' | 'free';
  /** The lease removed, as `status -o json` showed it (`busy`); null when free. */
  readonly lease: BusyJson | null;
}

/**
 * Frees a track whose apply lease is held by a job that will never give it back — a laptop
 * that died mid-sync, a CI runner lost — without waiting for the lease to lapse (twice the
 * track's timeout plus a minute). As Terraform's `force-unlock`, the caller names the lease
 * (`leaseId`, from the busy error or `status`): one taken since by another job is never broken.
 * A holder this machine sees running is refused too: stopping it gives the lease back. The
 * break is written to the history (`unlocked`, with the lease), for whoever asks later why two
 * jobs could have overlapped: if the holder was in fact alive elsewhere, its job runs on.
 */
export async function unlockTrack(
  track: string,
  leaseId: string,
  deps: LifecycleDeps,
): Promise<UnlockResult> {
  const now = deps.now?.() ?? new Date();
  const before = await readTrackState(deps.state, track);
  const held = liveLease(before, now);
  if (held === undefined) return { track, result: 'free', lease: null };
  checkNamedLease(track, leaseId, held);
  const busy = busyJsonOf(held);
  // Compare-and-swap: removed only if the same lease still holds the track when written.
  let givenBack = false;
  const state = await updateTrackState(deps.state, track, (current) => {
    const lease = liveLease(current, now);
    givenBack = lease === undefined;
    if (lease === undefined) return;
    checkNamedLease(track, leaseId, lease);
    current.applyLease = null;
  });
  // Its job ended meanwhile and gave it back: free, and nothing was broken.
  if (givenBack) return { track, result: 'free', lease: null };
  await record(deps, track, state.appliedRevision, 'unlocked', { lease: busy });
  return { track, result: 'unlocked', lease: busy };
}

/** Throws unless `lease` is the one `leaseId` names and its holder is not seen running here. */
function checkNamedLease(track: string, leaseId: string, lease: ApplyLease): void {
  if (!lease.holder.startsWith(leaseId)) {
    throw new LeaseChangedError(
      `track "${track}" is held by lease ${leaseIdOf(lease)} (${describeLease(lease)}), not ${leaseId}: check the id (status shows it); if that lease is stuck, unlock it by its id`,
    );
  }
  const pid = lease.process?.pid;
  if (seeHolder(lease.process) === 'running') {
    throw new LeaseHolderRunningError(
      `track "${track}": lease ${leaseId} is held by pid ${pid}, which runs on this machine; stop it (Ctrl-C in its terminal, or kill ${pid}) and it gives the lease back`,
    );
  }
}
