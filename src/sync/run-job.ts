/**
 * Running one job, wherever it runs: the fetch, apply and local (`serve`)
 * workers all call {@link runJob}. It finds the job's track, runs the job's
 * use-case — fetch, sync, drift or rollback — and queues the follow-up jobs
 * the use-case asks for (the sync of a fetched revision, the syncs of
 * dependents a sync or rollback made Ready). Outcomes (applied, failed,
 * drifted...) are recorded in the track's state by the use-cases and come
 * back as a typed {@link JobResult}; only a failure to run at all (store,
 * Git source or cluster unreachable, an unknown track) throws, so that a
 * queue can retry the job.
 */
import type { KubernetesPort } from '../cluster/kubernetes-port.ts';
import type { SecretRef } from '../config/secret-ref.ts';
import type { Config, Track } from '../config/types.ts';
import { DriftlessError } from '../errors.ts';
import type { GitSource } from '../source/ports.ts';
import type { ArtifactStore, PublishedTrackStore, StateStore } from '../store/ports.ts';
import type { SyncResult } from './apply-revision.ts';
import type { FetchResult } from './fetch-track.ts';
import type {
  DiscoverJob,
  DriftJob,
  FetchJob,
  Job,
  JobQueue,
  LifecycleJob,
  NotifyJob,
  RollbackJob,
  SyncJob,
  WriteBackJob,
} from './jobs.ts';
import type { WriteBackResult } from './write-back.ts';
import type { Notify } from '../notify/deliver.ts';
import type { DiscoverResult } from './discover-tracks.ts';
import { newEvents } from './job-events.ts';
import type { LifecycleResult } from './lifecycle.ts';
import type { DriftResult } from './reconcile-drift.ts';
import { trackNamed } from './track-named.ts';
import { isSuspended, readTrackState } from './track-state.ts';

/** What a job did: its use-case's own result, and the jobs it queued next. */
export type JobResult =
  | JobResultOf<'fetch', FetchJob, FetchResult>
  | JobResultOf<'sync', SyncJob, SyncResult>
  | JobResultOf<'drift', DriftJob, DriftResult>
  | JobResultOf<'rollback', RollbackJob, SyncResult>
  | JobResultOf<'lifecycle', LifecycleJob, LifecycleResult>
  | JobResultOf<'discover', DiscoverJob, DiscoverResult>
  | JobResultOf<'writeBack', WriteBackJob, WriteBackResult>
  /** Events delivered for another step (notify/deliver.ts); failures are logged there. */
  | JobResultOf<'notify', NotifyJob, { readonly revision: string | null; readonly events: number }>
  /** The track is suspended: the fetch, sync or drift job did nothing. */
  | JobResultOf<
      'suspended',
      FetchJob | SyncJob | DriftJob | WriteBackJob,
      { readonly revision: null }
    >;

interface JobResultOf<Type extends Job['type'] | 'suspended', J extends Job, R> {
  readonly type: Type;
  readonly job: J;
  readonly result: R;
  readonly next: readonly (SyncJob | FetchJob | WriteBackJob)[];
}

/** This process cannot run the job: a fetch where there are no Git credentials, or the reverse. */
export class JobNotRunnableError extends DriftlessError {
  readonly code = 'JOB_NOT_RUNNABLE';
}

export interface JobDeps {
  /** The config's tracks and those published by `tracksFrom` discoveries (published-tracks.ts). */
  readonly tracks: readonly Track[];
  /** The config's own tracks and sources: what discover jobs read and may not override. */
  readonly config?: Pick<Config, 'tracks' | 'tracksFrom'>;
  /** Where discover jobs publish the tracks they read. */
  readonly published?: PublishedTrackStore;
  readonly artifacts: ArtifactStore;
  readonly state: StateStore;
  /** Where follow-up jobs go. */
  readonly queue: JobQueue;
  /** The Git source, where Git credentials are (the fetch function, a local process). */
  readonly source?: () => Promise<GitSource>;
  /** The cluster of a track, where cluster credentials are (the apply function, a local process). */
  readonly cluster?: (track: Pick<Track, 'name' | 'cluster'>) => Promise<KubernetesPort>;
  /** Reads decryption keys and substituteFrom secrets (the apply function, a local process). */
  readonly readSecret?: (ref: SecretRef) => Promise<string>;
  /**
   * Sends the notification events of finished jobs (notify/deliver.ts):
   * best effort, it never throws. Absent: no notifications configured.
   */
  readonly notify?: Notify;
  readonly now?: () => Date;
  /**
   * Aborted when the process running jobs stops (`serve` shutting down): a
   * running sync, rollback, drift check or delete then stops as the CLI's do
   * at Ctrl-C (apply-revision.ts `ApplyDeps.signal`) — what it did recorded,
   * its track's lease given back at once.
   */
  readonly signal?: AbortSignal;
}

/**
 * Runs a job's use-case (execute-job.ts): the fetch function is given only the
 * fetch use-case, the apply function only the apply ones, so each bundle
 * carries only its own; a local process runs them all.
 */
