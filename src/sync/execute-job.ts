/**
 * The use-case behind each job type, for runJob (run-job.ts): a fetch runs where
 * Git credentials are, sync, drift and rollback where cluster credentials
 * are. Kept as two entry points so that each Lambda bundle holds only the
 * use-cases its function may run; {@link executeJob} is both, for a local
 * process.
 */
import type { Track } from '../config/types.ts';
import { deferredCluster } from '../cluster/deferred-cluster.ts';
import type { KubernetesPort } from '../cluster/kubernetes-port.ts';
import { commitOf } from '../object-id.ts';
import { discoverGitTracks, writeJobStatus } from './discover-git-tracks.ts';
import {
  discoverTrackDocuments,
  type DiscoverDeps,
  type DiscoverResult,
} from './discover-tracks.ts';
import { tracksFromNamed } from './published-tracks.ts';
import { readTrackState } from './track-state.ts';
import { applyRevision, type SyncResult } from './apply-revision.ts';
import { fetchTrack } from './fetch-track.ts';
import type {
  ApplyJob,
  DiscoverJob,
  FetchJob,
  Job,
  NotifyJob,
  SyncJob,
  WriteBackJob,
} from './jobs.ts';
import { writeBackTrack } from './write-back.ts';
import { reconcileDrift } from './reconcile-drift.ts';
import { runLifecycleAction } from './lifecycle.ts';
import { dependentsToResume } from './resume-dependents.ts';
import { rollbackTrack } from './rollback.ts';
import {
  JobNotRunnableError,
  requiredPort,
  type DiscoverSource,
  type JobDeps,
  type JobResult,
} from './run-job.ts';

/**
 * A job where the Git credentials are: a fetch (resolve, render and store
 * the revision; next, its sync), a write-back (commit what the cluster
 * changed in `syncTo: git` objects) or the commit statuses of apply's events.
 */
export async function executeFetchJob(
  track: Track,
  job: FetchJob | WriteBackJob | NotifyJob,
  deps: JobDeps,
): Promise<JobResult> {
  if (job.type === 'notify') {
    // Receivers that left the config since are skipped; no receivers at all is the same.
    if (deps.notify !== undefined) await deps.notify(track, job.events, job.receivers);
    const revision = job.events.at(-1)?.revision ?? null;
    return { type: 'notify', job, result: { revision, events: job.events.length }, next: [] };
  }
  const source = await requiredPort(deps.source, job, 'Git source')();
  if (job.type === 'writeBack') {
    const result = await writeBackTrack(track, job, {
      source,
      state: deps.state,
      ...(deps.now === undefined ? {} : { now: deps.now }),
      ...(deps.signal === undefined ? {} : { signal: deps.signal }),
    });
    return { type: 'writeBack', job, result, next: [] };
  }
  const { result, next } = await fetchTrack(track, job, {
    source,
    artifacts: deps.artifacts,
    state: deps.state,
    ...(deps.now === undefined ? {} : { now: deps.now }),
    // serve's shutdown, a Lambda's coming timeout: the fetch ends at once, recording nothing.
    ...(deps.signal === undefined ? {} : { signal: deps.signal }),
  });
  return { type: 'fetch', job, result, next: next === undefined ? [] : [next] };
}

/**
 * A sync, drift, rollback or lifecycle job against the track's cluster;
 * next, the dependents it made Ready. A track read from a GitTrack gets the
 * outcome written to the GitTrack's `.status` at once, as Faros would.
 */
export async function executeApplyJob(
  track: Track,
  job: Exclude<ApplyJob, DiscoverJob>,
  deps: JobDeps,
): Promise<JobResult> {
  // Deferred: a connection that cannot be made fails the use-case's first request, which
  // records it in the track's status like an unreachable cluster (deferred-cluster.ts).
  const cluster = deferredCluster(requiredPort(deps.cluster, job, 'cluster credentials')(track));
  const done = await executeOnCluster(track, job, deps, cluster);
  const gitTrack = track.origin?.gitTrack;
  if (gitTrack !== undefined && done.type !== 'lifecycle') {
    // Best effort: the next discovery of the source writes it again.
    const state = await readTrackState(deps.state, track.name);
    await writeJobStatus(track, gitTrack, cluster, state).catch(() => undefined);
  }
  return done;
}

