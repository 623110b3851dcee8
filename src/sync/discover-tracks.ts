/**
 * Discovery of tracks defined outside the deployed config (`tracksFrom`),
 * the job the schedule queues for each source on every tick:
 *
 * - **GitTracks in a cluster** (runs in apply, the only step with cluster
 *   credentials): lists the Faros GitTracks, holds the `driftless.dev/gc`
 *   finalizer on each, publishes the valid ones as tracks, collects the
 *   objects of a deleted GitTrack by its deletion policy before releasing
 *   it (as Faros does), and writes each GitTrack's `.status`.
 * - **GitTrack documents in Git** (runs in fetch, the only step with Git
 *   credentials): reads the YAML files under the source's subPath at its
 *   reference and publishes their tracks. A document removed from Git is
 *   never collected by itself: its track is reported as removed, like a
 *   track taken out of the config, until someone deletes it.
 *
 * Validation and the rules that keep a GitTrack inside its source are in
 * config/run-time-tracks.ts; the published list is read by published-tracks.ts.
 */
import type { KubernetesPort } from '../cluster/kubernetes-port.ts';
import { KubernetesApiError } from '../cluster/errors.ts';
import type { KubeObject } from '../cluster/kube-object.ts';
import { DELETION_POLICIES, type DeletionPolicy } from '../config/deletion-policy.ts';
import { DELETION_POLICY_ANNOTATION, GIT_TRACK_API_VERSION } from '../config/git-track.ts';
import { readYamlDocuments } from '../config/read-yaml.ts';
import {
  runTimeTracks,
  type RunTimeDocument,
  type RunTimeProblem,
} from '../config/run-time-tracks.ts';
import type {
  Config,
  GitTracksFromCluster,
  Track,
  TracksFrom,
  TracksFromRepository,
} from '../config/types.ts';
import { DriftlessError, messageOf } from '../errors.ts';
import type { GitSource } from '../source/ports.ts';
import type { PublishedTrackStore, StateStore } from '../store/ports.ts';
import type { DiscoverJob } from './jobs.ts';
import { deleteTrack } from './lifecycle.ts';
import { configTracks, type PublishedTracks } from './published-tracks.ts';
import { readTrackState, type TrackState } from './track-state.ts';

/** A deleted GitTrack's objects could not be collected; its finalizer stays until they are. */
export class GitTrackDeletionError extends DriftlessError {
  readonly code = 'GITTRACK_DELETION';
}

/** This process cannot read the source: a cluster source where there are no cluster credentials, or the like. */
export class SourceNotReadableError extends DriftlessError {
  readonly code = 'TRACKS_FROM_NOT_READABLE';
}

/** The finalizer Driftless holds on every GitTrack it manages (DESIGN.md). */
export const GC_FINALIZER = 'driftless.dev/gc';

/** Field manager of the finalizer and of `.status`: never the one that applies manifests. */
export const GIT_TRACK_MANAGER = 'driftless-gittracks';

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

export interface DiscoverDeps {
  readonly config: Pick<Config, 'tracks' | 'tracksFrom'>;
  readonly published: PublishedTrackStore;
  readonly state: StateStore;
  /** Cluster sources: the source's cluster. */
  readonly cluster?: KubernetesPort;
  /** Repository sources: the Git source. */
  readonly source?: GitSource;
  readonly now?: () => Date;
}

/** A source the job names is not in the config (a job queued before a config change). */
function sourceOf(config: DiscoverDeps['config'], job: DiscoverJob): TracksFrom | undefined {
  return config.tracksFrom.find((source) => source.id === job.track);
}

/** Runs one discovery; see the module comment. Throws when the source cannot be read at all. */
export async function discoverTracks(
  job: DiscoverJob,
  deps: DiscoverDeps,
): Promise<DiscoverResult> {
  const source = sourceOf(deps.config, job);
  if (source === undefined) {
    return {
      source: job.track,
      tracks: [],
      added: [],
      problems: [],
      collected: [],
      revision: null,
      errors: [`tracksFrom source "${job.track}" is no longer in the config`],
    };
  }
  return source.kind === 'cluster'
    ? discoverGitTracks(source, deps)
    : discoverTrackDocuments(source, deps);
}

/** The names the config's own tracks hold: a run-time track may not take one. */
function configNames(config: DiscoverDeps['config']): Set<string> {
  return new Set(configTracks(config.tracks).map((track) => track.name));
}

/** Publishes the source's tracks; returns the names the previous list did not have. */
async function publish(
  deps: DiscoverDeps,
  source: TracksFrom,
  tracks: readonly Track[],
  problems: readonly RunTimeProblem[],
  revision?: string,
): Promise<string[]> {
  const previous = await deps.published.readPublished<PublishedTracks>(source.id);
  const known = new Set(previous?.tracks.map((track) => track.name));
  const document: PublishedTracks = {
    source: source.id,
    publishedAt: (deps.now?.() ?? new Date()).toISOString(),
    ...(revision === undefined ? {} : { revision }),
    tracks,
    problems,
  };
  await deps.published.publish(source.id, document);
  return tracks.map((track) => track.name).filter((name) => !known.has(name));
}

