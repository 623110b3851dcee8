/**
 * Which tracks the schedule should look at now: not suspended, and whose drift
 * check (and ref poll) is older than their interval.
 */
import type { Track } from '../config/types.ts';
import type { StateStore } from '../store/ports.ts';
import { readTrackState } from './track-state.ts';

/** The tracks due for a poll and drift check at `now`. */
export async function dueTracks(
  tracks: readonly Track[],
  state: StateStore,
  now: Date,
): Promise<Track[]> {
  const due: Track[] = [];
  for (const track of tracks) {
    if (track.suspend) continue;
    const checkedAt = (await readTrackState(state, track.name)).driftCheckedAt;
    if (!checkedAt || Date.parse(checkedAt) + track.interval <= now.getTime()) due.push(track);
  }
  return due;
}
