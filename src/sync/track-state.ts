/**
 * A track's persisted state: desired and applied revisions, pin, Faros- and
 * Flux-style conditions and counters, and the inventory of what it applied.
 * `driftless status -o json` prints it with the track's name (DESIGN.md).
 */
import { randomUUID } from 'node:crypto';
import type { InventoryEntry } from '../apply/inventory.ts';
import type { ClusterCapabilities } from '../render/index.ts';
import type { StateStore } from '../store/ports.ts';
import type { ObservedObject } from './observed-object.ts';
import type { CommitInfo } from '../source/ports.ts';
import { commitOf } from '../object-id.ts';
import type { ReencryptedFile } from './reencrypt-secret.ts';
import { DriftlessError, throwIfInterrupted } from '../errors.ts';
import { ConcurrentUpdateError } from '../store/errors.ts';
import { checkedStateValue } from './state-shape.ts';
import { currentProcess, isGoneHere, type ProcessIdentity } from '../local-process.ts';

export type ConditionType =
  | 'FilesFetched'
  | 'FilesParsed'
  | 'ChildrenUpToDate'
  | 'ChildrenGarbageCollected'
  | 'Healthy'
  | 'Ready';

/** The Ready reason of a sync refused because a dependency is not Ready (resume-dependents.ts looks for it). */
export const DEPENDENCY_NOT_READY = 'DependencyNotReady';

export interface Condition {
  readonly type: ConditionType;
  readonly status: 'True' | 'False' | 'Unknown';
  readonly reason: string;
  readonly message: string;
  readonly lastTransitionTime: string;
}

export interface TrackState {
  /** The newest revision resolved for the track. */
  desiredRevision: string | null;
  /** When desiredRevision was resolved: a revision resolved earlier never replaces it. */
  desiredResolvedAt: string | null;
  /**
   * How desiredRevision was rendered (renderSpecDigest of the track then): a fetch of the same
   * commit renders it again once the track's subPath, kustomize, sourceIgnore... changed.
   */
  renderedWith?: string | null;
  /** The revision last applied completely. */
  appliedRevision: string | null;
  /** Set by rollback: the track stays at this revision until unpinned. */
  pinned: string | null;
  /**
   * The stored revision the apply step could not load (FilesParsed False says why); null when
   * FilesParsed holds, or is False for a commit that failed to render, which only a fetch
   * settles. Absent in a state written before it was recorded ({@link failedToParse}).
   */
  unloadedRevision?: string | null;
  conditions: Condition[];
  objectsDiscovered: number;
  objectsApplied: number;
  objectsIgnored: number;
  objectsInSync: number;
  ignoredObjects: Record<string, string>;
  inventory: InventoryEntry[];
  /** When drift was last checked (ISO): the schedule uses it to find due tracks. */
  driftCheckedAt?: string | null;
  /**
   * What the track's cluster serves, recorded by the apply step (which has
   * discovery) for Helm tracks; the fetch step renders charts for it.
   */
  capabilities?: ClusterCapabilities | null;
  /** Objects that failed in the last sync, with why: `status --objects` shows them Failed. */
  failedObjects?: Record<string, string>;
  /** The cluster the track applied to last: where `driftless delete` collects it once it left the config. */
  cluster?: string;
  /** Set by `driftless suspend` (or the `suspend` action): webhooks, polls and drift checks leave the track alone. */
  suspended?: boolean;
  /** The last notification event told of each kind (job-events.ts): a repeat is not told again. */
  notified?: Record<string, string>;
  /**
   * What the last drift check saw of each object (the dashboard function
   * shows it: it cannot read the cluster itself).
   */
  observed?: { at: string; objects: ObservedObject[] } | null;
  /** The commits of recently fetched revisions, by commit sha (fetch records them). */
  commits?: Record<string, CommitInfo>;
  /**
   * Objects the running (or a dead) apply job may create that the inventory does not hold yet,
   * written before it applies anything: a job killed mid-apply records nothing after that, and
   * the next sync prunes what of these Git no longer has. Never counted as owned.
   */
  applying?: InventoryEntry[] | null;
  /** Held while an apply job runs: at most one per track, across processes and functions. */
  applyLease?: ApplyLease | null;
  /**
   * The SOPS-encrypted Secrets the last drift check encrypted again for write-back, by subject
   * (ciphertext only): a check finding the same values hands the same file (reencrypt-secret.ts).
   */
  reencrypted?: Record<string, ReencryptedFile>;
  /**
   * What write-backs pushed that no sync has applied yet, oldest first (write-back.ts): Git
   * holding it is not a change made in Git, so a check comparing the cluster with the revision
   * before it still writes the cluster's newer value. See {@link unsyncedWriteBacks}.
   */
  unsyncedWriteBacks?: UnsyncedWriteBack[];
}

