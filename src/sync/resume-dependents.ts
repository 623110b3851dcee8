/**
 * Tracks that were refused because a dependency was not Ready get their
 * sync job again as soon as that dependency becomes Ready, instead of
 * waiting for their next poll (up to `interval` later). Flux re-checks such
 * Kustomizations every 30 s; here the dependency's own success is the
 * signal, so the wait is one queue hop.
 */
import type { Track } from '../config/types.ts';
import type { StateStore } from '../store/ports.ts';
import type { SyncResult } from './apply-revision.ts';
import type { SyncJob } from './jobs.ts';
import { conditionOf, DEPENDENCY_NOT_READY, readTrackState } from './track-state.ts';

/**
 * Sync jobs for the tracks that depend on `result`'s track and wait for it:
 * refused for an unready dependency, not pinned, with a desired revision not
 * yet applied. None unless `result` left its track Ready.
 */
export async function dependentsToResume(
  result: SyncResult,
  tracks: readonly Track[],
  state: StateStore,
  trigger: SyncJob['trigger'],
): Promise<SyncJob[]> {
  if (conditionOf(result.state, 'Ready')?.status !== 'True') return [];
  const dependents = tracks.filter((track) => track.dependsOn.includes(result.track));
  const jobs = await Promise.all(
    dependents.map(async (dependent): Promise<SyncJob | undefined> => {
      const waiting = await readTrackState(state, dependent.name);
      const revision = waiting.desiredRevision;
      const resolvedAt = waiting.desiredResolvedAt;
      if (
        revision === null ||
        resolvedAt === null ||
        waiting.pinned !== null ||
        waiting.appliedRevision === revision ||
        conditionOf(waiting, 'Ready')?.reason !== DEPENDENCY_NOT_READY
      ) {
        return undefined;
      }
      return { type: 'sync', track: dependent.name, revision, resolvedAt, trigger };
    }),
  );
  return jobs.filter((job): job is SyncJob => job !== undefined);
}
