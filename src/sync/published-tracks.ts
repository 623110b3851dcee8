/**
 * The tracks a process works with: those of the deployed config, then those
 * read at run time (`tracksFrom`) and published to the store by the step
 * that can read their source — the apply step for GitTracks in a cluster
 * (it alone holds cluster credentials), the fetch step for GitTrack
 * documents in Git (it alone holds Git credentials). Every other step reads
 * the published lists, so adding a track is a `kubectl apply` or a commit,
 * never a redeploy.
 */
import { describeValue } from '../config/describe-value.ts';
import type { RunTimeDocument, RunTimeProblem, RunTimeTracks } from '../config/run-time-tracks.ts';
import type { Config, Track, TrackOrigin } from '../config/types.ts';
import { isJsonObject } from '../render/json-value.ts';
import type { PublishedTrackStore } from '../store/ports.ts';

/** What a source's discovery publishes (`published/<source id>.json`). */
export interface PublishedTracks {
  /** The `tracksFrom` source's id. */
  readonly source: string;
  /** ISO time of the discovery. */
  readonly publishedAt: string;
  /** The commit the documents were read at (repository sources). */
  readonly revision?: string;
  readonly tracks: readonly Track[];
  /** Documents that gave no track, and why. */
  readonly problems: readonly RunTimeProblem[];
  /**
   * GitTracks in a cluster: the tracks of GitTracks being deleted whose objects are not
   * collected yet, as they were last published. Off `tracks`, so nothing syncs them, and kept
   * here from one discovery to the next until their collection succeeds: a collection that
   * failed or was cut short is tried again, never taken for a GitTrack that had no track.
   * Absent from documents of repository sources and from those published before it existed.
   */
  readonly collecting?: readonly Track[];
  /**
   * Of the tracks under `collecting`, those whose collection failed (an object's delete was
   * refused or failed): how often in a row, and from when a discovery tries again. Absent when
   * none failed.
   */
  readonly collectionRetries?: readonly CollectionRetry[];
  /**
   * Tracks this source published whose document it refuses now (a GitTrack made invalid, a file
   * that no longer parses): their names stay theirs until the document is gone (heldTracks).
   * Off `tracks`, so nothing syncs them. Absent when there are none.
   */
  readonly held?: readonly Track[];
}

/**
 * A collection that failed, put off so that one failing for good does not send its deletes to
 * the API server at every discovery (discover-git-tracks.ts).
 */
export interface CollectionRetry {
  /** The track's name (unique under `collecting`). */
  readonly track: string;
  /** Failed collections in a row. */
  readonly failures: number;
  /** ISO time from which a discovery tries the collection again. */
  readonly notBefore: string;
}

/** The track of a deleted GitTrack whose objects are being collected, as `status` shows it. */
export interface CollectingTrack {
  readonly name: string;
  /** The `tracksFrom` source's id. */
  readonly source: string;
  /** The deleted GitTrack, `<namespace>/<name>`. */
  readonly gitTrack: string;
  /** Set once a collection failed. */
  readonly retry?: CollectionRetry;
}

/**
 * The config's tracks, then each source's published tracks in `tracksFrom`
 * order. A published track whose name is already taken (by the config, or
 * by an earlier source since it was published) is left out; so is one on
 * another cluster than its source's, should the config have changed since.
 * A name a source keeps under `collecting` stays taken at that source's
 * place until the collection succeeds: a later source's track of that name
 * would sync in the state of the track being collected, and prune its
 * objects whatever the deleted GitTrack's deletion policy says. Two lists hold one name only when
 * published before a cluster source refused a name another source holds (discover-git-tracks.ts),
 * by discoveries at the same time, or by a repository source: this order decides between them.
 */
export async function knownTracks(
  config: Pick<Config, 'tracks' | 'tracksFrom'>,
  published: PublishedTrackStore | undefined,
): Promise<Track[]> {
  if (config.tracksFrom.length === 0 || published === undefined) return config.tracks;
  const lists = await Promise.all(
    config.tracksFrom.map((source) => published.readPublished<PublishedTracks>(source.id)),
  );
  // `config.tracks` may already hold published tracks (a context merged earlier): read them afresh.
  const tracks = configTracks(config.tracks);
  const names = new Set(tracks.map((track) => track.name));
  config.tracksFrom.forEach((source, index) => {
    for (const track of lists[index]?.tracks ?? []) {
      if (names.has(track.name) || track.cluster !== source.cluster) continue;
      names.add(track.name);
      tracks.push(track);
    }
    for (const track of lists[index]?.collecting ?? []) names.add(track.name);
    for (const track of lists[index]?.held ?? []) names.add(track.name);
  });
  return tracks;
}

