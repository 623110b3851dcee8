/**
 * Discovery of Faros GitTracks in a cluster (`tracksFrom: [{cluster, gitTracks:
 * true}]`), run in apply, the only step with cluster credentials: lists the
 * GitTracks, holds the `driftless.dev/gc` finalizer on each, publishes the
 * valid ones as tracks, collects the objects of a deleted GitTrack by its
 * deletion policy before releasing it (as Faros does), and writes each
 * GitTrack's `.status`. Its cluster requests are held to a fixed limit, as a
 * sync's are to its track's timeout (track-cluster.ts TrackDeadline); the
 * `.status` write after a job of a track read from a GitTrack to a shorter
 * bound of its own. A collection whose deletes fail is tried again at later
 * and later discoveries (COLLECTION_RETRY_FIRST_MS up to COLLECTION_RETRY_MAX_MS).
 */
import type { KubernetesPort } from '../cluster/kubernetes-port.ts';
import { KubernetesApiError } from '../cluster/errors.ts';
import type { KubeObject } from '../cluster/kube-object.ts';
import { DELETION_POLICIES, type DeletionPolicy } from '../config/deletion-policy.ts';
import { DELETION_POLICY_ANNOTATION, GIT_TRACK_API_VERSION } from '../config/git-track.ts';
import { DEFAULT_TRACK_TIMEOUT_MS } from '../config/schema.ts';
import { describeValue } from '../config/describe-value.ts';
import {
  runTimeTracks,
  type RunTimeDocument,
  type RunTimeTracks,
} from '../config/run-time-tracks.ts';
import type { GitTracksFromCluster, Track } from '../config/types.ts';
import { DriftlessError, messageOf } from '../errors.ts';
import { configNames, publish, type DiscoverDeps, type DiscoverResult } from './discover-tracks.ts';
import { deleteTrack } from './lifecycle.ts';
import {
  documentOf,
  gitTrackWhere,
  holdersFirst,
  leaveNamesOfOtherSources,
  namesHeldOutside,
  type CollectionRetry,
  type PublishedTracks,
} from './published-tracks.ts';
import { TrackDeadline, type DeadlineWording } from './track-cluster.ts';
import { readTrackState, transitionTime, type TrackState } from './track-state.ts';

/** A deleted GitTrack's objects could not be collected; its finalizer stays until they are. */
export class GitTrackDeletionError extends DriftlessError {
  readonly code = 'GITTRACK_DELETION';
}

/**
 * Its deletes were sent and some failed (refused, an error, the track's timeout): the collection
 * is put off ({@link COLLECTION_RETRY_FIRST_MS}) rather than sent again at every discovery.
 */
export class GitTrackCollectionFailedError extends GitTrackDeletionError {}

/**
 * After a collection failed, the next discovery that tries it again starts at least this long
 * after the one that failed; the wait doubles with each failure in a row, up to
 * {@link COLLECTION_RETRY_MAX_MS}. A discovery runs every minute: the first failure is tried
 * again by the next one.
 */
export const COLLECTION_RETRY_FIRST_MS = 60_000;

/** The longest wait between two tries of a collection that keeps failing. */
export const COLLECTION_RETRY_MAX_MS = 60 * 60_000;

/**
 * A discovery that starts this much before a collection's time still tries it: the schedule's
 * ticks, and the queue behind them, are not to the second, and a discovery a moment early must
 * not put the try off for another whole wait.
 */
const RETRY_EARLY_MS = 15_000;

/** The finalizer Driftless holds on every GitTrack it manages (DESIGN.md). */
export const GC_FINALIZER = 'driftless.dev/gc';

/** Field manager of the finalizer and of `.status`: never the one that applies manifests. */
export const GIT_TRACK_MANAGER = 'driftless-gittracks';

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

/**
 * How long a discovery may work with its cluster. A source has no `timeout` setting: its
 * discovery gets the `timeout` a track has by default (config/schema.ts), and its error names
 * the source (jobs.ts DiscoverJob) and this fixed limit rather than a track's timeout.
 */
export const DISCOVERY_TIMEOUT_MS = DEFAULT_TRACK_TIMEOUT_MS;

const DISCOVERY_WORDING: DeadlineWording = {
  subject: 'tracksFrom source',
  limit: "the discovery's fixed limit",
};

/**
 * Reads the source's GitTracks and acts on them, its cluster requests ending at its start plus
 * {@link DISCOVERY_TIMEOUT_MS}. The deadline stops the discovery where it is: what it did stays
 * (finalizers held, the tracks published, objects collected), nothing more is sent, and the
 * result's errors say once that it did not finish. One that stops while listing the GitTracks
 * throws that error: nothing was read, the last published list stays in use.
 */
