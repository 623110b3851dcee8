/**
 * The JSON shape of a track's state that `driftless status -o json` prints
 * and the dashboard's `GET /api/tracks` answers (DESIGN.md).
 */
import { liveLease, type LeaseJob, type TrackState } from './track-state.ts';

/**
 * The apply job running on the track at the time of reading, or null when the track is free:
 * which kind (null for a lease taken by a version that did not record it), since when, when its
 * lease lapses if the process running it is gone, and that process.
 */
export interface BusyJson {
  job: LeaseJob | null;
  since: string | null;
  until: string;
  /** The process running it and its machine's name, where recorded (Linux). */
  pid: number | null;
  host: string | null;
}

/**
 * DESIGN.md `status -o json`, `track` first; internal bookkeeping (desiredResolvedAt, the lease's
 * holder id) stays out. `busy` is read at `now`: a lapsed lease is no longer busy.
 */
export function statusJson(track: string, state: TrackState, now: Date = new Date()) {
  const lease = liveLease(state, now);
  const busy: BusyJson | null =
    lease === undefined
      ? null
      : {
          job: lease.job ?? null,
          since: lease.since ?? null,
          until: lease.until,
          pid: lease.process?.pid ?? null,
          host: lease.process?.host ?? null,
        };
  return {
    track,
    desiredRevision: state.desiredRevision,
    appliedRevision: state.appliedRevision,
    pinned: state.pinned,
    suspended: state.suspended === true,
    busy,
    conditions: state.conditions,
    objectsDiscovered: state.objectsDiscovered,
    objectsApplied: state.objectsApplied,
    objectsIgnored: state.objectsIgnored,
    objectsInSync: state.objectsInSync,
    ignoredObjects: state.ignoredObjects,
    inventory: state.inventory,
  };
}
