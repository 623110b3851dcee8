/** Picks the tracks a command works on: one by name, or all in dependency order. */
import { closestName } from '../config/closest-name.ts';
import type { Config, Track } from '../config/types.ts';
import { UsageError } from '../errors.ts';
import { assertTrackName } from '../store/keys.ts';
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
 * A track named for a command that only reads the store (`status`, `history`): configured,
 * or one the config no longer names that the store still has state or history for.
 */
export type ReadTrack =
  | { readonly name: string; readonly configured: Track }
  | {
      readonly name: string;
      readonly configured: undefined;
      /** Whether its state is still stored (removed from the config before a delete). */
      readonly hasState: boolean;
    };

/**
 * The track called `name` for a read-only command. The docs keep a deleted track's history
 * for audit, and removing the track from the config afterwards must not hide it. Commands
 * that change a track keep {@link findTrack}: one the config dropped is not theirs to run.
 *
 * @throws {UsageError} as findTrack's (with its did-you-mean) when the store has nothing either.
 */
export async function findReadTrack(
  config: Config,
  name: string,
  configFile: string,
  state: StateStore,
): Promise<ReadTrack> {
  const configured = config.tracks.find((t) => t.name === name);
  if (configured !== undefined) return { name, configured };
  if (storable(name)) {
    const hasState = (await state.read(name)) !== undefined;
    if (hasState || (await state.listHistory(name, 1)).length > 0) {
      return { name, configured: undefined, hasState };
    }
  }
  return { name, configured: findTrack(config, name, configFile) };
}

/** Whether the store can hold `name` at all: one it refuses is a typo to point out, not a store error. */
function storable(name: string): boolean {
  try {
    assertTrackName(name);
    return true;
  } catch {
    return false;
  }
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
