/**
 * The schedule's work, at every tick of a clock (EventBridge every minute in
 * AWS, a timer in `driftless serve`): for each track due — not suspended,
 * and whose last drift check is older than its interval — a fetch job (a
 * poll of its ref, so a push whose webhook was lost is still deployed within
 * the interval) and a drift job, fetch first so the drift check compares
 * against fresh Git.
 */
import type { Track, TracksFrom } from '../config/types.ts';
import type { PublishedTrackStore, StateStore } from '../store/ports.ts';
import type { DiscoverJob, DriftJob, FetchJob, JobQueue } from './jobs.ts';
import type { KeptTrackStates } from './kept-track-states.ts';
import {
  keptTracks,
  type CollectingTrack,
  type HeldTrack,
  type KeptTracks,
} from './published-tracks.ts';
import { conditionOf, isSuspended, readTrackState, type TrackState } from './track-state.ts';

export interface ScheduleDeps {
  readonly tracks: readonly Track[];
  /** `tracksFrom` sources: each is discovered again on every tick. */
  readonly tracksFrom?: readonly TracksFrom[];
  /**
   * Where the sources' discoveries publish their tracks: the track of a deleted GitTrack kept
   * there under `collecting` is being collected, not removed from the config.
   */
  readonly published?: PublishedTrackStore | undefined;
  readonly state: StateStore;
  readonly queue: JobQueue;
  /**
   * States kept from earlier ticks by a long-lived caller (the drift
   * function): a tick then reads only the documents that changed since.
   */
  readonly keptStates?: KeptTrackStates;
}

export interface ScheduleOptions {
  /**
   * How often the clock ticks, in ms. A track due before the next tick is
   * taken at this one: checks come at most one period early, never a period
   * late (a 1-minute track on a 1-minute clock is checked every minute, not
   * every other one). Default 0.
   */
  readonly periodMs?: number;
  /** Every track that is not suspended, due or not (a local process catching up at start). */
  readonly all?: boolean;
}

/**
 * How long after its last check a track is due again: `interval`, or
 * `retryInterval` while its last sync failed (Ready False), as Flux retries.
 */
export function pollInterval(track: Track, state: TrackState): number {
  const failed = conditionOf(state, 'Ready')?.status === 'False';
  return failed && track.retryInterval !== undefined
    ? Math.min(track.retryInterval, track.interval)
    : track.interval;
}

/** The tracks due for a poll and drift check at `now`. */
export async function dueTracks(
  tracks: readonly Track[],
  state: StateStore,
  now: Date,
  options: ScheduleOptions = {},
): Promise<Track[]> {
  const withState = await Promise.all(
    tracks.map(async (track) => ({ track, state: await readTrackState(state, track.name) })),
  );
  // Suspended in the config or by `driftless suspend` (stored state).
  const active = withState.filter(({ track, state }) => !isSuspended(track, state));
  const horizon = now.getTime() + (options.periodMs ?? 0);
  return active
    .filter(({ track, state }) => {
      if (options.all) return true;
      const checkedAt = state.driftCheckedAt;
      return !checkedAt || Date.parse(checkedAt) + pollInterval(track, state) <= horizon;
    })
    .map(({ track }) => track);
}

/**
 * The jobs one tick queues for `track`. `tick` (ISO) tells two ticks' jobs
 * apart, so SQS FIFO de-duplication (five minutes, by content) drops only a
 * job sent twice for the same tick.
 */
export function scheduledJobs(track: Track, tick: string): [FetchJob, DriftJob] {
  return [
    { type: 'fetch', track: track.name, trigger: 'schedule', tick },
    { type: 'drift', track: track.name, tick },
  ];
}

/**
 * The discover job of a `tracksFrom` source for one tick: a GitTrack applied
 * with kubectl, or a document committed, becomes a track within a tick.
 */
export function discoverJob(source: Pick<TracksFrom, 'id' | 'kind'>, tick: string): DiscoverJob {
  return {
    type: 'discover',
    track: source.id,
    runsIn: source.kind === 'cluster' ? 'apply' : 'fetch',
    tick,
  };
}

