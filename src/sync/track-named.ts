import type { Cluster, Track } from '../config/types.ts';
import { DriftlessError } from '../errors.ts';

/** A job or request names a track the bundled driftless.yaml does not have. */
export class UnknownTrackError extends DriftlessError {
  readonly code = 'UNKNOWN_TRACK';
}

/**
 * The configured track called `name`.
 *
 * @throws {UnknownTrackError} listing the configured tracks (a job queued
 *   before a deployment that removed its track ends up here).
 */
export function trackNamed(tracks: readonly Track[], name: string): Track {
  const track = tracks.find((candidate) => candidate.name === name);
  if (track !== undefined) return track;
  const known = tracks.map((t) => t.name).join(', ') || 'none';
  throw new UnknownTrackError(`track "${name}" is not configured (tracks: ${known})`);
}

/**
 * The configured cluster `track` deploys to.
 *
 * @throws {UnknownTrackError} when it is not configured (the config module checks every
 *   track's cluster exists, so only a job queued before a config change gets here).
 */
export function clusterOf(
  clusters: readonly Cluster[],
  track: Pick<Track, 'name' | 'cluster'>,
): Cluster {
  const cluster = clusters.find((candidate) => candidate.name === track.cluster);
  if (cluster !== undefined) return cluster;
  throw new UnknownTrackError(
    `track "${track.name}": cluster "${track.cluster}" is not configured`,
  );
}
