/**
 * A person's request for a track — a rollback, a sync, or a lifecycle action
 * — as the rollback function's manual invoke and the dashboard's actions ask
 * it: check the request, check a rollback's revision is stored (a rollback
 * never needs Git), and queue the job; the apply function (or fetch, for a
 * sync) does the work. Who asked travels in the job into history (`by`).
 */
import type { Track } from '../config/types.ts';
import { DELETION_POLICIES, isDeletionPolicy } from '../config/deletion-policy.ts';
import { UsageError } from '../errors.ts';
import type { ArtifactStore, StateStore } from '../store/ports.ts';
import type { Job, JobQueue, LifecycleJob } from './jobs.ts';
import { resolveRollbackTarget, type RollbackTarget } from './rollback.ts';
import { trackNamed } from './track-named.ts';

/**
 * `{"track": "web", "revision": "<sha or unique prefix>"}` or `{"track": "web", "previous": true}`:
 * a rollback; `{"track": "web", "action": "suspend|resume|sync|unpin|delete"}` (delete may add
 * `"policy": "Delete|Orphan|MirrorPrune"`): the same operations as the CLI's, in AWS.
 */
export type RollbackRequest =
  | { readonly track: string; readonly target: RollbackTarget }
  | { readonly track: string; readonly action: 'sync' }
  | {
      readonly track: string;
      readonly action: LifecycleJob['action'];
      readonly policy?: NonNullable<LifecycleJob['policy']>;
    };

/**
 * What a manual invoke's payload may be, closing each of parseRollbackRequest's messages. The
 * dashboard, whose routes take other bodies (no track, no action), says its own instead
 * (dashboard-routes.ts).
 */
export const USAGE =
  'expected {"track": "<name>", "revision": "<sha>"}, {"track": "<name>", "previous": true} or {"track": "<name>", "action": "suspend|resume|sync|unpin|delete"}';

const ACTIONS = ['suspend', 'resume', 'sync', 'unpin', 'delete'] as const;

/**
 * The request in a manual invoke's payload.
 *
 * @throws {UsageError} saying what is wrong and what is expected.
 */
export function parseRollbackRequest(event: unknown): RollbackRequest {
  if (typeof event !== 'object' || event === null || Array.isArray(event)) {
    throw new UsageError(`rollback request is not an object; ${USAGE}`);
  }
  const { track, revision, previous, action, policy, ...rest } = event as Record<string, unknown>;
  const unknown = Object.keys(rest);
  if (unknown.length > 0) {
    throw new UsageError(`rollback request has unknown fields ${unknown.join(', ')}; ${USAGE}`);
  }
  if (typeof track !== 'string' || track === '') {
    throw new UsageError(`rollback request names no track; ${USAGE}`);
  }
  if (action !== undefined) {
    if (revision !== undefined || previous !== undefined) {
      throw new UsageError(`an action request takes no revision or previous; ${USAGE}`);
    }
    if (!ACTIONS.includes(action as (typeof ACTIONS)[number])) {
      throw new UsageError(
        `action ${JSON.stringify(action)} is not one of ${ACTIONS.join(', ')}; ${USAGE}`,
      );
    }
    if (policy !== undefined) {
      if (action !== 'delete') throw new UsageError(`policy is for the delete action only`);
      if (!isDeletionPolicy(policy)) {
        throw new UsageError(
          `policy ${JSON.stringify(policy)} is not one of ${DELETION_POLICIES.join(', ')}`,
        );
      }
      return { track, action: 'delete', policy };
    }
    return { track, action: action as (typeof ACTIONS)[number] };
  }
  if (policy !== undefined) throw new UsageError(`policy is for the delete action only`);
  const hasRevision = revision !== undefined;
  const hasPrevious = previous !== undefined;
  if (hasRevision === hasPrevious) {
    throw new UsageError(`rollback request needs exactly one of revision and previous; ${USAGE}`);
  }
  if (hasRevision) {
    if (typeof revision !== 'string' || !/^[0-9a-f]{4,64}(?:\+[0-9a-f]{1,12})?$/i.test(revision)) {
      throw new UsageError(
        `rollback revision must be a commit sha (at least 4 hex digits); ${USAGE}`,
      );
    }
    return { track, target: { revision } };
  }
  if (previous !== true) throw new UsageError(`rollback previous must be true; ${USAGE}`);
  return { track, target: { previous: true } };
}

export interface RequestRollbackDeps {
  readonly tracks: readonly Track[];
  readonly artifacts: ArtifactStore;
  readonly state: StateStore;
  readonly queue: JobQueue;
}

/**
 * Resolves the target to a stored revision and queues the rollback job.
 *
 * @throws {UnknownTrackError} for a track not configured.
 * @throws {RollbackTargetError} when the revision is not stored (listing those that are).
 */
export async function requestRollback(
  request: RollbackRequest,
  deps: RequestRollbackDeps,
  by?: string,
): Promise<RollbackAnswer> {
  const track = trackNamed(deps.tracks, request.track);
  const who = by === undefined ? {} : { by };
  if ('action' in request) {
    // The apply function does the work: it alone writes state and reaches the cluster.
    const job: Job =
      request.action === 'sync'
        ? { type: 'fetch', track: track.name, trigger: 'manual', ...who }
        : {
            type: 'lifecycle',
            track: track.name,
            action: request.action,
            ...('policy' in request && request.policy ? { policy: request.policy } : {}),
            ...who,
          };
    await deps.queue.enqueue(job);
    return { track: track.name, action: request.action, queued: true };
  }
  const revision = await resolveRollbackTarget(track, request.target, deps);
  await deps.queue.enqueue({ type: 'rollback', track: track.name, revision, ...who });
  return { track: track.name, revision, queued: true };
}

/** What the rollback function answers: the job it queued. */
export type RollbackAnswer =
  | { readonly track: string; readonly revision: string; readonly queued: true }
  | { readonly track: string; readonly action: string; readonly queued: true };