/**
 * A write-back commit and what it wrote: each field's value (by subject and JSON pointer; no
 * value: removed; the pointer `""`: an object added whole), and each file replaced whole (a
 * SOPS-encrypted file encrypted again: ciphertext only), each with what Git held there before
 * (`replaced`: the field's value, absent when unset; the file's SHA-256). Values are as the
 * commit holds them, secret values redacted. Absent `replaced`: kept by an older version.
 * `comparedWith`: the revision the drift check compared the cluster with, which the write-back
 * commit's changes are relative to (absent: kept by an older version).
 */
export interface UnsyncedWriteBack {
  commit: string;
  comparedWith?: string;
  fields: { subject: string; path: string; value?: unknown; replaced?: { value?: unknown } }[];
  files: { file: string; content: string; replaced?: string }[];
}

/**
 * The write-backs `revision` (the revision a check compares with) does not hold yet: those
 * pushed after the newest one whose commit it is, or all of them when it is none of them.
 * Telling whether another commit holds a write-back would take Git's ancestry, which neither
 * the apply step nor the write-back's shallow clone has: a write-back is settled here once its
 * own commit or a later write-back's is the revision compared with. One that reached the
 * cluster inside someone's later commit stays, but no longer counts as Driftless' own: each
 * write counts only while the revision compared with still holds what it replaced
 * (source/edit-manifests.ts).
 */
export function unsyncedWriteBacks(
  writeBacks: readonly UnsyncedWriteBack[] | undefined,
  revision: string | null,
): UnsyncedWriteBack[] {
  const all = writeBacks ?? [];
  // A revision rendered with inputs beyond Git carries its commit first (object-id.ts).
  const commit = revision === null ? null : commitOf(revision);
  const applied = all.findLastIndex((writeBack) => writeBack.commit === commit);
  return all.slice(applied + 1);
}

/** The jobs that hold a track's apply lease while they run. */
export type LeaseJob = 'sync' | 'rollback' | 'drift check' | 'delete';

/** A track's apply lease: who holds it (a random id per job) and until when at the latest. */
export interface ApplyLease {
  holder: string;
  /** When it lapses if the job never gives it back (a killed process, a function's timeout). */
  until: string;
  /** When it was taken and by which kind of job, for people asking why the track is busy. */
  since?: string;
  job?: LeaseJob;
  /**
   * The process running the job, where the kernel says (Linux): a process that sees the same
   * process table frees the lease at once once that process is gone (local-process.ts).
   */
  process?: ProcessIdentity;
}

/**
 * The lease when someone holds it at `now`; undefined when free, lapsed, or held by a process
 * this one can see is gone (killed with `kill -9`, say).
 */
export function liveLease(state: TrackState, now: Date): ApplyLease | undefined {
  const lease = state.applyLease;
  if (!lease || Date.parse(lease.until) <= now.getTime()) return undefined;
  return isGoneHere(lease.process) ? undefined : lease;
}

/**
 * How a lease is named to people (status, the busy error, `driftless unlock --lease`): the
 * first 8 hex digits of its holder's random id, enough to tell one job's lease from the next.
 */
export function leaseIdOf(lease: ApplyLease): string {
  return lease.holder.slice(0, LEASE_ID_LENGTH);
}

/** The length of {@link leaseIdOf}'s id. */
export const LEASE_ID_LENGTH = 8;