async function discoverTrackDocuments(
  source: TracksFromRepository,
  deps: DiscoverDeps,
): Promise<DiscoverResult> {
  const git = requirePort(deps.source, source, 'Git source');
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
  const { tracks, problems } = runTimeTracks(source, documents, configNames(deps.config));
  const allProblems = [...unreadable, ...problems];
  const added = await publish(deps, source, tracks, allProblems, revision);
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

interface GitTrackRef {
  readonly namespace: string;
  readonly name: string;
}

function refOfGitTrack(object: KubeObject): GitTrackRef {
  return { namespace: object.metadata.namespace ?? 'default', name: object.metadata.name };
}

function finalizersOf(object: KubeObject): string[] {
  const finalizers = object.metadata['finalizers'];
  return Array.isArray(finalizers) ? finalizers.filter((f) => typeof f === 'string') : [];
}

async function discoverGitTracks(
  source: GitTracksFromCluster,
  deps: DiscoverDeps,
): Promise<DiscoverResult> {
  const cluster = requirePort(deps.cluster, source, 'cluster credentials');
  const now = deps.now ?? (() => new Date());
  const objects = await cluster.list({ apiVersion: GIT_TRACK_API_VERSION, kind: 'GitTrack' });
  const previous = await deps.published.readPublished<PublishedTracks>(source.id);
  const live = objects.filter((object) => object.metadata['deletionTimestamp'] === undefined);
  const deleting = objects.filter(
    (object) =>
      object.metadata['deletionTimestamp'] !== undefined &&
      finalizersOf(object).includes(GC_FINALIZER),
  );
  const errors: string[] = [];

  // The finalizer first: from here on, deleting the GitTrack waits for its objects' collection.
  for (const object of live) {
    if (finalizersOf(object).includes(GC_FINALIZER)) continue;
    await holdFinalizer(cluster, refOfGitTrack(object), true).catch((error: unknown) =>
      errors.push(messageOf(error)),
    );
  }
  const documents = live.map((object): RunTimeDocument => {
    const ref = refOfGitTrack(object);
    return {
      value: object,
      where: `GitTrack ${ref.namespace}/${ref.name}`,
      origin: { source: source.id, gitTrack: ref },
    };
  });
  const { tracks, problems } = runTimeTracks(source, documents, configNames(deps.config));
  // Published before collecting: a deleted GitTrack's track is off the list, so nothing starts it again.
  const added = await publish(deps, source, tracks, problems);

  const collected: string[] = [];
  for (const object of deleting) {
    const ref = refOfGitTrack(object);
    try {
      if (await collectDeleted(object, ref, previous, { ...deps, cluster, now })) {
        collected.push(ref.name);
      }
    } catch (error) {
      errors.push(`GitTrack ${ref.namespace}/${ref.name}: ${messageOf(error)}`);
      await writeGitTrackStatus(
        cluster,
        ref,
        failedStatus('DeletionFailed', messageOf(error), now()),
      ).catch(() => undefined);
    }
  }

  for (const object of live) {
    const ref = refOfGitTrack(object);
    const track = tracks.find((t) => sameGitTrack(t, ref));
    const problem = problems.find((p) => p.origin.gitTrack && sameRef(p.origin.gitTrack, ref));
    const status = track
      ? statusOf(await readTrackState(deps.state, track.name))
      : failedStatus('InvalidGitTrack', problem?.message ?? 'not read', now());
    await writeGitTrackStatus(cluster, ref, status).catch((error: unknown) =>
      errors.push(
        `GitTrack ${ref.namespace}/${ref.name}: .status not written: ${messageOf(error)}`,
      ),
    );
  }
  return {
    source: source.id,
    tracks: tracks.map((track) => track.name),
    added,
    problems,
    collected,
    revision: null,
    errors,
  };
}

/**
 * A GitTrack being deleted: its track's objects are collected by the
 * policy its annotation names (default MirrorPrune), then the finalizer is
 * released. Only a track this GitTrack published is collected — never one
 * of the same name that came from elsewhere. `true` when it was released
 * after collecting; an error (nothing released) when collection failed.
 */
async function collectDeleted(
  object: KubeObject,
  ref: GitTrackRef,
  previous: PublishedTracks | undefined,
  deps: DiscoverDeps & { cluster: KubernetesPort; now: () => Date },
): Promise<boolean> {
  const published = previous?.tracks.find((track) => sameGitTrack(track, ref));
  if (published === undefined) {
    // It never became a track (invalid from the start): there is nothing of it to collect.
    await holdFinalizer(deps.cluster, ref, false);
    return false;
  }
  const written = object.metadata.annotations?.[DELETION_POLICY_ANNOTATION];
  const policy = written === undefined ? published.deletionPolicy : deletionPolicyOf(written);
  const result = await deleteTrack(published, policy, {
    cluster: deps.cluster,
    state: deps.state,
    now: deps.now,
  });
  if (result.result === 'failed') {
    throw new GitTrackDeletionError(result.error ?? 'some objects could not be deleted');
  }
  await holdFinalizer(deps.cluster, ref, false);
  return true;
}

function deletionPolicyOf(text: string): DeletionPolicy {
  if ((DELETION_POLICIES as readonly string[]).includes(text)) return text as DeletionPolicy;
  throw new GitTrackDeletionError(
    `metadata.annotations["${DELETION_POLICY_ANNOTATION}"]: "${text}" is not one of ${DELETION_POLICIES.join(', ')}; nothing was collected`,
  );
}

function sameRef(a: GitTrackRef, b: GitTrackRef): boolean {
  return a.namespace === b.namespace && a.name === b.name;
}

function sameGitTrack(track: Track, ref: GitTrackRef): boolean {
  const origin = track.origin?.gitTrack;
  return origin !== undefined && sameRef(origin, ref);
}

/**
 * Holds (or releases) the finalizer by server-side apply under Driftless'
 * own field manager, so other finalizers on the GitTrack are left as they are.
 */
async function holdFinalizer(
  cluster: KubernetesPort,
  ref: GitTrackRef,
  hold: boolean,
): Promise<void> {
  await cluster.apply(
    {
      apiVersion: GIT_TRACK_API_VERSION,
      kind: 'GitTrack',
      metadata: { ...ref, ...(hold ? { finalizers: [GC_FINALIZER] } : {}) },
    },
    { fieldManager: GIT_TRACK_MANAGER, force: false },
  );
}

/** Faros' GitTrack status, from the track's state. */
export interface GitTrackStatus {
  readonly objectsDiscovered: number;
  readonly objectsApplied: number;
  readonly objectsIgnored: number;
  readonly objectsInSync: number;
  readonly conditions: readonly {
    readonly type: string;
    readonly status: string;
    readonly reason: string;
    readonly message: string;
    readonly lastTransitionTime: string;
    readonly lastUpdateTime: string;
  }[];
}

/** The `.status` Faros would show, from a track's state (its conditions use Faros' types). */
export function statusOf(state: TrackState): GitTrackStatus {
  return {
    objectsDiscovered: state.objectsDiscovered,
    objectsApplied: state.objectsApplied,
    objectsIgnored: state.objectsIgnored,
    objectsInSync: state.objectsInSync,
    conditions: state.conditions.map((condition) => ({
      type: condition.type,
      status: condition.status,
      reason: condition.reason,
      message: condition.message,
      lastTransitionTime: condition.lastTransitionTime,
      // The transition time, not now: an unchanged status is then an unchanged object.
      lastUpdateTime: condition.lastTransitionTime,
    })),
  };
}

function failedStatus(reason: string, message: string, now: Date): GitTrackStatus {
  const time = now.toISOString();
  return {
    objectsDiscovered: 0,
    objectsApplied: 0,
    objectsIgnored: 0,
    objectsInSync: 0,
    conditions: [
      {
        type: 'Ready',
        status: 'False',
        reason,
        message,
        lastTransitionTime: time,
        lastUpdateTime: time,
      },
    ],
  };
}

/**
 * Writes the GitTrack's `.status` (its status subresource; the whole object
 * when the CRD has none, as Faros' own v1beta1 CRD had not).
 */
export async function writeGitTrackStatus(
  cluster: KubernetesPort,
  ref: GitTrackRef,
  status: GitTrackStatus,
): Promise<void> {
  const object = {
    apiVersion: GIT_TRACK_API_VERSION,
    kind: 'GitTrack',
    metadata: { ...ref },
    status: status as unknown as Record<string, unknown>,
  };
  const options = { fieldManager: GIT_TRACK_MANAGER, force: true } as const;
  try {
    await cluster.apply(object, { ...options, subresource: 'status' });
  } catch (error) {
    if (!(error instanceof KubernetesApiError) || error.httpStatus !== 404) throw error;
    if (
      (await cluster.get({ ...ref, apiVersion: GIT_TRACK_API_VERSION, kind: 'GitTrack' })) ===
      undefined
    ) {
      return; // Deleted meanwhile.
    }
    await cluster.apply(object, options);
  }
}

function requirePort<T>(port: T | undefined, source: TracksFrom, what: string): T {
  if (port === undefined) {
    throw new SourceNotReadableError(
      `tracksFrom source "${source.id}": this process has no ${what}`,
    );
  }
  return port;
}
