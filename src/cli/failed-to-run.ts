import type { Track } from '../config/types.ts';
import { messageOf } from '../errors.ts';
import type { StateStore } from '../store/ports.ts';
import type { SyncResult } from '../sync/sync-result.ts';
import { emptyTrackState, readTrackState } from '../sync/track-state.ts';

/**
 * The result a command reports for a sync or rollback that could not run or
 * record its own result (a cluster or store unreachable, the track's lease
 * held): failed, with the track's state as far as it can still be read.
 */
export async function failedToRun(
  state: StateStore,
  track: Pick<Track, 'name'>,
  revision: string | null,
  error: unknown,
): Promise<SyncResult> {
  return {
    track: track.name,
    revision,
    result: 'failed',
    changeset: [],
    state: await readTrackState(state, track.name).catch(() => emptyTrackState()),
    error: messageOf(error),
  };
}