async function executeOnCluster(
  track: Track,
  job: Exclude<ApplyJob, DiscoverJob>,
  deps: JobDeps,
  cluster: KubernetesPort,
): Promise<JobResult> {
  const useCaseDeps = {
    cluster,
    artifacts: deps.artifacts,
    state: deps.state,
    ...(deps.readSecret === undefined ? {} : { readSecret: deps.readSecret }),
    ...(deps.now === undefined ? {} : { now: deps.now }),
    ...(deps.signal === undefined ? {} : { signal: deps.signal }),
  };
  const resumed = (result: SyncResult, trigger: SyncJob['trigger']): Promise<SyncJob[]> =>
    dependentsToResume(result, deps.tracks, deps.state, trigger);
  switch (job.type) {
    case 'drift': {
      const result = await reconcileDrift(track, job, useCaseDeps);
      // Changes to syncTo: git objects go to Git, written where the Git credentials are.
      const next: WriteBackJob[] =
        result.writeBack.length > 0 && result.revision !== null
          ? [
              {
                type: 'writeBack',
                track: track.name,
                revision: result.revision,
                changes: result.writeBack,
                ...(result.writeBackRefused.length > 0 ? { refused: result.writeBackRefused } : {}),
                trigger: job.trigger ?? 'schedule',
                ...(job.tick === undefined ? {} : { tick: job.tick }),
              },
            ]
          : [];
      return { type: 'drift', job, result, next };
    }
    case 'sync': {
      const result = await applyRevision(track, job, useCaseDeps);
      // A chart rendered for other capabilities: render the same commit again (render-track-revision.ts).
      const next = result.rerender
        ? [
            {
              type: 'fetch' as const,
              track: track.name,
              trigger: job.trigger,
              revision: commitOf(job.revision),
            },
          ]
        : await resumed(result, job.trigger);
      return { type: 'sync', job, result, next };
    }
    case 'rollback': {
      const result = await rollbackTrack(track, job, useCaseDeps);
      return { type: 'rollback', job, result, next: await resumed(result, 'manual') };
    }
    case 'lifecycle': {
      const result = await runLifecycleAction(track, job, useCaseDeps);
      // Resumed or unpinned: fetch at once rather than at the next poll, as `driftless resume` does.
      const next =
        (result.result === 'resumed' || result.result === 'unpinned') && !result.suspended
          ? [
              {
                type: 'fetch' as const,
                track: track.name,
                trigger: 'manual' as const,
                ...(job.by === undefined ? {} : { by: job.by }),
              },
            ]
          : [];
      return { type: 'lifecycle', job, result, next };
    }
  }
}

/** Any job: what a local process (`driftless serve`) runs. */
export function executeJob(
  track: Track,
  job: Exclude<Job, DiscoverJob>,
  deps: JobDeps,
): Promise<JobResult> {
  return job.type === 'fetch' || job.type === 'writeBack' || job.type === 'notify'
    ? executeFetchJob(track, job, deps)
    : executeApplyJob(track, job, deps);
}

/** What every discovery needs, and the source the job names (undefined: no longer configured). */
function discoveryOf(job: DiscoverJob, deps: JobDeps) {
  const config = requiredPort(deps.config, job, 'config');
  const common: DiscoverDeps = {
    config,
    published: requiredPort(deps.published, job, 'store of published tracks'),
    state: deps.state,
    ...(deps.now === undefined ? {} : { now: deps.now }),
  };
  return { source: tracksFromNamed(config, job.track), common };
}

/** A job for a source that left the config (queued before a deployment): nothing to read. */
function noLongerConfigured(job: DiscoverJob): DiscoverResult {
  return {
    source: job.track,
    tracks: [],
    added: [],
    problems: [],
    collected: [],
    revision: null,
    errors: [`tracksFrom source "${job.track}" is no longer in the config`],
  };
}

/** Discovery in fetch: GitTrack documents kept in Git. */
export const discoverInFetch: DiscoverSource = async (job, deps) => {
  const { source, common } = discoveryOf(job, deps);
  if (source === undefined) return noLongerConfigured(job);
  if (source.kind !== 'repository') {
    throw new JobNotRunnableError(`discover job for "${source.id}": GitTracks are read in apply`);
  }
  const git = await requiredPort(deps.source, job, 'Git source')();
  return discoverTrackDocuments(source, { ...common, source: git });
};

/** Discovery in apply: Faros GitTracks in a cluster. */
export const discoverInApply: DiscoverSource = async (job, deps) => {
  const { source, common } = discoveryOf(job, deps);
  if (source === undefined) return noLongerConfigured(job);
  if (source.kind !== 'cluster') {
    throw new JobNotRunnableError(
      `discover job for "${source.id}": documents in Git are read in fetch`,
    );
  }
  const connect = requiredPort(deps.cluster, job, 'cluster credentials');
  const cluster = await connect({ name: source.id, cluster: source.cluster });
  return discoverGitTracks(source, { ...common, cluster });
};

/** Any discovery: what a local process (`driftless serve`) runs. */
export const discoverAny: DiscoverSource = (job, deps) =>
  job.runsIn === 'fetch' ? discoverInFetch(job, deps) : discoverInApply(job, deps);
