/**
 * The JSON shape of a track's state that `driftless status -o json` prints
 * and the dashboard's `GET /api/tracks` answers (DESIGN.md).
 */
import type { TrackState } from './track-state.ts';

/** DESIGN.md `status -o json`, `track` first; internal bookkeeping (desiredResolvedAt) stays out. */
export function statusJson(track: string, state: TrackState) {
  return {
    track,
    desiredRevision: state.desiredRevision,
    appliedRevision: state.appliedRevision,
    pinned: state.pinned,
    suspended: state.suspended === true,
    conditions: state.conditions,
    objectsDiscovered: state.objectsDiscovered,
    objectsApplied: state.objectsApplied,
    objectsIgnored: state.objectsIgnored,
    objectsInSync: state.objectsInSync,
    ignoredObjects: state.ignoredObjects,
    inventory: state.inventory,
  };
}
