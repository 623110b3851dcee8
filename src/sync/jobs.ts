/**
 * The jobs that flow between the functions (DESIGN.md "Data flow"). A job is
 * plain JSON: it travels through a queue (SQS FIFO grouped by track in AWS,
 * an in-process per-track queue locally) and carries no secret.
 */
import type { DeletionPolicy } from '../config/types.ts';
import type { NotificationEvent } from '../notify/events.ts';
import type { WriteBackChange } from '../render/write-back-change.ts';
import type { HistoryTrigger } from '../store/ports.ts';

export type { WriteBackChange };

/** Resolve the track's ref, render and store the revision, then ask for a sync. Runs in `fetch`. */
export interface FetchJob {
  readonly type: 'fetch';
  readonly track: string;
  readonly trigger: Exclude<HistoryTrigger, 'rollback'>;
  /** The sha a webhook named: only a hint, the fetch resolves the ref itself. */
  readonly hint?: { readonly revision: string; readonly ref: string };
  /** The webhook delivery that caused it, for logs. */
  readonly deliveryId?: string;
  /** A sha or reference to fetch instead of the track's own (`driftless sync --revision`). */
  readonly revision?: string;
  /** The schedule tick that queued it (ISO); see {@link DriftJob.tick}. */
  readonly tick?: string;
  /** Who asked, when a person did (a dashboard user): written into history as `by`. */
  readonly by?: string;
}

/** Apply a stored revision. Runs in `apply`, one per track at a time. */
export interface SyncJob {
  readonly type: 'sync';
  readonly track: string;
  readonly revision: string;
  /** When the fetch resolved the revision (ISO): a revision resolved earlier never replaces a later one. */
  readonly resolvedAt: string;
  readonly trigger: Exclude<HistoryTrigger, 'rollback'>;
  /** Who asked, when a person did (a dashboard user): written into history as `by`. */
  readonly by?: string;
}

/** Detect drift against the applied revision and correct it (or only report it). Runs in `apply`. */
export interface DriftJob {
  readonly type: 'drift';
  readonly track: string;
  readonly detectOnly?: boolean;
  /** Who asked: the schedule (default) or a person (`driftless drift`). */
  readonly trigger?: 'schedule' | 'manual';
  /**
   * The schedule tick that queued it (ISO). Tells two ticks' jobs apart, so
   * SQS FIFO de-duplication (five minutes, by content) drops only a job sent
   * twice for the same tick, not the next check of a track due every minute.
   */
  readonly tick?: string;
}

/** Apply a stored revision and pin the track there. Runs in `apply`. */
export interface RollbackJob {
  readonly type: 'rollback';
  readonly track: string;
  readonly revision: string;
  /** Who asked, when a person did (a dashboard user): written into history as `by`. */
  readonly by?: string;
}

/**
 * Suspend, resume, unpin or delete a track (the rollback function's `action`
 * payloads). Runs in `apply`: it alone writes state and reaches the cluster.
 */
export interface LifecycleJob {
  readonly type: 'lifecycle';
  readonly track: string;
  readonly action: 'suspend' | 'resume' | 'unpin' | 'delete';
  /** Delete: overrides the track's deletionPolicy. */
  readonly policy?: DeletionPolicy;
  /** Who asked, when a person did (a dashboard user): written into history as `by`. */
  readonly by?: string;
}

/**
 * Read a `tracksFrom` source and publish its tracks (discover-tracks.ts):
 * in apply for GitTracks in a cluster, in fetch for documents in Git.
 */
export interface DiscoverJob {
  readonly type: 'discover';
  /**
   * The source's id (`cluster-prod`, `repository-<hash>`). Called `track`
   * because it plays a track's part for the queues: one lane (message
   * group) per source, and the name in log lines.
   */
  readonly track: string;
  /** Which step reads the source: `apply` for a cluster, `fetch` for a repository. */
  readonly runsIn: 'apply' | 'fetch';
  /** The schedule tick that queued it (ISO); see {@link DriftJob.tick}. */
  readonly tick?: string;
}

/**
 * Commit what the cluster changed in `syncTo: git` objects to the track's
 * branch. Queued by the drift check (apply, which has no Git credentials)
 * and run in fetch (which has no cluster credentials): the cleaned objects
 * travel in the job, never a secret — Secrets are refused before.
 */
export interface WriteBackJob {
  readonly type: 'writeBack';
  readonly track: string;
  /** The revision the drift check compared with. */
  readonly revision: string;
  readonly changes: readonly WriteBackChange[];
  /**
   * Changes the drift check refused to write back (a Secret in plain text, an object kustomize
   * or Helm renders), recorded in the write-back's history entry with those it refuses itself.
   */
  readonly refused?: readonly { readonly subject: string; readonly error: string }[];
  readonly trigger: 'schedule' | 'manual';
  /** The schedule tick of the drift check (ISO); see {@link DriftJob.tick}. */
  readonly tick?: string;
}

/**
 * Deliver events to receivers that need Git credentials (commit statuses).
 * Queued by apply for the events of its jobs — it holds no Git token — and
 * run in fetch, which holds them (notify/deliver.ts).
 */
export interface NotifyJob {
  readonly type: 'notify';
  readonly track: string;
  readonly events: readonly NotificationEvent[];
  /** The receivers (by name) to send them to. */
  readonly receivers: readonly string[];
}

export type Job =
  | FetchJob
  | SyncJob
  | DriftJob
  | RollbackJob
  | LifecycleJob
  | DiscoverJob
  | WriteBackJob
  | NotifyJob;

/** Jobs for the apply function: everything that touches the cluster. */
export type ApplyJob = SyncJob | DriftJob | RollbackJob | LifecycleJob | DiscoverJob;

/** Jobs for the fetch function: everything that reads or writes Git. */
export type FetchStepJob = FetchJob | DiscoverJob | WriteBackJob | NotifyJob;

/** Whether `job` goes to the fetch queue (else to the apply queue). */
export function runsInFetch(job: Job): boolean {
  return (
    job.type === 'fetch' ||
    job.type === 'writeBack' ||
    job.type === 'notify' ||
    (job.type === 'discover' && job.runsIn === 'fetch')
  );
}

/** Where jobs go: the fetch queue or the apply queue, by type. */
export interface JobQueue {
  enqueue(job: Job): Promise<void>;
}