/**
 * A lease as `status -o json` gives it (`busy`): its id, which kind of job holds it (null for
 * a lease taken by a version that did not record it), since when, when it lapses if the
 * process running it is gone, and that process. Never the whole holder id.
 */
export interface BusyJson {
  lease: string;
  job: LeaseJob | null;
  since: string | null;
  until: string;
  /** The process running it and its machine's name, where recorded (Linux). */
  pid: number | null;
  host: string | null;
}

/** {@link BusyJson} of a lease. */
export function busyJsonOf(lease: ApplyLease): BusyJson {
  return {
    lease: leaseIdOf(lease),
    job: lease.job ?? null,
    since: lease.since ?? null,
    until: lease.until,
    pid: lease.process?.pid ?? null,
    host: lease.process?.host ?? null,
  };
}

/**
 * A live lease for people: `a sync since 2026-…Z, pid 4242 on build-7`, or `an apply job`
 * for one taken by an older version.
 */
export function describeBusy(busy: BusyJson): string {
  const job = busy.job === null ? 'an apply job' : `a ${busy.job}`;
  const since = busy.since === null ? job : `${job} since ${busy.since}`;
  return busy.pid === null ? since : `${since}, pid ${busy.pid} on ${busy.host}`;
}

/** {@link describeBusy} of a lease. */
export function describeLease(lease: ApplyLease): string {
  return describeBusy(busyJsonOf(lease));
}

/** Whether the track is suspended: in its config (`suspend: true`) or by `driftless suspend`. */
export function isSuspended(track: { readonly suspend: boolean }, state: TrackState): boolean {
  return track.suspend || state.suspended === true;
}

/** The state of a track never synced. */
export function emptyTrackState(): TrackState {
  return {
    desiredRevision: null,
    desiredResolvedAt: null,
    appliedRevision: null,
    pinned: null,
    conditions: [],
    objectsDiscovered: 0,
    objectsApplied: 0,
    objectsIgnored: 0,
    objectsInSync: 0,
    ignoredObjects: {},
    inventory: [],
  };
}

/**
 * The lastTransitionTime of a condition set to `status` at `now`: the previous one's while the
 * status stays what it was, whatever the reason and message say now (as Kubernetes conditions
 * do). Every condition Driftless writes gets its time here.
 */
export function transitionTime(
  previous: { readonly status: string; readonly lastTransitionTime: string } | undefined,
  status: Condition['status'],
  now: Date,
): string {
  return previous?.status === status ? previous.lastTransitionTime : now.toISOString();
}

/**
 * Sets a condition, keeping its lastTransitionTime when the status did not
 * change ({@link transitionTime}).
 */
export function setCondition(
  state: TrackState,
  type: ConditionType,
  status: Condition['status'],
  reason: string,
  message: string,
  now: Date,
): void {
  const previous = state.conditions.find((c) => c.type === type);
  const lastTransitionTime = transitionTime(previous, status, now);
  const next: Condition = { type, status, reason, message, lastTransitionTime };
  state.conditions = [...state.conditions.filter((c) => c.type !== type), next];
}

/** The condition of `type`, if set. */
export function conditionOf(state: TrackState, type: ConditionType): Condition | undefined {
  return state.conditions.find((c) => c.type === type);
}

/** FilesFetched's message once `revision` was fetched. */
export function fetchedMessage(revision: string): string {
  return `fetched revision ${revision}`;
}

/**
 * Whether FilesParsed is False for `revision` itself (its load failed), not for a newer commit
 * that failed to render. The fetch step leaves such a False to the apply step, which judges the
 * revision again when it loads it: a step that set True only for the next to set False again
 * would move the condition's lastTransitionTime on every sync that fails the same way.
 */
export function failedToParse(state: TrackState, revision: string): boolean {
  if (conditionOf(state, 'FilesParsed')?.status !== 'False') return false;
  // Written before unloadedRevision was: FilesFetched named the revision last fetched, as then.
  if (state.unloadedRevision === undefined) {
    return conditionOf(state, 'FilesFetched')?.message === fetchedMessage(revision);
  }
  return state.unloadedRevision === revision;
}

