/**
 * Rollback: apply a stored revision — no Git access needed, the Git host may
 * be down — prune to it, and pin the track there until `unpin`.
 */
import type { Track } from '../config/types.ts';
import { DriftlessError } from '../errors.ts';
import type { ArtifactStore, StateStore } from '../store/ports.ts';
import { applyStoredRevision, type ApplyDeps, type SyncResult } from './apply-revision.ts';
import type { RollbackJob } from './jobs.ts';
import { isSyncEntry } from './record-sync.ts';
import { commitOf, shortRevision } from '../object-id.ts';
import { readTrackState, setCondition, updateTrackState, type TrackState } from './track-state.ts';

/** The revision asked for is not stored, or there is no previous one. */
export class RollbackTargetError extends DriftlessError {
  readonly code = 'ROLLBACK_TARGET';
}

export type RollbackTarget = { readonly revision: string } | { readonly previous: true };

const SHOWN = 10;

/**
 * Whether stored `revision` is what `wanted` names: a prefix of its commit, and when `wanted`
 * has a `+digest` (as the listings show it), a prefix of its render's digest too.
 */
function names(wanted: string, revision: string): boolean {
  const commit = commitOf(revision);
  const plus = wanted.indexOf('+');
  if (plus === -1) return commit.startsWith(wanted);
  const digest = revision.slice(commit.length + 1);
  return (
    digest !== '' &&
    commit.startsWith(wanted.slice(0, plus)) &&
    digest.startsWith(wanted.slice(plus + 1))
  );
}

/**
 * The revision id to roll back to: a stored revision named in full (with its `+digest`, if it
 * has one) or by a unique prefix (`<sha prefix>+<digest prefix>` for a render of a commit stored
 * more than once), or the newest successfully applied revision before the current one. Errors
 * list what is stored.
 */
export async function resolveRollbackTarget(
  track: Pick<Track, 'name'>,
  target: RollbackTarget,
  deps: { readonly artifacts: ArtifactStore; readonly state: StateStore },
): Promise<string> {
  const stored = await deps.artifacts.list(track.name);
  const available = (): string =>
    stored.length === 0
      ? 'no revision is stored for this track yet'
      : `stored revisions (newest first): ${stored
          .slice(0, SHOWN)
          .map((a) => shortRevision(a.revision))
          .join(', ')}${stored.length > SHOWN ? `, and ${stored.length - SHOWN} more` : ''}`;
  if ('revision' in target) {
    const wanted = target.revision.toLowerCase();
    // A full id wins over the longer ids it is a prefix of: a commit stored as first rendered
    // and again after the track's render spec changed (`<sha>` and `<sha>+<digest>`).
    const exact = stored.find((a) => a.revision === wanted);
    if (exact) return exact.revision;
    const matches = stored.filter((a) => names(wanted, a.revision));
    if (matches.length === 1) return matches[0]!.revision;
    const commits = new Set(matches.map((a) => commitOf(a.revision)));
    // Renders of one commit, named without a digest: the one stored without a digest, as
    // listings show it (`3f2a9c1e0b7d` beside `3f2a9c1e0b7d+0b7e41d2a9f3`).
    const plain = matches.filter((a) => !a.revision.includes('+'));
    if (commits.size === 1 && !wanted.includes('+') && plain.length === 1) {
      return plain[0]!.revision;
    }
    if (commits.size === 1) {
      // More digits of the sha cannot tell renders of one commit apart; their digests can.
      throw new RollbackTargetError(
        `track "${track.name}": revision ${target.revision} names ${matches.length} stored renders of one commit ` +
          `(a chart, or a track whose render spec changed); give one as <sha>+<digest>: ` +
          matches.map((a) => shortRevision(a.revision)).join(', '),
      );
    }
    const why =
      matches.length === 0
        ? 'is not stored'
        : 'matches several stored revisions; give more of the sha';
    throw new RollbackTargetError(
      `track "${track.name}": revision ${target.revision} ${why}; ${available()}`,
    );
  }
  const state = await readTrackState(deps.state, track.name);
  const current = state.pinned ?? state.appliedRevision;
  const storedSet = new Set(stored.map((a) => a.revision));
  // Revisions Git brought (rollbacks excluded), newest first, each once: repeating
  // --previous steps further back instead of swinging between two revisions.
  const sequence: string[] = [];
  for (const entry of await deps.state.listHistory(track.name)) {
    // A write-back's `unchanged` names the revision it compared with, at the time it ended.
    const good = isSyncEntry(entry) && entry.result !== 'failed';
    if (
      good &&
      entry.trigger !== 'rollback' &&
      storedSet.has(entry.revision) &&
      !sequence.includes(entry.revision)
    ) {
      sequence.push(entry.revision);
    }
  }
  const at = current ? sequence.indexOf(current) : -1;
  const previous = at >= 0 ? sequence[at + 1] : sequence.find((revision) => revision !== current);
  if (!previous) {
    throw new RollbackTargetError(
      `track "${track.name}": there is no earlier applied revision to go back to; ${available()}`,
    );
  }
  return previous;
}

/**
 * The rollback job: applies the stored revision (pruning to it) and pins the
 * track. A rollback that fails while applying pins all the same: automation
 * must not fight the person who is handling the incident.
 */
export function rollbackTrack(
  track: Track,
  job: RollbackJob,
  deps: ApplyDeps,
): Promise<SyncResult> {
  const options = {
    trigger: 'rollback',
    pin: true,
    ...(job.by === undefined ? {} : { by: job.by }),
  } as const;
  return applyStoredRevision(track, job.revision, options, deps);
}

/** Removes the pin: webhooks and schedules apply the newest revision again. */
export async function unpinTrack(
  track: Pick<Track, 'name'>,
  state: StateStore,
  now = new Date(),
): Promise<TrackState> {
  return updateTrackState(state, track.name, (s) => {
    const was = s.pinned;
    s.pinned = null;
    if (was)
      setCondition(
        s,
        'Ready',
        'Unknown',
        'Unpinned',
        `unpinned from ${was}; the next sync applies the newest revision`,
        now,
      );
  });
}