/**
 * The names that belong to tracks ahead of the source `id`: the config's, those the sources
 * before it in `tracksFrom` published, as {@link knownTracks} gives them out, and those they keep
 * under `held` (a document refused for now) or `collecting` (a GitTrack deleted), which
 * knownTracks reserves for them. Such a track syncs, or will again, or is collected, under its
 * name, in that name's state: a track of this source with that name (one that was never known,
 * one whose name the config took meanwhile, or one published beside an earlier source's) is not
 * this source's to collect. A later source's track of the name is not counted: it waits,
 * unknown, while this source's track is collected (knownTracks keeps the name), so the state is
 * still this one's.
 */
export async function namesHeldOutside(
  config: Pick<Config, 'tracks' | 'tracksFrom'>,
  published: PublishedTrackStore,
  id: string,
): Promise<Set<string>> {
  const position = config.tracksFrom.findIndex((source) => source.id === id);
  const ahead = {
    tracks: configTracks(config.tracks),
    tracksFrom: position < 0 ? config.tracksFrom : config.tracksFrom.slice(0, position),
  };
  const names = new Set((await knownTracks(ahead, published)).map((track) => track.name));
  const lists = await Promise.all(
    ahead.tracksFrom.map((source) => published.readPublished<PublishedTracks>(source.id)),
  );
  for (const list of lists) {
    for (const track of [...(list?.held ?? []), ...(list?.collecting ?? [])]) {
      names.add(track.name);
    }
  }
  return names;
}

/** A track of another source that has a name, as that source last published it. */
export interface NameHolder {
  /** The `tracksFrom` source's id. */
  readonly source: string;
  readonly track: Track;
  /** Under the source's `collecting`: its GitTrack was deleted, its objects are being collected. */
  readonly collecting: boolean;
}

/**
 * The names the sources of the config other than `id` publish, live or under `collecting`, each
 * with its first holder in `tracksFrom` order. Whether or not knownTracks gives the name to that
 * holder now, its state may be that name's: a track of source `id` taking the name could sync in
 * it, and prune the objects it lists. Reads nothing when `id` is the config's only source.
 */
export async function namesOfOtherSources(
  config: Pick<Config, 'tracksFrom'>,
  published: PublishedTrackStore,
  id: string,
): Promise<Map<string, NameHolder>> {
  const others = config.tracksFrom.filter((source) => source.id !== id);
  const holders = new Map<string, NameHolder>();
  if (others.length === 0) return holders;
  const lists = await Promise.all(
    others.map((source) => published.readPublished<PublishedTracks>(source.id)),
  );
  others.forEach((source, index) => {
    const list = lists[index];
    const held = [
      ...(list?.tracks ?? []).map((track) => ({ track, collecting: false })),
      ...(list?.held ?? []).map((track) => ({ track, collecting: false })),
      ...(list?.collecting ?? []).map((track) => ({ track, collecting: true })),
    ];
    for (const { track, collecting } of held) {
      if (!holders.has(track.name)) {
        holders.set(track.name, { source: source.id, track, collecting });
      }
    }
  });
  return holders;
}

/** A track a source's discovery offers, and where its document is, for a refusal's message. */
export interface OfferedTrack {
  readonly track: Track;
  /** `GitTrack apps/web`, `tracks/web.yaml (document 2)`. */
  readonly where: string;
}

/**
 * The first holder of a name keeps it across sources: a track of source `id` whose name another
 * source publishes, live or being collected, is refused as the second of two documents with one
 * name is, the message naming the holder, whatever the sources' order and kind (GitTracks in a
 * cluster, documents in a repository). Published, it would be given the name by knownTracks when
 * its source comes first in `tracksFrom`, or whenever the holder's list drops it, and sync in the
 * holder's state: its first sync would prune the objects that state lists, another app's (and the
 * holder would stop without a word).
 * A name source `id` already published or holds is kept even so, whichever of its documents now
 * gives it (two sources publishing one name, from before this rule or from discoveries at the
 * same time): it may be the one that syncs, and a running track is not dropped; knownTracks'
 * order decides between the two. `previous`: what source `id` last published. The other sources'
 * lists are read only when a track is new to it. Returns the tracks kept and the refusals.
 */
