/**
 * Discovery of tracks defined outside the deployed config (`tracksFrom`):
 * what every source shares — the result, the publishing of a source's
 * tracks to the store — and the discovery of GitTrack documents kept in Git,
 * which runs in fetch (the only step with Git credentials): the YAML files
 * under the source's subPath at its reference become the published tracks.
 * A document removed from Git is never collected by itself: its track is
 * reported as removed, like a track taken out of the config, until someone
 * deletes it. GitTracks in a cluster are discover-git-tracks.ts (apply).
 *
 * Validation and the rules that keep a GitTrack inside its source are in
 * config/run-time-tracks.ts; the published lists are read by published-tracks.ts, which also
 * keeps a name with the first source that publishes it (leaveNamesOfOtherSources).
 */
import { readYamlDocuments } from '../config/read-yaml.ts';
import {
  runTimeTracks,
  type RunTimeDocument,
  type RunTimeProblem,
} from '../config/run-time-tracks.ts';
import type { Config, Track, TracksFrom, TracksFromRepository } from '../config/types.ts';
import { messageOf } from '../errors.ts';
import type { GitSource } from '../source/ports.ts';
import type { PublishedTrackStore, StateStore } from '../store/ports.ts';
import {
  configTracks,
  heldTracks,
  holdersFirst,
  leaveNamesOfOtherSources,
  type OfferedTrack,
  type PublishedTracks,
} from './published-tracks.ts';

/** What a discovery found and did. */
export interface DiscoverResult {
  readonly source: string;
  /** Names of the tracks published. */
  readonly tracks: readonly string[];
  /** Those of them the previous discovery had not published: new (or newly valid) tracks. */
  readonly added: readonly string[];
  readonly problems: readonly RunTimeProblem[];
  /** Tracks of deleted GitTracks whose objects were collected (or left, by policy). */
  readonly collected: readonly string[];
  /** Repository sources: the commit read; null for cluster sources. */
  readonly revision: string | null;
  /** GitTracks whose deletion or `.status` write failed; retried at the next discovery. */
  readonly errors: readonly string[];
}

/** What every discovery needs; each kind of source adds the port that reads it. */
export interface DiscoverDeps {
  readonly config: Pick<Config, 'tracks' | 'tracksFrom'>;
  readonly published: PublishedTrackStore;
  readonly state: StateStore;
  readonly now?: () => Date;
}

/** The names the config's own tracks hold: a run-time track may not take one. */
export function configNames(config: DiscoverDeps['config']): Set<string> {
  return new Set(configTracks(config.tracks).map((track) => track.name));
}

/**
 * Publishes the source's tracks in place of `previous` (what the last
 * discovery published); returns the names `previous` did not have.
 */
export async function publish(
  deps: DiscoverDeps,
  source: TracksFrom,
  previous: PublishedTracks | undefined,
  tracks: readonly Track[],
  problems: readonly RunTimeProblem[],
  more: Pick<PublishedTracks, 'revision' | 'collecting' | 'collectionRetries'> = {},
): Promise<string[]> {
  const known = new Set(previous?.tracks.map((track) => track.name));
  const { revision, collecting = [], collectionRetries = [] } = more;
  const held = heldTracks(previous, tracks, problems);
  const document: PublishedTracks = {
    source: source.id,
    publishedAt: (deps.now?.() ?? new Date()).toISOString(),
    ...(revision === undefined ? {} : { revision }),
    tracks,
    problems,
    ...(collecting.length === 0 ? {} : { collecting }),
    ...(collectionRetries.length === 0 ? {} : { collectionRetries }),
    ...(held.length === 0 ? {} : { held }),
  };
  await deps.published.publish(source.id, document);
  return tracks.map((track) => track.name).filter((name) => !known.has(name));
}

export async function discoverTrackDocuments(
  source: TracksFromRepository,
  deps: DiscoverDeps & { readonly source: GitSource },
): Promise<DiscoverResult> {
  const git = deps.source;
  // The source is fetched as a track of its own, under its id: same cache, credentials, checks.
  const asTrack = {
    name: source.id,
    repository: source.repository,
    reference: source.reference,
    ...(source.subPath === undefined ? {} : { subPath: source.subPath }),
    ...(source.auth === undefined ? {} : { auth: source.auth }),
  };
  const { revision } = await git.resolve(asTrack);
  const files = await git.readFiles(asTrack, revision, 'manifests');
  const documents: RunTimeDocument[] = [];
  const unreadable: RunTimeProblem[] = [];
  for (const file of files.filter((f) => /\.ya?ml$/i.test(f.path))) {
    const origin = { source: source.id, file: file.path };
    let values: unknown[];
    try {
      values = readYamlDocuments(Buffer.from(file.content).toString('utf8'), file.path);
    } catch (error) {
      unreadable.push({ where: file.path, origin, message: messageOf(error) });
      continue;
    }
    values.forEach((value, index) => {
      // Empty documents (a trailing `---`) are no GitTrack and no mistake.
      if (value === null) return;
      documents.push({ value, where: `${file.path} (document ${index + 1})`, origin });
    });
  }
  const previous = await deps.published.readPublished<PublishedTracks>(source.id);
  // One document at a time, so that each track comes with its document's `where`, which a
  // refusal below names; the names taken grow as in one call. The documents that gave tracks
  // come first: of two documents with one name, one added since (in a file listed earlier, or
  // in a file that gives another track) is refused, rather than taking a running track's name
  // and pruning its objects at its first sync.
  const taken = configNames(deps.config);
  const offered: OfferedTrack[] = [];
  const invalid: RunTimeProblem[] = [];
  for (const document of holdersFirst(documents, previous)) {
    const { tracks, problems } = runTimeTracks(source, [document], taken);
    invalid.push(...problems);
    for (const track of tracks) {
      taken.add(track.name);
      offered.push({ track, where: document.where });
    }
  }
  const { tracks, problems: refused } = await leaveNamesOfOtherSources(
    source.id,
    offered,
    previous,
    deps,
  );
  const allProblems = [...unreadable, ...invalid, ...refused];
  const added = await publish(deps, source, previous, tracks, allProblems, { revision });
  return {
    source: source.id,
    tracks: tracks.map((track) => track.name),
    added,
    problems: allProblems,
    collected: [],
    revision,
    errors: [],
  };
}
