/** Picks the tracks a command works on: one by name, or all in dependency order. */
import { closestName } from '../config/closest-name.ts';
import type { Config, Track } from '../config/types.ts';
import { UsageError } from '../errors.ts';
import type { StateStore } from '../store/ports.ts';
import { readTrackState } from '../sync/track-state.ts';

/** The track called `name`; a UsageError naming the config's tracks (and the likely typo) otherwise. */
export function findTrack(config: Config, name: string, configFile: string): Track {
  const track = config.tracks.find((t) => t.name === name);
  if (track) return track;
  const names = config.tracks.map((t) => t.name);
  const guess = closestName(name, names);
  const hint = guess
    ? `; did you mean "${guess}"?`
    : names.length > 0
      ? ` (tracks: ${names.join(', ')})`
      : ' (it defines no tracks)';
  throw new UsageError(`--track: ${configFile} has no track "${name}"${hint}`);
}

/**
 * The tracks with every track after the tracks it depends on, otherwise in
 * file order. The config module refuses cycles and unknown names; should one
 * slip through, the track still comes out once rather than looping.
 */
export function inDependencyOrder(tracks: readonly Track[]): Track[] {
  const byName = new Map(tracks.map((t) => [t.name, t]));
  const ordered: Track[] = [];
  const visited = new Set<string>();
  const visit = (track: Track): void => {
    if (visited.has(track.name)) return;
    visited.add(track.name);
    for (const dependency of track.dependsOn) {
      const next = byName.get(dependency);
      if (next) visit(next);
    }
    ordered.push(track);
  };
  for (const track of tracks) visit(track);
  return ordered;
}

/**
 * Why the track is suspended, in words that say how to undo it, or
 * undefined when it is not: `suspend: true` in the config, or a stored
 * `driftless suspend`.
 */
export async function suspensionOf(
  track: Track,
  state: StateStore,
  configFile: string,
): Promise<string | undefined> {
  if (track.suspend) return `suspend: true in ${configFile}`;
  const stored = await readTrackState(state, track.name);
  return stored.suspended === true ? `by "driftless suspend"; run "driftless resume"` : undefined;
}