export type ExecuteJob<J extends Job = Job> = (
  track: Track,
  job: Exclude<J, DiscoverJob>,
  deps: JobDeps,
) => Promise<JobResult>;

/**
 * Reads a `tracksFrom` source and publishes its tracks (execute-job.ts): the
 * fetch function is given the reader of repositories, the apply function
 * the reader of clusters, a local process both.
 */
export type DiscoverSource = (job: DiscoverJob, deps: JobDeps) => Promise<DiscoverResult>;

/**
 * Whether a suspension stops the job: every fetch, sync and drift job,
 * whoever queued it (a webhook, the schedule, a dependency that became
 * Ready, the `sync` action), as `driftless sync` refuses a suspended track.
 * Rollback and lifecycle jobs run: a person asked for exactly that.
 */
function stoppedBySuspension(job: Job): job is FetchJob | SyncJob | DriftJob | WriteBackJob {
  return (
    job.type === 'fetch' || job.type === 'sync' || job.type === 'drift' || job.type === 'writeBack'
  );
}

/**
 * Runs `job` and queues its follow-up jobs; see the module comment. A
 * suspended track (config or stored state) runs no fetch, sync or drift
 * job: checked here, when the job runs, so a job queued before the
 * suspension stops too.
 */
export async function runJob<J extends Job>(
  job: J,
  deps: JobDeps,
  execute: ExecuteJob<J>,
  discover?: DiscoverSource,
): Promise<JobResult> {
  if (job.type === 'discover') {
    // A source, not a track: no suspension applies. A new track is polled at once, not a tick
    // later (the fetch job checks its suspension like any other).
    const result = await requiredPort(discover, job, 'reader of tracksFrom sources')(job, deps);
    const next = result.added.map((track): FetchJob => ({
      type: 'fetch',
      track,
      trigger: 'schedule',
      ...(job.tick === undefined ? {} : { tick: job.tick }),
    }));
    for (const fetch of next) await deps.queue.enqueue(fetch);
    return { type: 'discover', job, result, next };
  }
  const track = trackNamed(deps.tracks, job.track);
  if (
    stoppedBySuspension(job) &&
    isSuspended(track, await readTrackState(deps.state, track.name))
  ) {
    return { type: 'suspended', job, result: { revision: null }, next: [] };
  }
  const result = await execute(track, job as Exclude<J, DiscoverJob>, deps);
  for (const next of result.next) await deps.queue.enqueue(next);
  if (deps.notify !== undefined) {
    const time = (deps.now?.() ?? new Date()).toISOString();
    const events = await newEvents(deps.state, track.name, result, time);
    if (events.length > 0) await deps.notify(track, events);
  }
  return result;
}

/** The port `what` of `deps`, or why this process cannot run `job`. */
export function requiredPort<T>(port: T | undefined, job: Job, what: string): T {
  if (port === undefined) {
    throw new JobNotRunnableError(
      `${job.type} job for track "${job.track}": this process has no ${what}`,
    );
  }
  return port;
}

/** What a job came to, in the words logs and metrics use. */
export interface JobSummary {
  /**
   * `fetched`, `stale`, `applied`, `unchanged`, `pinned`, `superseded`, `clean`, `drifted`,
   * `corrected`, `suspended`, `resumed`, `unpinned`, `deleted`, `discovered`, `notified` or `failed`.
   */
  readonly result: string;
  readonly revision: string | null;
  /** Why the job failed; set when `result` is `failed`. */
  readonly error?: string;
  /** Discover jobs: tracks published, and GitTracks refused (each says why on its own status). */
  readonly tracks?: number;
  readonly refused?: number;
}

/** The summary of `done`. */
export function summarizeJob(done: JobResult): JobSummary {
  const revision = done.result.revision;
  switch (done.type) {
    case 'fetch': {
      const { outcome, error } = done.result;
      return { result: outcome, revision, ...(error === undefined ? {} : { error }) };
    }
    case 'drift': {
      const drift = done.result;
      if (drift.errors.length > 0) {
        // Objects that could not be read or corrected: the check itself failed for them.
        const error = drift.errors.map((entry) => entry.error).join('; ');
        return { result: 'failed', revision, error };
      }
      const found = drift.drifted.length > 0 || drift.missing.length > 0;
      return { result: drift.corrected ? 'corrected' : found ? 'drifted' : 'clean', revision };
    }
    case 'sync':
    case 'rollback':
    case 'lifecycle': {
      const { result, error } = done.result;
      return { result, revision, ...(error === undefined ? {} : { error }) };
    }
    case 'suspended':
      return { result: 'suspended', revision };
    case 'notify':
      return { result: 'notified', revision };
    case 'writeBack': {
      const { result, commit, error } = done.result;
      return {
        result,
        revision: commit ?? revision,
        ...(error === undefined ? {} : { error }),
      };
    }
    case 'discover': {
      const { errors, problems, tracks } = done.result;

      // Refused GitTracks are the source's users' mistakes, shown on each of them; not a failure here.
      return errors.length > 0
        ? { result: 'failed', revision, error: errors.join('; ') }
        : { result: 'discovered', revision, tracks: tracks.length, refused: problems.length };
    }
  }
}