export async function leaveNamesOfOtherSources(
  id: string,
  offered: readonly OfferedTrack[],
  previous: PublishedTracks | undefined,
  deps: { readonly config: Pick<Config, 'tracksFrom'>; readonly published: PublishedTrackStore },
): Promise<RunTimeTracks> {
  // Within a source one document has a name (runTimeTracks): a name this source published (or
  // holds) stays its own, whichever of its documents now gives it (a file renamed, say).
  const isNew = (track: Track): boolean =>
    !namedTracks(previous).some((old) => old.name === track.name);
  const result: RunTimeTracks = { tracks: [], problems: [] };
  if (!offered.some(({ track }) => isNew(track))) {
    result.tracks.push(...offered.map(({ track }) => track));
    return result;
  }
  const holders = await namesOfOtherSources(deps.config, deps.published, id);
  for (const { track, where } of offered) {
    const holder = isNew(track) ? holders.get(track.name) : undefined;
    if (holder === undefined) {
      result.tracks.push(track);
      continue;
    }
    result.problems.push({
      where,
      origin: track.origin ?? { source: id },
      message: `metadata.name: track ${describeValue(track.name)} already exists (${holderOf(holder)})`,
    });
  }
  return result;
}

/** The tracks a source's list gives a name to: those it published and those it holds. */
function namedTracks(list: PublishedTracks | undefined): Track[] {
  return [...(list?.tracks ?? []), ...(list?.held ?? [])];
}

/**
 * `documents` of one source with those that gave a track of the name they offer now (published
 * or held: the same GitTrack, or the same name from the same file) first, then the others, each
 * in their order. Of two documents offering one name the second is refused (runTimeTracks): the
 * one that had the name keeps it, whatever the order of namespaces or files — a document added
 * since would otherwise take a running track's name, and its first sync would prune that track's
 * objects. A document moved elsewhere still gets its name when no other document offers it.
 */
export function holdersFirst(
  documents: readonly RunTimeDocument[],
  previous: PublishedTracks | undefined,
): RunTimeDocument[] {
  const byName = new Map<string, Track[]>();
  for (const track of namedTracks(previous)) {
    byName.set(track.name, [...(byName.get(track.name) ?? []), track]);
  }
  const holds = (document: RunTimeDocument): boolean => {
    // Read as written, before validation: only a string can match (a YAML alias can make the
    // name any value, even a circular one).
    const { value } = document;
    const metadata = isJsonObject(value) ? value['metadata'] : undefined;
    const name = isJsonObject(metadata) ? metadata['name'] : undefined;
    if (typeof name !== 'string') return false;
    return byName.get(name)?.some((track) => sameDocument(track.origin, document.origin)) ?? false;
  };
  return [...documents.filter(holds), ...documents.filter((document) => !holds(document))];
}

/**
 * Whether a refusal and a track of one source come from the same document: the same GitTrack
 * (namespace and name) for a cluster source, the same file for a repository source.
 */
function sameDocument(a: TrackOrigin | undefined, b: TrackOrigin | undefined): boolean {
  if (a?.gitTrack !== undefined || b?.gitTrack !== undefined) {
    return (
      a?.gitTrack?.namespace === b?.gitTrack?.namespace && a?.gitTrack?.name === b?.gitTrack?.name
    );
  }
  return a?.file !== undefined && a.file === b?.file;
}

/**
 * The tracks of `previous` (published or held) whose document this discovery refuses
 * (`problems`: invalid, unreadable) and publishes no track of the name again: the source keeps
 * their names (PublishedTracks.held), so a passing mistake in a document does not hand a name —
 * and the state and objects that go with it — to another source's track. A document gone (a
 * GitTrack deleted, a file removed) frees the name; one published again takes it back.
 */