/** The log line every tick writes for each track removed from the config. */
export const REMOVED_TRACK_MESSAGE =
  'track removed from the config still has state; its objects stay until "driftless delete --track <track>" (or the delete action)';

/**
 * Tracks with stored state that the config no longer names. They are never
 * collected by themselves (a typo must not prune a cluster): every tick
 * reports them until `driftless delete` removes their state — but for the
 * tracks of deleted GitTracks, which a discovery collects ({@link tracksOffConfig}).
 */
export async function tracksRemovedFromConfig(
  tracks: readonly Pick<Track, 'name'>[],
  state: Pick<StateStore, 'listTracks'>,
): Promise<string[]> {
  const configured = new Set(tracks.map((track) => track.name));
  return (await state.listTracks()).filter((name) => !configured.has(name));
}

/** The tracks with stored state that no track of the config or of a source names. */
export interface TracksOffConfig {
  /** Removed from the config: theirs to `driftless delete`. */
  readonly removed: string[];
  /** The tracks of deleted GitTracks: their source's discoveries are collecting their objects. */
  readonly collecting: CollectingTrack[];
  /** Kept by their source while the document that gave them is refused: not removed. */
  readonly held: HeldTrack[];
}

/**
 * {@link tracksRemovedFromConfig}, less the tracks the config's sources keep (`readKept`:
 * published-tracks.ts keptTracks): those of deleted GitTracks whose objects are being collected,
 * and those whose document is refused for now, each reported as such — nothing is for `driftless
 * delete` there: a discovery collects the first, a mended document syncs the second again.
 */
export async function tracksOffConfig(
  tracks: readonly Pick<Track, 'name'>[],
  state: Pick<StateStore, 'listTracks'>,
  readKept: () => Promise<KeptTracks>,
): Promise<TracksOffConfig> {
  const withState = await tracksRemovedFromConfig(tracks, state);
  // Most ticks have no track off the config: they read no published list.
  if (withState.length === 0) return { removed: [], collecting: [], held: [] };
  const kept = await readKept();
  const collecting = kept.collecting.filter((track) => withState.includes(track.name));
  const held = kept.held.filter((track) => withState.includes(track.name));
  const keptNames = new Set([...collecting, ...held].map((track) => track.name));
  return {
    removed: withState.filter((name) => !keptNames.has(name)),
    collecting,
    held,
  };
}

/** What a tick did and found: the due tracks it queued, and the tracks off the config. */
export interface ScheduledTick extends TracksOffConfig {
  readonly tracks: string[];
}

/**
 * Queues a poll and a drift check for every due track; returns their names,
 * the tracks removed from the config that still have state, and those of
 * deleted GitTracks being collected.
 */
export async function scheduleDueTracks(
  now: Date,
  deps: ScheduleDeps,
  options: ScheduleOptions = {},
): Promise<ScheduledTick> {
  const state = deps.keptStates ? await deps.keptStates.forTick(deps.state) : deps.state;
  const due = await dueTracks(deps.tracks, state, now, options);
  const tick = now.toISOString();
  // Tracks are independent: one failing send must not hold back the others, but is reported.
  const sent = await Promise.allSettled([
    ...(deps.tracksFrom ?? []).map((source) => deps.queue.enqueue(discoverJob(source, tick))),
    ...due.map(async (track) => {
      for (const job of scheduledJobs(track, tick)) await deps.queue.enqueue(job);
    }),
  ]);
  const failed = sent.flatMap((result) => (result.status === 'rejected' ? [result.reason] : []));
  if (failed.length > 0) {
    throw new AggregateError(
      failed,
      `${failed.length} of ${due.length + (deps.tracksFrom?.length ?? 0)} due tracks and sources were not queued`,
    );
  }
  // As a config's `tracksFrom`, which keptTracks reads (a mutable list: a copy).
  const sources = { tracksFrom: [...(deps.tracksFrom ?? [])] };
  return {
    tracks: due.map((track) => track.name),
    ...(await tracksOffConfig(deps.tracks, state, () => keptTracks(sources, deps.published))),
  };
}
