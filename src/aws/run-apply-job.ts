/**
 * The apply function's work for one job: connect to the track's cluster (the
 * only place cluster credentials are built) and run the job's use-case —
 * sync, drift or rollback. Outcomes (applied, failed, drifted...) are
 * recorded in the track's state by the use-cases; only a failure to run at
 * all (store or cluster unreachable) throws, so SQS retries the job. A sync
 * or rollback that leaves its track Ready queues the syncs of the tracks
 * that were waiting for it (resume-dependents.ts).
 */
import type { KubernetesPort } from '../cluster/kubernetes-port.ts';
import type { Cluster, Track } from '../config/types.ts';
import type { ArtifactStore, StateStore } from '../store/ports.ts';
import { applyRevision, type SyncResult } from '../sync/apply-revision.ts';
import type { ApplyJob, JobQueue } from '../sync/jobs.ts';
import { reconcileDrift, type DriftResult } from '../sync/reconcile-drift.ts';
import { dependentsToResume } from '../sync/resume-dependents.ts';
import { rollbackTrack } from '../sync/rollback.ts';
import { trackNamed, UnknownTrackError } from './unknown-track.ts';

export interface RunApplyJobDeps {
  readonly tracks: readonly Track[];
  readonly clusters: readonly Cluster[];
  /** Connects to a cluster (cached per container by the caller). */
  readonly connect: (cluster: Cluster) => Promise<KubernetesPort>;
  readonly artifacts: ArtifactStore;
  readonly state: StateStore;
  /** The apply queue, for the syncs of dependents a job made Ready for. */
  readonly queue: JobQueue;
  readonly now?: () => Date;
}

/** Runs one sync, drift or rollback job against its track's cluster. */
export async function runApplyJob(
  job: ApplyJob,
  deps: RunApplyJobDeps,
): Promise<SyncResult | DriftResult> {
  const track = trackNamed(deps.tracks, job.track);
  const cluster = deps.clusters.find((candidate) => candidate.name === track.cluster);
  if (cluster === undefined) {
    // The config validates cluster names, so only a stale job for a changed config gets here.
    throw new UnknownTrackError(
      `track "${track.name}": cluster "${track.cluster}" is not configured`,
    );
  }
  const useCaseDeps = {
    cluster: await deps.connect(cluster),
    artifacts: deps.artifacts,
    state: deps.state,
    ...(deps.now === undefined ? {} : { now: deps.now }),
  };
  if (job.type === 'drift') return reconcileDrift(track, job, useCaseDeps);
  const result =
    job.type === 'sync'
      ? await applyRevision(track, job, useCaseDeps)
      : await rollbackTrack(track, job, useCaseDeps);
  const trigger = job.type === 'sync' ? job.trigger : 'manual';
  for (const next of await dependentsToResume(result, deps.tracks, deps.state, trigger)) {
    await deps.queue.enqueue(next);
  }
  return result;
}