export function heldTracks(
  previous: PublishedTracks | undefined,
  tracks: readonly Track[],
  problems: readonly RunTimeProblem[],
): Track[] {
  const published = new Set(tracks.map((track) => track.name));
  const held = new Map<string, Track>();
  for (const track of namedTracks(previous)) {
    if (published.has(track.name) || held.has(track.name)) continue;
    if (problems.some((problem) => sameDocument(problem.origin, track.origin))) {
      held.set(track.name, track);
    }
  }
  return [...held.values()];
}

/** `tracksFrom source "cluster-prod", GitTrack apps/web`: where a name's holder comes from. */
function holderOf(holder: NameHolder): string {
  const document = documentOf(holder.track.origin);
  return [
    `tracksFrom source ${describeValue(holder.source)}`,
    ...(document === undefined ? [] : [document]),
    ...(holder.collecting ? ['its objects being collected'] : []),
  ].join(', ');
}

/** `GitTrack apps/web` (cluster sources) or the file (repository sources) a track was read from. */
export function documentOf(origin: TrackOrigin | undefined): string | undefined {
  const { gitTrack, file } = origin ?? {};
  return gitTrack ? gitTrackWhere(gitTrack) : file;
}

/** `GitTrack apps/web`: a GitTrack in messages. */
export function gitTrackWhere(ref: { readonly namespace: string; readonly name: string }): string {
  return `GitTrack ${ref.namespace}/${ref.name}`;
}

/**
 * A track a source keeps off its list while the document that gave it is refused
 * (PublishedTracks.held), as `status` shows it: not removed — its name, state and objects stay
 * until the document is mended (it syncs again) or gone (its name is free).
 */
export interface HeldTrack {
  readonly name: string;
  /** The `tracksFrom` source's id. */
  readonly source: string;
  /** `GitTrack apps/web`, or the file that gave it. */
  readonly document: string | undefined;
  /** Why the discovery refuses the document now. */
  readonly problem: string | undefined;
}

/** The tracks the config's sources keep off their lists, a name once. */
export interface KeptTracks {
  /** Of deleted GitTracks: their objects are being collected. */
  readonly collecting: CollectingTrack[];
  /** Of documents refused for now. */
  readonly held: HeldTrack[];
}

/**
 * What every source of the config keeps under `collecting` and `held`, in `tracksFrom` order, a
 * name once (the first source's). Not synced, they still have state and objects.
 */
export async function keptTracks(
  config: Pick<Config, 'tracksFrom'>,
  published: PublishedTrackStore | undefined,
): Promise<KeptTracks> {
  if (published === undefined) return { collecting: [], held: [] };
  const lists = await Promise.all(
    config.tracksFrom.map((source) => published.readPublished<PublishedTracks>(source.id)),
  );
  const names = new Set<string>();
  const collecting: CollectingTrack[] = [];
  const held: HeldTrack[] = [];
  config.tracksFrom.forEach((source, index) => {
    const list = lists[index];
    for (const track of list?.collecting ?? []) {
      const gitTrack = track.origin?.gitTrack;
      if (gitTrack === undefined || names.has(track.name)) continue;
      names.add(track.name);
      const retry = list?.collectionRetries?.find((r) => r.track === track.name);
      collecting.push({
        name: track.name,
        source: source.id,
        gitTrack: `${gitTrack.namespace}/${gitTrack.name}`,
        ...(retry === undefined ? {} : { retry }),
      });
    }
    for (const track of list?.held ?? []) {
      if (names.has(track.name)) continue;
      names.add(track.name);
      const problem = list?.problems.find((p) => sameDocument(p.origin, track.origin));
      held.push({
        name: track.name,
        source: source.id,
        document: documentOf(track.origin),
        problem: problem?.message,
      });
    }
  });
  return { collecting, held };
}

/** The source `id` names, or undefined when the config has no such `tracksFrom` entry. */
export function tracksFromNamed(
  config: Pick<Config, 'tracksFrom'>,
  id: string,
): Config['tracksFrom'][number] | undefined {
  return config.tracksFrom.find((source) => source.id === id);
}

/** The tracks written in the config itself: those with no `tracksFrom` origin. */
export function configTracks(tracks: readonly Track[]): Track[] {
  return tracks.filter((track) => track.origin === undefined);
}
