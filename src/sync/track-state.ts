/**
 * A track's persisted state: desired and applied revisions, pin, Faros- and
 * Flux-style conditions and counters, and the inventory of what it applied.
 * `driftless status -o json` prints it with the track's name (DESIGN.md).
 */
import type { InventoryEntry } from '../apply/inventory.ts';
import type { StateStore } from '../store/ports.ts';
import { ConcurrentUpdateError } from '../store/errors.ts';

export type ConditionType =
  | 'FilesFetched'
  | 'FilesParsed'
  | 'ChildrenUpToDate'
  | 'ChildrenGarbageCollected'
  | 'Healthy'
  | 'Ready';

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
  /** The revision last applied completely. */
  appliedRevision: string | null;
  /** Set by rollback: the track stays at this revision until unpinned. */
  pinned: string | null;
  conditions: Condition[];
  objectsDiscovered: number;
  objectsApplied: number;
  objectsIgnored: number;
  objectsInSync: number;
  ignoredObjects: Record<string, string>;
  inventory: InventoryEntry[];
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
 * Sets a condition, keeping its lastTransitionTime when the status did not
 * change (as Kubernetes conditions do).
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
  const lastTransitionTime =
    previous && previous.status === status ? previous.lastTransitionTime : now.toISOString();
  const next: Condition = { type, status, reason, message, lastTransitionTime };
  state.conditions = [...state.conditions.filter((c) => c.type !== type), next];
}

/** The condition of `type`, if set. */
export function conditionOf(state: TrackState, type: ConditionType): Condition | undefined {
  return state.conditions.find((c) => c.type === type);
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
    const state: TrackState = { ...emptyTrackState(), ...structuredClone(current?.value ?? {}) };
    change(state);
    try {
      await store.write(track, state, current?.version);
      return state;
    } catch (error) {
      if (!(error instanceof ConcurrentUpdateError) || attempt >= attempts) throw error;
    }
  }
}

/** A track's state, or the empty state when it was never synced. */
export async function readTrackState(store: StateStore, track: string): Promise<TrackState> {
  const current = await store.read<TrackState>(track);
  return { ...emptyTrackState(), ...(current?.value ?? {}) };
}
