/**
 * What the dashboard reads: the overview of every track and a track's page,
 * from the store only (state, history, artifacts) plus the objects as the
 * adapter observes them — live in `driftless serve`, recorded by the last
 * drift check in AWS, where the dashboard has no cluster credentials.
 */
import type { Track } from '../config/types.ts';
import { mapWithLimit } from '../map-with-limit.ts';
import { commitOf } from '../object-id.ts';
import type { ArtifactStore, HistoryEntry, StateStore } from '../store/ports.ts';
import { isSyncEntry } from '../sync/record-sync.ts';
import type { TracksOffConfig } from '../sync/schedule.ts';
import { configuredStatusJson, offConfigStatusJson } from '../sync/status-json.ts';
import { conditionOf, readTrackState, type TrackState } from '../sync/track-state.ts';
import type {
  CommitInfo,
  HistoryEntryJson,
  ObservedObjects,
  OverviewRow,
  StoredRevision,
  TrackDetail,
  TrackStatusJson,
} from './types.ts';

export interface ReadModelDeps {
  readonly state: StateStore;
  readonly artifacts: ArtifactStore;
  /** The track's objects as this adapter sees them (see the module comment). */
  readonly objects: (track: Track, state: TrackState) => Promise<ObservedObjects>;
}

/** History entries the track page shows. */
const HISTORY_SHOWN = 100;

/** The objects as the last drift check recorded them: the view of an adapter without a cluster. */
export function storedObjects(state: TrackState): ObservedObjects {
  return {
    observedAt: state.observed?.at ?? null,
    source: 'stored',
    objects: state.observed?.objects ?? [],
  };
}

function commitFor(state: TrackState, revision: string | null): CommitInfo | null {
  if (!revision) return null;
  return state.commits?.[commitOf(revision)] ?? null;
}

function driftedIn(objects: readonly { readonly sync: string }[]): number {
  return objects.filter((object) => object.sync === 'OutOfSync' || object.sync === 'Missing')
    .length;
}

/**
 * A row of the overview. `suspendedInConfig`: the track's config says `suspend: true`, which the
 * page must tell from a stored suspension, as only the latter can be resumed from here.
 */
function overviewRow(
  status: TrackStatusJson,
  state: TrackState,
  history: HistoryEntry[],
  suspendedInConfig: boolean,
): OverviewRow {
  const ready = conditionOf(state, 'Ready');
  // What "last sync" means on the overview: a sync or rollback that ran to an end.
  const lastSync = history.find(isSyncEntry) ?? null;
  const observed = state.observed?.objects;
  return {
    status,
    ready: ready?.status ?? 'Unknown',
    reason: ready?.reason ?? 'NeverSynced',
    message: ready?.message ?? 'never synced',
    appliedCommit: commitFor(state, state.appliedRevision),
    desiredCommit: commitFor(state, state.desiredRevision),
    lastSync: lastSync as HistoryEntryJson | null,
    drifted: observed === undefined ? null : driftedIn(observed),
    driftCheckedAt: state.driftCheckedAt ?? null,
    ...(suspendedInConfig ? { suspendedInConfig: true } : {}),
  };
}

/**
 * One row per track, in the config's order, then one per track off the config (`offConfig`, the
 * tracksOffConfig split): those being collected, those held, then those removed, as `GET /api/tracks` lists
 * them. Their rows read as any track's, from the state and history the store keeps of them.
 */
export async function overview(
  tracks: readonly Track[],
  deps: Pick<ReadModelDeps, 'state'>,
  offConfig: TracksOffConfig,
): Promise<OverviewRow[]> {
  // Each with the way its status reads: a track off the config's says so (`removedFromConfig`);
  // only a configured track has a config to be suspended by.
  const listed: {
    readonly name: string;
    readonly suspendedInConfig: boolean;
    status(state: TrackState): TrackStatusJson;
  }[] = [
    ...tracks.map((track) => ({
      name: track.name,
      suspendedInConfig: track.suspend,
      status: (state: TrackState) => configuredStatusJson(track, state),
    })),
    ...offConfig.collecting.map((track) => ({
      name: track.name,
      suspendedInConfig: false,
      status: (state: TrackState) => offConfigStatusJson(track.name, state, { collecting: track }),
    })),
    ...offConfig.held.map((track) => ({
      name: track.name,
      suspendedInConfig: false,
      status: (state: TrackState) => offConfigStatusJson(track.name, state, { held: track }),
    })),
    ...offConfig.removed.map((name) => ({
      name,
      suspendedInConfig: false,
      status: (state: TrackState) => offConfigStatusJson(name, state, undefined),
    })),
  ];
  // Two reads per track, a few tracks at a time: a store of many tracks answers in one round.
  return mapWithLimit(listed, 8, async (track) => {
    const [state, history] = await Promise.all([
      readTrackState(deps.state, track.name),
      deps.state.listHistory(track.name, 20),
    ]);
    return overviewRow(track.status(state), state, history, track.suspendedInConfig);
  });
}

/** Everything the track page shows. */
export async function trackDetail(track: Track, deps: ReadModelDeps): Promise<TrackDetail> {
  const [state, history, stored] = await Promise.all([
    readTrackState(deps.state, track.name),
    deps.state.listHistory(track.name, HISTORY_SHOWN),
    // Names and times only: the page polls this, and on S3 list() costs a HEAD per artifact.
    deps.artifacts.listRevisions(track.name),
  ]);
  const revisions: StoredRevision[] = stored.map((artifact) => ({
    revision: artifact.revision,
    storedAt: artifact.storedAt,
    commit: commitFor(state, artifact.revision),
  }));
  const objects = await deps.objects(track, state);
  const row = overviewRow(configuredStatusJson(track, state), state, history, track.suspend);
  return {
    // Read live just now: the drift count is what the page shows below, not the last check's.
    row:
      objects.source === 'live' && objects.error === undefined
        ? { ...row, drifted: driftedIn(objects.objects), driftCheckedAt: objects.observedAt }
        : row,
    objects,
    history: history as HistoryEntryJson[],
    revisions,
  };
}
