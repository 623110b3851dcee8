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
import type { Track } from '../config/types.ts';
import { DriftlessError } from '../errors.ts';
import type { GitSource } from '../source/ports.ts';
import type { ArtifactStore, StateStore } from '../store/ports.ts';
import { applyRevision, type SyncResult } from './apply-revision.ts';
import { fetchTrack, type FetchResult } from './fetch-track.ts';
import type { DriftJob, FetchJob, Job, JobQueue, RollbackJob, SyncJob } from './jobs.ts';
import { reconcileDrift, type DriftResult } from './reconcile-drift.ts';
import { dependentsToResume } from './resume-dependents.ts';
import { rollbackTrack } from './rollback.ts';
import { trackNamed } from './track-named.ts';

/** What a job did: its use-case's own result, and the jobs it queued next. */
export type JobResult =
  | JobResultOf<'fetch', FetchJob, FetchResult>
  | JobResultOf<'sync', SyncJob, SyncResult>
  | JobResultOf<'drift', DriftJob, DriftResult>
  | JobResultOf<'rollback', RollbackJob, SyncResult>;

interface JobResultOf<Type extends Job['type'], J extends Job, R> {
  readonly type: Type;
  readonly job: J;
  readonly result: R;
  readonly next: readonly SyncJob[];
}

/** This process cannot run the job: a fetch where there are no Git credentials, or the reverse. */
export class JobNotRunnableError extends DriftlessError {
  readonly code = 'JOB_NOT_RUNNABLE';
}

export interface JobDeps {
  readonly tracks: readonly Track[];
  readonly artifacts: ArtifactStore;
  readonly state: StateStore;
  /** Where follow-up jobs go. */
  readonly queue: JobQueue;
  /** The Git source, where Git credentials are (the fetch function, a local process). */
  readonly source?: () => Promise<GitSource>;
  /** The cluster of a track, where cluster credentials are (the apply function, a local process). */
  readonly cluster?: (track: Track) => Promise<KubernetesPort>;
  readonly now?: () => Date;
}

/** Runs a job's use-case; {@link runJob} by default, a fake in the adapters' unit tests. */
export type ExecuteJob = (track: Track, job: Job, deps: JobDeps) => Promise<JobResult>;

/** Runs `job` and queues its follow-up jobs; see the module comment. */
export async function runJob(
  job: Job,
  deps: JobDeps,
  execute: ExecuteJob = executeJob,
): Promise<JobResult> {
  const result = await execute(trackNamed(deps.tracks, job.track), job, deps);
  for (const next of result.next) await deps.queue.enqueue(next);
  return result;
}

/** The job's use-case alone: nothing is queued. */
export async function executeJob(track: Track, job: Job, deps: JobDeps): Promise<JobResult> {
  const now = deps.now === undefined ? {} : { now: deps.now };
  if (job.type === 'fetch') {
    const source = await required(deps.source, job, 'a Git source')();
    const { result, next } = await fetchTrack(track, job, { ...deps, ...now, source });
    return { type: 'fetch', job, result, next: next === undefined ? [] : [next] };
  }
  const cluster = await required(deps.cluster, job, 'cluster credentials')(track);
  const useCaseDeps = { cluster, artifacts: deps.artifacts, state: deps.state, ...now };
  switch (job.type) {
    case 'drift': {
      const result = await reconcileDrift(track, job, useCaseDeps);
      return { type: 'drift', job, result, next: [] };
    }
    case 'sync': {
      const result = await applyRevision(track, job, useCaseDeps);
      return { type: 'sync', job, result, next: await resumed(result, job.trigger, deps) };
    }
    case 'rollback': {
      const result = await rollbackTrack(track, job, useCaseDeps);
      return { type: 'rollback', job, result, next: await resumed(result, 'manual', deps) };
    }
  }
}

function resumed(
  result: SyncResult,
  trigger: SyncJob['trigger'],
  deps: JobDeps,
): Promise<SyncJob[]> {
  return dependentsToResume(result, deps.tracks, deps.state, trigger);
}

function required<T>(port: T | undefined, job: Job, what: string): T {
  if (port === undefined) {
    throw new JobNotRunnableError(
      `${job.type} job for track "${job.track}": this process has no ${what}`,
    );
  }
  return port;
}

/** What a job came to, in the words logs and metrics use. */
export interface JobSummary {
  /** `fetched`, `stale`, `applied`, `unchanged`, `pinned`, `superseded`, `clean`, `drifted`, `corrected` or `failed`. */
  readonly result: string;
  readonly revision: string | null;
  /** Why the job failed; set when `result` is `failed`. */
  readonly error?: string;
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
    case 'rollback': {
      const { result, error } = done.result;
      return { result, revision, ...(error === undefined ? {} : { error }) };
    }
  }
}
