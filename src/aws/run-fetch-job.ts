/**
 * The fetch function's work for one job: run the fetch use-case for the
 * job's track and queue the sync job it asks for. A fetch that fails (Git
 * down, render error) is recorded in the track's status by the use-case and
 * is not retried here: the next push or poll tries again.
 */
import type { Track } from '../config/types.ts';
import type { GitSource } from '../source/ports.ts';
import type { ArtifactStore, StateStore } from '../store/ports.ts';
import { fetchTrack, type FetchResult } from '../sync/fetch-track.ts';
import type { FetchJob, JobQueue } from '../sync/jobs.ts';
import { trackNamed } from './unknown-track.ts';

export interface RunFetchJobDeps {
  readonly tracks: readonly Track[];
  readonly source: GitSource;
  readonly artifacts: ArtifactStore;
  readonly state: StateStore;
  readonly queue: JobQueue;
  readonly now?: () => Date;
}

/** Fetches the job's track and queues the resulting sync job, if any. */
export async function runFetchJob(job: FetchJob, deps: RunFetchJobDeps): Promise<FetchResult> {
  const track = trackNamed(deps.tracks, job.track);
  const { result, next } = await fetchTrack(track, job, {
    source: deps.source,
    artifacts: deps.artifacts,
    state: deps.state,
    ...(deps.now === undefined ? {} : { now: deps.now }),
  });
  if (next !== undefined) await deps.queue.enqueue(next);
  return result;
}
