/**
 * The drift schedule's work: for each track due at this tick, a fetch job
 * (a poll of its ref, so a push whose webhook was lost is still deployed
 * within the track's interval) and a drift job. The schedule runs every
 * minute; `dueTracks` decides per track from its interval.
 */
import type { Track } from '../config/types.ts';
import type { StateStore } from '../store/ports.ts';
import { dueTracks } from '../sync/due-tracks.ts';
import type { JobQueue } from '../sync/jobs.ts';

export interface EnqueueDueTracksDeps {
  readonly tracks: readonly Track[];
  readonly state: StateStore;
  readonly queue: JobQueue;
}

/** Queues a poll and a drift check for every due track; returns their names. */
export async function enqueueDueTracks(
  now: Date,
  deps: EnqueueDueTracksDeps,
): Promise<{ tracks: string[] }> {
  const due = await dueTracks(deps.tracks, deps.state, now);
  const tick = now.toISOString();
  // Tracks are independent: one failing send must not hold back the others, but is reported.
  const sent = await Promise.allSettled(
    due.map(async (track) => {
      await deps.queue.enqueue({ type: 'fetch', track: track.name, trigger: 'schedule', tick });
      await deps.queue.enqueue({ type: 'drift', track: track.name, tick });
    }),
  );
  const failed = sent.flatMap((result) => (result.status === 'rejected' ? [result.reason] : []));
  if (failed.length > 0) {
    throw new AggregateError(
      failed,
      `${failed.length} of ${due.length} due tracks were not queued`,
    );
  }
  return { tracks: due.map((track) => track.name) };
}
