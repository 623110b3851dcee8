/**
 * The rollback function's work: check the request, check the revision is
 * stored (a rollback never needs Git), and queue a rollback job for the
 * apply function, which applies the revision and pins the track.
 */
import type { Track } from '../config/types.ts';
import { UsageError } from '../errors.ts';
import type { ArtifactStore, StateStore } from '../store/ports.ts';
import type { JobQueue } from '../sync/jobs.ts';
import { resolveRollbackTarget, type RollbackTarget } from '../sync/rollback.ts';
import { trackNamed } from '../sync/track-named.ts';

/** `{"track": "web", "revision": "<sha or unique prefix>"}` or `{"track": "web", "previous": true}`. */
export interface RollbackRequest {
  readonly track: string;
  readonly target: RollbackTarget;
}

const USAGE =
  'expected {"track": "<name>", "revision": "<sha>"} or {"track": "<name>", "previous": true}';

/**
 * The request in a manual invoke's payload.
 *
 * @throws {UsageError} saying what is wrong and what is expected.
 */
export function parseRollbackRequest(event: unknown): RollbackRequest {
  if (typeof event !== 'object' || event === null || Array.isArray(event)) {
    throw new UsageError(`rollback request is not an object; ${USAGE}`);
  }
  const { track, revision, previous, ...rest } = event as Record<string, unknown>;
  const unknown = Object.keys(rest);
  if (unknown.length > 0) {
    throw new UsageError(`rollback request has unknown fields ${unknown.join(', ')}; ${USAGE}`);
  }
  if (typeof track !== 'string' || track === '') {
    throw new UsageError(`rollback request names no track; ${USAGE}`);
  }
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
): Promise<{ track: string; revision: string; queued: true }> {
  const track = trackNamed(deps.tracks, request.track);
  const revision = await resolveRollbackTarget(track, request.target, deps);
  await deps.queue.enqueue({ type: 'rollback', track: track.name, revision });
  return { track: track.name, revision, queued: true };
}