export async function discoverGitTracks(
  source: GitTracksFromCluster,
  deps: DiscoverDeps & { readonly cluster: KubernetesPort },
): Promise<DiscoverResult> {
  const deadline = new TrackDeadline(
    { name: source.id, timeout: DISCOVERY_TIMEOUT_MS },
    'discovery',
    undefined,
    DISCOVERY_WORDING,
  );
  try {
    return await discoverWithin(deadline, source, {
      ...deps,
      cluster: deadline.bound(deps.cluster),
    });
  } finally {
    deadline.dispose();
  }
}

async function discoverWithin(
  deadline: TrackDeadline,
  source: GitTracksFromCluster,
  deps: DiscoverDeps & { readonly cluster: KubernetesPort },
): Promise<DiscoverResult> {
  const { cluster } = deps;
  const now = deps.now ?? (() => new Date());
  // Failed collections are put off from here: the schedule's ticks start discoveries, not their ends.
  const startedAt = now();
  const objects = await cluster.list({ apiVersion: GIT_TRACK_API_VERSION, kind: 'GitTrack' });
  const previous = await deps.published.readPublished<PublishedTracks>(source.id);
  const live = objects.filter((object) => object.metadata['deletionTimestamp'] === undefined);
  const deleting = objects.filter(
    (object) =>
      object.metadata['deletionTimestamp'] !== undefined &&
      finalizersOf(object).includes(GC_FINALIZER),
  );
  // Each deleted GitTrack's track as last published, live or already being collected: it stays
  // known (published under `collecting`) until its collection succeeds. Not when a live track of
  // the config or of a source before this one has its name (moved into driftless.yaml while a
  // collection kept failing, or an earlier source's track that this one's never displaced): that
  // track syncs under the name, the state and the objects it lists are its own, and collecting
  // would delete them. Such a GitTrack is released as one that never gave a track.
  const inConfig = configNames(deps.config);
  const heldElsewhere =
    deleting.length === 0
      ? inConfig
      : await namesHeldOutside(deps.config, deps.published, source.id);
  const collecting = deleting.flatMap((object) => {
    const track = publishedTrackOf(previous, refOfGitTrack(object));
    return track === undefined || heldElsewhere.has(track.name) ? [] : [track];
  });
  // Those of them whose collection failed, as last published.
  const retries = new Map(
    (previous?.collectionRetries ?? [])
      .filter((retry) => collecting.some((track) => track.name === retry.track))
      .map((retry) => [retry.track, retry]),
  );
  const errors: string[] = [];
  // Past the deadline every request fails alike: that is said once, at the end.
  const failed = (error: unknown, what: (message: string) => string): void => {
    if (error !== deadline.error) errors.push(what(messageOf(error)));
  };

  // The finalizer first: from here on, deleting the GitTrack waits for its objects' collection.
  for (const object of live) {
    if (deadline.passed) break;
    if (finalizersOf(object).includes(GC_FINALIZER)) continue;
    await holdFinalizer(cluster, refOfGitTrack(object), true).catch((error: unknown) =>
      failed(error, (message) => message),
    );
  }
  const documents = live.map((object): RunTimeDocument => {
    const ref = refOfGitTrack(object);
    return {
      value: object,
      where: gitTrackWhere(ref),
      origin: { source: source.id, gitTrack: ref },
    };
  });
  // A track still being collected keeps its name: another GitTrack taking it would have its
  // state, and the objects that state lists, collected in its place.
  const taken = new Set([...inConfig, ...collecting.map((track) => track.name)]);
  const offered = leaveHeldNames(
    runTimeTracks(source, holdersFirst(documents, previous), taken),
    previous,
  );
  const kept = await leaveNamesOfOtherSources(
    source.id,
    offered.tracks.map((track) => ({ track, where: documentOf(track.origin) ?? track.name })),
    previous,
    deps,
  );
  const { tracks } = kept;
  const problems = [...offered.problems, ...kept.problems];
  // Published before collecting: a deleted GitTrack's track is off the list, so nothing starts it
  // again; it is under `collecting`, so the next discovery tries again if this one does not finish.
  let stillCollecting = collecting;
  const publishList = () =>
    publish(deps, source, previous, tracks, problems, {
      collecting: stillCollecting,
      collectionRetries: [...retries.values()],
    });
  const added = await publishList();

  const collected: string[] = [];
  /** Collected and released here: their names are free once the list says so. */
  const done = new Set<Track>();
  let failedAgain = false;
  for (const object of deleting) {
    if (deadline.passed) break;
    const ref = refOfGitTrack(object);
    const track = collecting.find((t) => sameGitTrack(t, ref));
    const retry = track && retries.get(track.name);
    if (track && retry && !(await dueAgain(retry, startedAt, track.name, deps))) {
      errors.push(
        `GitTrack ${ref.namespace}/${ref.name}: the collection failed${retry.failures === 1 ? '' : ` ${retry.failures} times in a row`}; tried again from ${retry.notBefore}`,
      );
      continue;
    }
    try {
      // A collection under way stops at the discovery's deadline as at its own track's.
      const collection = { ...deps, cluster, now, signal: deadline.signal };
      if (await collectDeleted(object, ref, track, collection)) {
        collected.push(ref.name);
        if (track) done.add(track);
      }
    } catch (error) {
      failed(error, (message) => `GitTrack ${ref.namespace}/${ref.name}: ${message}`);
      await writeGitTrackStatus(
        cluster,
        ref,
        failedStatus('DeletionFailed', messageOf(error), now(), object),
      ).catch(() => undefined);
      // Cut short by the discovery's deadline, it did not fail: the next discovery goes on.
      if (track && error instanceof GitTrackCollectionFailedError && !deadline.passed) {
        retries.set(track.name, nextRetry(track.name, retry, startedAt));
        failedAgain = true;
      }
    }
  }
  // The waits are kept with the list, for the discoveries to come; a name collected is free at
  // once (knownTracks keeps a name under `collecting` from any other source's track).
  if (done.size > 0) {
    stillCollecting = collecting.filter((track) => !done.has(track));
    for (const track of done) retries.delete(track.name);
  }
  if (failedAgain || done.size > 0) await publishList();

  for (const object of live) {
    if (deadline.passed) break;
    const ref = refOfGitTrack(object);
    const track = tracks.find((t) => sameGitTrack(t, ref));
    const problem = problems.find((p) => p.origin.gitTrack && sameRef(p.origin.gitTrack, ref));
    const status = track
      ? statusOf(await readTrackState(deps.state, track.name))
      : failedStatus('InvalidGitTrack', problem?.message ?? 'not read', now(), object);
    await writeGitTrackStatus(cluster, ref, status).catch((error: unknown) =>
      failed(
        error,
        (message) => `GitTrack ${ref.namespace}/${ref.name}: .status not written: ${message}`,
      ),
    );
  }
  // Retried, with what it did not reach, at the next discovery.
  if (deadline.passed) errors.push(deadline.error.message);
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
 * A name this source holds for a GitTrack refused for now (PublishedTracks.held) stays that
 * GitTrack's: another of its GitTracks offering the name is refused, as one offering a taken name
 * is — published, it would sync in the held track's state and prune the objects that state lists.
 * The holder itself, mended, takes its name back. (A repository source lets another of its files
 * take a name it held: a file renamed keeps its track, published-tracks.ts.)
 */
function leaveHeldNames(
  offered: RunTimeTracks,
  previous: PublishedTracks | undefined,
): RunTimeTracks {
  const held = previous?.held ?? [];
  if (held.length === 0) return offered;
  const result: RunTimeTracks = { tracks: [], problems: [...offered.problems] };
  for (const track of offered.tracks) {
    const holder = held.find((h) => h.name === track.name);
    const ref = track.origin?.gitTrack;
    if (holder === undefined || (ref !== undefined && sameGitTrack(holder, ref))) {
      result.tracks.push(track);
      continue;
    }
    result.problems.push({
      where: documentOf(track.origin) ?? track.name,
      origin: track.origin ?? { source: previous?.source ?? '' },
      message: `metadata.name: track ${describeValue(track.name)} already exists (${documentOf(holder.origin) ?? 'another GitTrack'}, refused for now)`,
    });
  }
  return result;
}

/**
 * The track the GitTrack published, from the last published list: among its tracks while the
 * GitTrack was live, under `held` while an edit of it is refused (its track synced before, and
 * its objects are in the cluster still), under `collecting` once its deletion was seen and
 * until it was collected.
 */
function publishedTrackOf(
  previous: PublishedTracks | undefined,
  ref: GitTrackRef,
): Track | undefined {
  // `held` and `collecting` are absent from lists published before they existed.
  return [
    ...(previous?.tracks ?? []),
    ...(previous?.held ?? []),
    ...(previous?.collecting ?? []),
  ].find((track) => sameGitTrack(track, ref));
}

/**
 * A GitTrack being deleted: its track's objects are collected by the
 * policy its annotation names (default MirrorPrune), then the finalizer is
 * released. Only the track this GitTrack published (`published`) is
 * collected — never one of the same name that came from elsewhere. `true`
 * when it was released after collecting; an error (nothing released) when
 * collection failed.
 */
async function collectDeleted(
  object: KubeObject,
  ref: GitTrackRef,
  published: Track | undefined,
  deps: DiscoverDeps & { cluster: KubernetesPort; now: () => Date; signal: AbortSignal },
): Promise<boolean> {
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
    signal: deps.signal,
    recordRepeatedFailureOnce: true,
  });
  if (result.result === 'failed') {
    throw new GitTrackCollectionFailedError(result.error ?? 'some objects could not be deleted');
  }
  await holdFinalizer(deps.cluster, ref, false);
  return true;
}

