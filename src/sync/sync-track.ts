/**
 * The whole sync in one process (`driftless sync`, `driftless serve`): the
 * fetch job, then the sync job it asks for — the same two steps the fetch and
 * apply functions run apart in AWS.
 */
import type { Track } from '../config/types.ts';
import type { GitSource } from '../source/ports.ts';
import type { HistoryTrigger } from '../store/ports.ts';
import { applyRevision, type ApplyDeps, type SyncResult } from './apply-revision.ts';
import { fetchTrack } from './fetch-track.ts';
import { readTrackState } from './track-state.ts';
import { commitOf } from '../object-id.ts';
import { throwIfInterrupted } from '../errors.ts';

export type { SyncOutcome, SyncResult } from './sync-result.ts';

export interface SyncDeps extends ApplyDeps {
  readonly source: GitSource;
}

export interface SyncRequest {
  /** A commit sha or a reference to sync instead of the track's own. */
  readonly revision?: string;
  readonly trigger: Exclude<HistoryTrigger, 'rollback'>;
}

/** Syncs one track to its newest revision (or `request.revision`), recording status and history. */
export async function syncTrack(
  track: Track,
  request: SyncRequest,
  deps: SyncDeps,
): Promise<SyncResult> {
  const result = await fetchAndApply(track, request, deps);
  // A chart rendered for other capabilities than the cluster's: the apply
  // recorded the cluster's, so one more render is for them (the same commit).
  if (result.rerender && result.revision) {
    return fetchAndApply(track, { ...request, revision: commitOf(result.revision) }, deps);
  }
  return result;
}

async function fetchAndApply(
  track: Track,
  request: SyncRequest,
  deps: SyncDeps,
): Promise<SyncResult> {
  // Asked to stop before this track began (a sync of every track): it does not begin.
  throwIfInterrupted(deps.signal);
  const fetched = await fetchTrack(
    track,
    {
      type: 'fetch',
      track: track.name,
      trigger: request.trigger,
      ...(request.revision ? { revision: request.revision } : {}),
    },
    deps,
  );
  if (!fetched.next) {
    const state = await readTrackState(deps.state, track.name);
    const { revision, outcome, error, pinned } = fetched.result;
    // A newer commit that failed while the track is pinned at another: no sync would apply it,
    // so this one ends at the pin as for a commit that renders, its failure a warning. A
    // revision asked for by name (`--revision`) is what the sync was for: that failure stands.
    if (outcome === 'failed' && pinned !== undefined && request.revision === undefined) {
      return {
        track: track.name,
        revision,
        result: 'pinned',
        changeset: [],
        state,
        warning: `revision ${revision} failed and is not applied while the track is pinned at ${pinned}: ${error}`,
      };
    }
    return {
      track: track.name,
      revision,
      result: outcome === 'stale' ? 'superseded' : 'failed',
      changeset: [],
      state,
      ...(error ? { error } : {}),
    };
  }
  // Asked to stop since the fetch: takeApplyLease throws, so nothing is leased or sent.
  return applyRevision(track, fetched.next, deps);
}
