/**
 * Jobs run as `serve` runs them (runJob with executeJob, the real use-cases) on a test's store,
 * Git source and cluster, with the queue and the notifications kept in memory: what the jobs
 * queued waits to be run by the test, and what they told goes through the real commit status
 * mapping.
 */
import type { KubernetesPort } from '../../../src/cluster/kubernetes-port.ts';
import type { Track } from '../../../src/config/types.ts';
import { commitStatusOf, type CommitStatus } from '../../../src/notify/commit-status.ts';
import type { NotificationEvent } from '../../../src/notify/events.ts';
import type { GitSource } from '../../../src/source/ports.ts';
import type { FsStore } from '../../../src/store/fs-store.ts';
import type { SyncResult } from '../../../src/sync/apply-revision.ts';
import { executeJob } from '../../../src/sync/execute-job.ts';
import type { FetchResult } from '../../../src/sync/fetch-track.ts';
import type { Job } from '../../../src/sync/jobs.ts';
import { runJob, type JobDeps, type JobResult } from '../../../src/sync/run-job.ts';
import { updateTrackState, type TrackState } from '../../../src/sync/track-state.ts';

export type ToldStatus = Pick<CommitStatus, 'state' | 'description'>;

export interface ServedJobs {
  /** The events the jobs told, in order. */
  readonly told: NotificationEvent[];
  /** The jobs the jobs queued that were not run yet, in order. */
  readonly queued: Job[];
  /** Runs `job`; what it queues stays in `queued`. */
  run(job: Job): Promise<JobResult>;
  /** Runs `job` and every job it queues, in order: their results. */
  runAll(job: Job): Promise<JobResult[]>;
  /** The commit statuses the events told so far set on `sha`, in order. */
  statusesOf(sha: string): ToldStatus[];
}

export interface ServedJobsOptions {
  /** The configured tracks: a test may replace one, the jobs and statuses then see the new one. */
  readonly tracks: Track[];
  readonly store: FsStore;
  readonly git: GitSource;
  /** The cluster each job is given, asked anew for each. */
  readonly cluster: () => KubernetesPort;
}

export function servedJobs({ tracks, store, git, cluster }: ServedJobsOptions): ServedJobs {
  const told: NotificationEvent[] = [];
  const queued: Job[] = [];
  const deps: JobDeps = {
    tracks,
    artifacts: store,
    state: store,
    queue: { enqueue: async (job) => void queued.push(job) },
    source: async () => git,
    cluster: async () => cluster(),
    notify: async (_track, events) => void told.push(...events),
  };
  const run = (job: Job): Promise<JobResult> => runJob(job, deps, executeJob);
  // Looked up when asked: a test may have replaced the track since.
  const configured = (name: string): Track => tracks.find((t) => t.name === name)!;
  return {
    told,
    queued,
    run,
    runAll: async (job) => {
      const done: JobResult[] = [];
      queued.push(job);
      for (let next = queued.shift(); next !== undefined; next = queued.shift()) {
        done.push(await run(next));
      }
      return done;
    },
    statusesOf: (sha) =>
      told
        .map((event) => commitStatusOf(event, configured(event.track)))
        .filter((status) => status?.sha === sha)
        .map((status) => ({ state: status!.state, description: status!.description })),
  };
}

/** What a job's result says: a fetch's outcome, a sync's or rollback's result, else its type. */
export function outcomeOf(done: JobResult): string {
  if (done.type === 'fetch') return (done.result as FetchResult).outcome;
  if (done.type === 'sync' || done.type === 'rollback') return (done.result as SyncResult).result;
  return done.type;
}

/** Records in `track`'s state a health check that found it unhealthy at `now`. */
export function recordUnhealthy(store: FsStore, track: string, now: Date): Promise<TrackState> {
  return updateTrackState(store, track, (state) => {
    state.conditions.push({
      type: 'Healthy',
      status: 'False',
      reason: 'HealthCheckFailed',
      message: 'Deployment/apps/web: 0/2 ready',
      lastTransitionTime: now.toISOString(),
    });
  });
}
