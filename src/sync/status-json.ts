/**
 * The JSON shape of a track's state that `driftless status -o json` prints
 * and the dashboard's `GET /api/tracks` answers (DESIGN.md).
 */
import type { Track } from '../config/types.ts';
import type { CollectingTrack, HeldTrack } from './published-tracks.ts';
import {
  busyJsonOf,
  isSuspended,
  liveLease,
  type BusyJson,
  type TrackState,
} from './track-state.ts';

/**
 * DESIGN.md `status -o json`, `track` first; internal bookkeeping (desiredResolvedAt, the lease's
 * full holder id) stays out. `busy` is read at `now`: a lapsed lease is no longer busy.
 */
export function statusJson(track: string, state: TrackState, now: Date = new Date()) {
  const lease = liveLease(state, now);
  const busy: BusyJson | null = lease === undefined ? null : busyJsonOf(lease);
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

/**
 * A configured track's state as `driftless status` and the dashboard show it: suspended when
 * isSuspended says so, as the config's `suspend: true` stops its syncs as much as a stored
 * suspension does (the stored state itself only knows the latter).
 */
export function shownTrackState(track: Pick<Track, 'suspend'>, state: TrackState): TrackState {
  return { ...state, suspended: isSuspended(track, state) };
}

/** `status -o json` of a configured track: {@link statusJson} of its {@link shownTrackState}. */
export function configuredStatusJson(
  track: Pick<Track, 'name' | 'suspend'>,
  state: TrackState,
  now: Date = new Date(),
) {
  return statusJson(track.name, shownTrackState(track, state), now);
}

/**
 * `collecting` of `status -o json`, on the track of a deleted GitTrack whose objects are being
 * collected: the source and the GitTrack; once a collection failed, how often in a row and from
 * when a discovery tries again (`nextTryFrom`).
 */
export function collectingJson(collecting: CollectingTrack) {
  const { retry } = collecting;
  return {
    source: collecting.source,
    gitTrack: collecting.gitTrack,
    ...(retry === undefined ? {} : { failures: retry.failures, nextTryFrom: retry.notBefore }),
  };
}

/**
 * `held` of `status -o json`, on a track its source keeps while the document that gave it is
 * refused: the source, the document and why it is refused.
 */
export function heldJson(held: HeldTrack) {
  return {
    source: held.source,
    ...(held.document === undefined ? {} : { document: held.document }),
    ...(held.problem === undefined ? {} : { problem: held.problem }),
  };
}

/** Why a source keeps a track off its list: its GitTrack was deleted, or its document is refused. */
export type KeptBySource =
  | { readonly collecting: CollectingTrack; readonly held?: undefined }
  | { readonly held: HeldTrack; readonly collecting?: undefined };

/**
 * A track off the config as `status -o json` and `GET /api/tracks` list it: its state,
 * `removedFromConfig`, and `collecting` when it is the track of a deleted GitTrack being
 * collected, `held` when its source keeps it while its document is refused.
 */
export function offConfigStatusJson(
  track: string,
  state: TrackState,
  kept: KeptBySource | undefined,
) {
  return {
    ...statusJson(track, state),
    removedFromConfig: true,
    ...(kept?.collecting === undefined ? {} : { collecting: collectingJson(kept.collecting) }),
    ...(kept?.held === undefined ? {} : { held: heldJson(kept.held) }),
  };
}