/** After the collection of `track` failed (again) in the discovery started `at`. */
function nextRetry(
  track: string,
  previous: CollectionRetry | undefined,
  at: Date,
): CollectionRetry {
  const failures = (previous?.failures ?? 0) + 1;
  const wait = Math.min(COLLECTION_RETRY_FIRST_MS * 2 ** (failures - 1), COLLECTION_RETRY_MAX_MS);
  return { track, failures, notBefore: new Date(at.getTime() + wait).toISOString() };
}

/**
 * Whether the discovery started `at` tries the failed collection again: its time has come, or
 * the track has no state left (`driftless delete` collected it meanwhile), so trying sends no
 * delete and releases the GitTrack at once.
 */
async function dueAgain(
  retry: CollectionRetry,
  at: Date,
  track: string,
  deps: Pick<DiscoverDeps, 'state'>,
): Promise<boolean> {
  if (at.getTime() >= Date.parse(retry.notBefore) - RETRY_EARLY_MS) return true;
  return (await deps.state.read(track)) === undefined;
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

/**
 * The status of a GitTrack that failed. The time is kept from the status the
 * GitTrack has while its Ready is False already (a new message does not move
 * it): each discovery that says the same then writes nothing new.
 */
function failedStatus(
  reason: string,
  message: string,
  now: Date,
  current?: KubeObject,
): GitTrackStatus {
  const conditions = (current?.['status'] as { conditions?: unknown } | undefined)?.conditions;
  const ready = Array.isArray(conditions)
    ? (conditions as Record<string, unknown>[]).find((c) => c['type'] === 'Ready')
    : undefined;
  const [status, kept] = [ready?.['status'], ready?.['lastTransitionTime']];
  const time = transitionTime(
    typeof status === 'string' && typeof kept === 'string'
      ? { status, lastTransitionTime: kept }
      : undefined,
    'False',
    now,
  );
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
 * How long the `.status` write after a job may take: the track's `timeout`, but at most 10 s. It
 * is one small PATCH (a GET and a second PATCH when the CRD has no status subresource), answered
 * in well under a second by an API server that answers at all, and best effort: the next
 * discovery of the source writes it again. A full `timeout` of its own would let a cluster that
 * stopped answering, and so already held the job for that long, hold the track's queue (and every
 * job queued behind it) for as long once more. Never longer than the track's own `timeout`, the
 * most a whole job of the track may take. (Its error, which names the track's timeout, is not
 * shown: the job's outcome stands without it.)
 */
export const JOB_STATUS_WRITE_TIMEOUT_MS = 10_000;

/**
 * After a job of a track read from a GitTrack: the track's state to the GitTrack's `.status`, as
 * Faros would, its requests ending within {@link JOB_STATUS_WRITE_TIMEOUT_MS} (or the track's
 * shorter `timeout`) counted from here, not a minute more per request.
 */
export async function writeJobStatus(
  track: Pick<Track, 'name' | 'timeout'>,
  gitTrack: GitTrackRef,
  cluster: KubernetesPort,
  state: TrackState,
): Promise<void> {
  const timeout = Math.min(track.timeout, JOB_STATUS_WRITE_TIMEOUT_MS);
  const deadline = new TrackDeadline(
    { name: track.name, timeout },
    'GitTrack status write',
    undefined,
    timeout < track.timeout
      ? { subject: 'track', limit: "the status write's own limit" }
      : undefined,
  );
  try {
    await writeGitTrackStatus(deadline.bound(cluster), gitTrack, statusOf(state));
  } finally {
    deadline.dispose();
  }
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