/** FilesParsed True for `revision`, parsed and stored (and loaded, if a sync did): no failed load stands. */
export function setParsed(
  state: TrackState,
  revision: string,
  now: Date,
  message = `revision ${revision} parsed and stored`,
): void {
  setCondition(state, 'FilesParsed', 'True', 'Parsed', message, now);
  state.unloadedRevision = null;
}

/** FilesParsed False because the apply step could not load `revision`. */
export function setUnloaded(
  state: TrackState,
  revision: string,
  reason: string,
  message: string,
  now: Date,
): void {
  setCondition(state, 'FilesParsed', 'False', reason, message, now);
  state.unloadedRevision = revision;
}

/**
 * Read-modify-write of a track's state with optimistic concurrency: `change`
 * runs again on the fresh state when another writer got in between.
 */
export async function updateTrackState(
  store: StateStore,
  track: string,
  change: (state: TrackState) => void,
  attempts = 5,
): Promise<TrackState> {
  for (let attempt = 1; ; attempt++) {
    const current = await store.read<TrackState>(track);
    const stored = checkedStateValue(track, current?.value);
    const state: TrackState = { ...emptyTrackState(), ...structuredClone(stored ?? {}) };
    change(state);
    try {
      await store.write(track, state, current?.version);
      return state;
    } catch (error) {
      if (!(error instanceof ConcurrentUpdateError) || attempt >= attempts) throw error;
    }
  }
}

/** Another apply job holds the track: the caller should retry later (the queue does). */
export class TrackBusyError extends DriftlessError {
  readonly code = 'TRACK_BUSY';
}

/**
 * Takes the track's apply lease for `ms` for a `job`, or throws
 * TrackBusyError while another live holder has it. Expired leases (a crashed
 * holder) are taken over.
 */
export async function acquireApplyLease(
  store: StateStore,
  track: string,
  holder: string,
  ms: number,
  now: Date,
  job?: LeaseJob,
): Promise<TrackState> {
  const running = currentProcess();
  return updateTrackState(store, track, (state) => {
    const lease = liveLease(state, now);
    if (lease && lease.holder !== holder) {
      throw new TrackBusyError(
        `track "${track}": another apply job runs until ${lease.until} (${describeLease(lease)}; if the process running it is gone, the track is free then, or at once with "driftless unlock --track ${track} --lease ${leaseIdOf(lease)}")`,
      );
    }
    state.applyLease = {
      holder,
      until: new Date(now.getTime() + ms).toISOString(),
      since: now.toISOString(),
      ...(job === undefined ? {} : { job }),
      ...(running === undefined ? {} : { process: running }),
    };
  });
}

/** A lease taken: its holder id, and the track's state as the lease was written into it. */
export interface TakenLease {
  readonly holder: string;
  /**
   * The state under the lease. What a job acts on (the revision to enforce, the inventory)
   * is read here, never before the lease: a sync that ran in between would be undone.
   */
  readonly state: TrackState;
}

/**
 * Takes the track's apply lease for a `job` of `track`. It lapses after twice
 * the track's timeout plus a minute: longer than any apply and health wait of
 * the track, so only a job that died leaves it. A job asked to stop before
 * (an aborted `signal`) throws its InterruptedError and takes nothing.
 */
export async function takeApplyLease(
  store: StateStore,
  track: { readonly name: string; readonly timeout: number },
  job: LeaseJob,
  now: Date,
  signal: AbortSignal | undefined,
): Promise<TakenLease> {
  throwIfInterrupted(signal);
  const holder = randomUUID();
  const ms = track.timeout * 2 + 60_000;
  const state = await acquireApplyLease(store, track.name, holder, ms, now, job);
  return { holder, state };
}

/** Gives the lease back if `holder` still has it. */
export function releaseApplyLease(state: TrackState, holder: string): void {
  if (state.applyLease?.holder === holder) state.applyLease = null;
}

/** A track's state, or the empty state when it was never synced. */
export async function readTrackState(store: StateStore, track: string): Promise<TrackState> {
  const current = await store.read<TrackState>(track);
  return { ...emptyTrackState(), ...(checkedStateValue(track, current?.value) ?? {}) };
}
