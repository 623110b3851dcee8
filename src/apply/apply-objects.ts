/**
 * Staged server-side apply of a revision's objects, with per-object update
 * strategies, reporting each object's fate from the server's answer. Each
 * stage first reads what exists (one request per kind and namespace) and
 * sends only the objects an apply would change (apply-reason.ts); the rest
 * are `unchanged` without a request.
 */
import { isDeepStrictEqual } from 'node:util';
import { KubernetesApiError } from '../cluster/errors.ts';
import {
  objectKey,
  refOf,
  subjectOf,
  type KubeObject,
  type ObjectRef,
} from '../cluster/kube-object.ts';
import type { KubernetesPort } from '../cluster/kubernetes-port.ts';
import { readLive, type PrefetchedLists } from './read-live.ts';
import { InterruptedError, interruptionOf, messageAbout, messageOf } from '../errors.ts';
import { applyReason } from './apply-reason.ts';
import type { ChangeSetEntry, Interrupted } from './changeset.ts';
import {
  FIELD_MANAGER,
  TRACK_LABEL,
  isReconcileDisabled,
  updateStrategyOf,
  type UpdateStrategy,
} from './ownership.ts';
import { mapWithLimit } from '../map-with-limit.ts';
import { isCustomResourceDefinition, splitStages } from './stages.ts';
import { waitUntil } from './wait.ts';

export interface ApplyObjectsOptions {
  /** The track whose ownership label every applied object carries. */
  readonly track: string;
  /**
   * Object keys the track already owns (its stored inventory): such an
   * object is updated even when someone removed its label by hand.
   */
  readonly owned?: ReadonlySet<string>;
  /** Take over existing objects that carry no ownership label (the track's `adopt`). */
  readonly adopt?: boolean;
  /** Delete and recreate an object whose apply is refused for an immutable field (the track's `force`). */
  readonly force?: boolean;
  /** Requests in flight at once in the second stage; {@link APPLY_CONCURRENCY} unless given. */
  readonly concurrency?: number;
  /** How long to wait for CRDs to be established, and for recreated objects to go. */
  readonly timeoutMs?: number;
  /** Called after each object, for progress displays. */
  readonly onProgress?: (done: number, total: number) => void;
  /**
   * Subjects the cluster drives (two-way sync's `syncTo: git`): created when
   * missing and applied until the track owns them, then never updated —
   * their changes go to Git, not the other way.
   */
  readonly createOnly?: ReadonlySet<string>;
  /**
   * LISTs started before the apply (read-live.ts `prefetchLists`): they stand
   * for the reads of their groups until the apply first writes something.
   */
  readonly prefetched?: PrefetchedLists;
  /**
   * Aborted when the caller is asked to stop (errors.ts InterruptedError):
   * requests in flight finish, no object is sent after it, and waits end.
   */
  readonly signal?: AbortSignal;
  /** Where each object was written (`file:line`), by subject: named in its error after the subject. */
  readonly sources?: ReadonlyMap<string, string>;
}

export interface ApplyObjectsResult {
  /** One entry per object, in the order given. */
  readonly changeset: ChangeSetEntry[];
  /** The objects that exist in the cluster as desired (everything but failures). */
  readonly applied: ObjectRef[];
  /**
   * The cluster's copy of applied objects as last seen, by object key: the
   * apply's answer, or the LIST's for an object left alone. The health wait
   * judges these first instead of reading every object again.
   */
  readonly observed: ReadonlyMap<string, KubeObject>;
  /** Set when the signal stopped the apply: why, and the objects it sent nothing for. */
  readonly interrupted?: Interrupted;
}

interface Item {
  readonly object: KubeObject;
  readonly subject: string;
  readonly index: number;
}

/**
 * Requests in flight at once in an apply's second stage. The API server and etcd take more
 * applies per second the more they are given at once (2026-12-02, test cluster, HTTP/2): a first
 * sync of 500 ConfigMaps as a whole process took a median of 648 ms with 32 in flight, 607 with
 * 64 and 593 with 128 (12 alternating runs; 8 with 8 in flight: ~810); the same PATCHes sent raw
 * 412, 334, 383 and, with 256, 334 ms (6 runs each, ±60 ms) — docs/client-performance-notes.md.
 * A server with fewer seats for the caller queues the rest (API Priority and Fairness) or answers
 * 429, which the connection waits out and resends; a server allowing fewer HTTP/2 streams makes
 * Node hold the rest; over HTTP/1.1 the agent's 32 sockets bound it. The bodies queued for a slow
 * link are what the session's memory limit is raised for (kube-connection.ts).
 */
export const APPLY_CONCURRENCY = 128;

/** Changeset actions that wrote nothing to the cluster. */
const LEFT_ALONE: ReadonlySet<ChangeSetEntry['action']> = new Set(['unchanged', 'skipped']);

/** What the cluster holds before we apply, by object key; absent when the object does not exist. */
type Existing = Map<string, KubeObject>;

/**
 * Why `live` is not this track's to change, or undefined when it is: an
 * object labelled for another track is never touched (the first owner wins,
 * as in Faros); an unlabelled one only when the track owns it already or
 * adopts what it finds.
 */
export function ownershipConflict(
  subject: string,
  live: KubeObject | undefined,
  options: Pick<ApplyObjectsOptions, 'track' | 'owned' | 'adopt'>,
): string | undefined {
  if (live === undefined) return undefined;
  const owner = live.metadata.labels?.[TRACK_LABEL];
  if (owner === options.track) return undefined;
  if (owner !== undefined) {
    return `${subject}: ownership conflict: owned by track "${owner}" (label ${TRACK_LABEL}=${owner}); not changed by track "${options.track}"`;
  }
  if (options.adopt || options.owned?.has(objectKey(refOf(live)))) return undefined;
  return `${subject}: ownership conflict: exists without a ${TRACK_LABEL} label (created by something else); not changed by track "${options.track}" (set adopt: true on the track to take it over)`;
}

/** The object as sync applies it: with the track's ownership label. */
export function withOwnershipLabel(object: KubeObject, track: string): KubeObject {
  return {
    ...object,
    metadata: { ...object.metadata, labels: { ...object.metadata.labels, [TRACK_LABEL]: track } },
  };
}

/**
 * Reads the live form of `items` as drift does — one request per kind and
 * namespace — so each object can be checked before it is written.
 */
async function readExisting(
  cluster: KubernetesPort,
  items: readonly Item[],
  prefetched: PrefetchedLists | undefined,
): Promise<Existing> {
  const live = await readLive(
    cluster,
    items.map((item) => item.object),
    prefetched,
  );
  // Listing may be forbidden: ask per object instead; what cannot be read counts as absent.
  const unlisted = items.filter(({ object }) => live.errors.has(objectKey(refOf(object))));
  await mapWithLimit(unlisted, 8, async ({ object }) => {
    const found = await cluster.get(refOf(object)).catch(() => undefined);
    if (found) live.found.set(objectKey(refOf(object)), found);
  });
  return live.found;
}

/** Deletes `ref` and waits until it is gone, so the object can be created anew. */
async function deleteAndWait(
  cluster: KubernetesPort,
  ref: ObjectRef,
  timeoutMs: number,
): Promise<void> {
  const before = await cluster.get(ref);
  if (!before) return;
  await cluster.delete(ref, {
    propagationPolicy: 'Foreground',
    ...(before.metadata.uid ? { preconditions: { uid: before.metadata.uid } } : {}),
  });
  await waitUntil(
    `${subjectOf(ref)} to be deleted before it is recreated`,
    async () => {
      const live = await cluster.get(ref);
      return !live || live.metadata.uid !== before.metadata.uid;
    },
    timeoutMs,
  );
}

type WriteOptions = Required<Pick<ApplyObjectsOptions, 'track' | 'timeoutMs'>> &
  Pick<ApplyObjectsOptions, 'owned' | 'adopt' | 'force' | 'createOnly' | 'signal'>;

/** An object an apply would change: what is sent, over what. */
interface Write {
  readonly item: Item;
  readonly desired: KubeObject;
  readonly live: KubeObject | undefined;
  readonly strategy: UpdateStrategy;
}

/**
 * Why an apply leaves `object` as it is in the cluster (its `skipped` reason), or undefined
 * when it applies it. An object not in the cluster yet is always created. `diff` asks the same
 * (preview-changes.ts), so that it shows as a change only what a sync would change.
 */
export function skipReason(
  subject: string,
  object: KubeObject,
  live: KubeObject | undefined,
  strategy: UpdateStrategy,
  options: Pick<ApplyObjectsOptions, 'track' | 'createOnly'>,
): string | undefined {
  if (live === undefined) return undefined;
  if (isReconcileDisabled(object)) return 'driftless.dev/reconcile: disabled';
  // Once the track owns it (its first sync labelled it), the cluster drives it.
  if (options.createOnly?.has(subject) && live.metadata.labels?.[TRACK_LABEL] === options.track) {
    return 'syncTo: git: the cluster drives it; its changes are written back to Git';
  }
  if (strategy === 'never') return 'update strategy "never": created once, not updated';
  return undefined;
}

/**
 * What to do with one object, decided from its live copy without a request:
 * its changeset entry when it is left as it is (unchanged, skipped, or failed
 * for ownership), else the write it needs.
 */
function planOne(
  item: Item,
  existing: Existing,
  options: WriteOptions,
  observed: Map<string, KubeObject>,
): { entry: ChangeSetEntry } | { write: Write } {
  const { object, subject } = item;
  const key = objectKey(refOf(object));
  const live = existing.get(key);
  // Left alone, an object stays as the LIST saw it; a write replaces this with its answer.
  if (live !== undefined) observed.set(key, live);
  let strategy: UpdateStrategy;
  try {
    strategy = updateStrategyOf(object);
  } catch (error) {
    return { entry: { subject, action: 'failed', error: `${subject}: ${messageOf(error)}` } };
  }
  const skipped = skipReason(subject, object, live, strategy, options);
  if (skipped !== undefined) return { entry: { subject, action: 'skipped', reason: skipped } };
  // After the skips: an object left as it is needs no owner.
  const conflict = ownershipConflict(subject, live, options);
  if (conflict !== undefined) {
    return { entry: { subject, action: 'failed', error: conflict, conflict: 'ownership' } };
  }
  const desired = withOwnershipLabel(object, options.track);
  // Also for `recreate`: an apply that would write nothing is never refused as immutable.
  if (applyReason(desired, live, options.track) === undefined) {
    return { entry: { subject, action: 'unchanged' } };
  }
  return { write: { item, desired, live, strategy } };
}

/**
 * Why the API server refuses `write`, asked with a dry run; undefined when it
 * would take it — or when only an immutable field refuses it and the object
 * is to be replaced (force, `update-strategy: recreate`) — and when the signal
 * stopped the apply before the server answered: the server refused nothing then.
 */
async function refusalOf(
  cluster: KubernetesPort,
  { item, desired, strategy }: Write,
  options: WriteOptions,
): Promise<string | undefined> {
  // Asked to stop: no dry run is sent after it (the write will not be either).
  if (interruptionOf(options.signal) !== undefined) return undefined;
  try {
    await cluster.apply(desired, { fieldManager: FIELD_MANAGER, force: true, dryRun: true });
    return undefined;
  } catch (error) {
    // Cancelled at the deadline, the request rejects with the deadline's own message, the
    // signal's reason too (track-cluster.ts): the object is not applied for that reason.
    if (messageOf(error) === interruptionOf(options.signal)?.message) return undefined;
    const replaced = strategy === 'recreate' || options.force === true;
    if (replaced && error instanceof KubernetesApiError && error.isImmutableFieldChange) {
      return undefined;
    }
    return refusalMessage(item.subject, error);
  }
}

/** Sends one write, replacing the object when the strategy and the refusal say so. */
async function writeOne(
  cluster: KubernetesPort,
  { item, desired, live, strategy }: Write,
  options: WriteOptions,
  observed: Map<string, KubeObject>,
  notSent: string[],
): Promise<ChangeSetEntry> {
  const { object, subject } = item;
  const key = objectKey(refOf(object));
  // Asked to stop: what is not sent yet stays as it is, and says so.
  const interruption = interruptionOf(options.signal);
  if (interruption !== undefined) {
    notSent.push(subject);
    return stoppedEntry(subject, interruption);
  }
  const apply = (): ReturnType<KubernetesPort['apply']> =>
    cluster.apply(desired, { fieldManager: FIELD_MANAGER, force: true });
  try {
    const result = await apply();
    observed.set(key, result.object);
    if (result.created) return { subject, action: 'created' };
    // Only the field owners changed (Driftless took over fields someone else set to Git's
    // values, as after a write-back): the object is as it was, so it is not `configured`.
    const unchanged =
      live?.metadata.resourceVersion === result.object.metadata.resourceVersion ||
      (live !== undefined && isDeepStrictEqual(contentOf(live), contentOf(result.object)));
    return { subject, action: unchanged ? 'unchanged' : 'configured' };
  } catch (error) {
    // Only an immutable-field refusal is answered by replacing the object: any other refusal
    // would meet the new object too, once the running one is gone.
    const immutable = error instanceof KubernetesApiError && error.isImmutableFieldChange;
    if (immutable && (strategy === 'recreate' || options.force)) {
      let deleted = false;
      try {
        observed.delete(key);
        // Not cut short by an interruption: once deleted, the object is created again.
        await deleteAndWait(cluster, refOf(object), options.timeoutMs);
        deleted = true;
        observed.set(key, (await apply()).object);
        return { subject, action: 'recreated' };
      } catch (recreateError) {
        const stage = deleted
          ? 'deleted to be recreated, but creating it failed'
          : 'recreate failed';
        return {
          subject,
          action: 'failed',
          error: `${subject}: ${stage}: ${messageOf(recreateError)}`,
        };
      }
    }
    return { subject, action: 'failed', error: refusalMessage(subject, error) };
  }
}

/** The entry of an object the signal stopped before it was sent: failed for the signal's reason. */
function stoppedEntry(subject: string, interruption: InterruptedError): ChangeSetEntry {
  return { subject, action: 'failed', error: `${subject}: not applied: ${interruption.message}` };
}

/** An apply's refusal for people: the subject first, and how to replace an immutable object. */
function refusalMessage(subject: string, error: unknown): string {
  const hint =
    error instanceof KubernetesApiError && error.isImmutableFieldChange
      ? ' (set force: true on the track, or annotate the object with driftless.dev/update-strategy: recreate, to replace it)'
      : '';
  return `${messageAbout(subject, error)}${hint}`;
}

/** Waits until every CRD among `items` reports Established, then re-reads discovery. */
async function waitForCrds(
  cluster: KubernetesPort,
  items: readonly Item[],
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<void> {
  const crds = items.filter(({ object }) => isCustomResourceDefinition(object));
  if (crds.length === 0) return;
  await Promise.all(
    crds.map(({ object }) =>
      waitUntil(
        `${subjectOf(refOf(object))} to be established`,
        async () => {
          const live = await cluster.get(refOf(object));
          const conditions = (
            live?.status as { conditions?: { type: string; status: string }[] } | undefined
          )?.conditions;
          return conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false;
        },
        timeoutMs,
        undefined,
        signal,
      ),
    ),
  );
  await cluster.discover(true);
}

/**
 * Applies `objects` in two stages — cluster definitions (waiting for CRDs to be
 * established), then everything else concurrently. Every object gets an entry.
 * In each stage, when anything that exists would change, every write is first
 * asked for with a dry run, and a refusal sends none of them (as Flux and Argo
 * CD validate a revision before applying it) — a refused definition, nothing
 * of the revision; otherwise a failed object does not stop the others.
 */
export async function applyObjects(
  cluster: KubernetesPort,
  objects: readonly KubeObject[],
  options: ApplyObjectsOptions,
): Promise<ApplyObjectsResult> {
  const result = await applyStaged(cluster, objects, options);
  const { sources } = options;
  if (sources === undefined) return result;
  // `ConfigMap/apps/web (apps/web.yaml:12): ...`: with hundreds of files, the subject alone
  // leaves people to search for the one the API server refused.
  // Not for an object failed for others' sake or not sent at all: the file tells nothing there.
  const unsent = new Set(result.interrupted?.notSent);
  const changeset = result.changeset.map((entry) => {
    const source = sources.get(entry.subject);
    const prefix = `${entry.subject}: `;
    if (entry.error === undefined || source === undefined || !entry.error.startsWith(prefix)) {
      return entry;
    }
    if (entry.heldBack === true || unsent.has(entry.subject)) return entry;
    return { ...entry, error: `${entry.subject} (${source}): ${entry.error.slice(prefix.length)}` };
  });
  return { ...result, changeset };
}

async function applyStaged(
  cluster: KubernetesPort,
  objects: readonly KubeObject[],
  options: ApplyObjectsOptions,
): Promise<ApplyObjectsResult> {
  const timeoutMs = options.timeoutMs ?? 120_000;
  const concurrency = options.concurrency ?? APPLY_CONCURRENCY;
  const items: Item[] = objects.map((object, index) => ({
    object,
    subject: subjectOf(refOf(object)),
    index,
  }));
  const changeset = new Array<ChangeSetEntry>(items.length);
  const observed = new Map<string, KubeObject>();
  const notSent: string[] = [];
  let done = 0;
  const writeOptions: WriteOptions = {
    track: options.track,
    timeoutMs,
    ...(options.owned ? { owned: options.owned } : {}),
    ...(options.adopt ? { adopt: true } : {}),
    ...(options.force ? { force: true } : {}),
    ...(options.createOnly ? { createOnly: options.createOnly } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  };
  /** Plans `stage` from one read: entries for what is left as it is, the writes it needs. */
  const plan = async (stage: readonly Item[]): Promise<Write[]> => {
    const existing = await readExisting(cluster, stage, options.prefetched);
    const writes: Write[] = [];
    for (const item of stage) {
      const planned = planOne(item, existing, writeOptions, observed);
      if ('write' in planned) {
        writes.push(planned.write);
        continue;
      }
      changeset[item.index] = planned.entry;
      options.onProgress?.(++done, items.length);
    }
    return writes;
  };
  const send = async (writes: readonly Write[], limit: number): Promise<void> => {
    await mapWithLimit(writes, limit, async (write) => {
      changeset[write.item.index] = await writeOne(cluster, write, writeOptions, observed, notSent);
      options.onProgress?.(++done, items.length);
    });
  };
  /**
   * The API server's refusals of `writes`, asked with a dry run when one of them changes an
   * object that exists; undefined when it takes them all, or when they only create (a first
   * sync): nothing that runs is changed whatever becomes of those.
   */
  const refusalsOf = async (
    writes: readonly Write[],
    limit: number,
  ): Promise<(string | undefined)[] | undefined> => {
    if (!writes.some((write) => write.live !== undefined)) return undefined;
    if (interruptionOf(options.signal) !== undefined) return undefined;
    const refusals = await mapWithLimit(writes, limit, (write) =>
      refusalOf(cluster, write, writeOptions),
    );
    return refusals.some((refusal) => refusal !== undefined) ? refusals : undefined;
  };
  /**
   * Fails `writes` unsent: each refusal named, the others held back, saying `why` — or, once
   * the signal stopped the apply, not applied for its reason (they would not have been sent
   * either way, and the deadline or Ctrl-C is what the caller reports once for all of them).
   */
  const refuse = (
    writes: readonly Write[],
    refusals: readonly (string | undefined)[],
    why: string,
  ): void => {
    const interruption = interruptionOf(options.signal);
    writes.forEach((write, index) => {
      const { subject } = write.item;
      const refusal = refusals[index];
      if (refusal !== undefined) {
        changeset[write.item.index] = { subject, action: 'failed', error: refusal };
      } else if (interruption !== undefined) {
        notSent.push(subject);
        changeset[write.item.index] = stoppedEntry(subject, interruption);
      } else {
        changeset[write.item.index] = {
          subject,
          action: 'failed',
          error: `${subject}: not applied: ${why}`,
          heldBack: true,
        };
      }
      options.onProgress?.(++done, items.length);
    });
  };
  const others = (count: number): string => `${count} other object${count === 1 ? '' : 's'}`;
  const refusedWhy = (refusals: readonly (string | undefined)[]): string =>
    `the API server refuses ${others(refusals.filter((r) => r !== undefined).length)} of this revision, so none of it was sent`;
  const [definitions, rest] = splitStages(items);
  // Definitions are few and may depend on each other (a Namespace before a
  // ClusterRoleBinding naming it): apply them in order. Those that change a running
  // definition are checked first like the rest: a refusal sends nothing of the
  // revision, neither definitions nor the rest (a revision the cluster refuses changes
  // nothing that runs). New ones are not: a dry run persists nothing, so one naming
  // another new one (a binding to a new ClusterRole) could be refused where sending
  // them in order succeeds.
  const definitionWrites = await plan(definitions);
  const definitionUpdates = definitionWrites.filter((write) => write.live !== undefined);
  const definitionRefusals = await refusalsOf(definitionUpdates, 1);
  if (definitionRefusals !== undefined) {
    const why = refusedWhy(definitionRefusals);
    refuse(definitionUpdates, definitionRefusals, why);
    refuse(
      definitionWrites.filter((write) => write.live === undefined),
      [],
      why,
    );
    refuse(await plan(rest), [], why);
    return {
      changeset,
      applied: appliedRefs(items, changeset),
      observed,
      ...interrupted(options.signal, notSent),
    };
  }
  await send(definitionWrites, 1);
  // A definition that failed when it was sent: the rest, which may need it, is not sent.
  const failedDefinitions = definitionWrites.filter(
    (write) => changeset[write.item.index]?.action === 'failed',
  ).length;
  if (failedDefinitions > 0 && interruptionOf(options.signal) === undefined) {
    refuse(
      await plan(rest),
      [],
      `${others(failedDefinitions)} of this revision failed (a Namespace, CRD or other cluster definition), so the rest of it was not sent`,
    );
    return { changeset, applied: appliedRefs(items, changeset), observed };
  }
  // A definition written (a CRD changed, a Namespace created) may change what the rest
  // reads: those reads are made now, not taken from LISTs started before it.
  if (definitions.some((item) => !LEFT_ALONE.has(changeset[item.index]?.action ?? 'failed'))) {
    options.prefetched?.clear();
  }
  try {
    await waitForCrds(
      cluster,
      definitions.filter((item) => changeset[item.index]?.action !== 'failed'),
      timeoutMs,
      options.signal,
    );
  } catch (error) {
    // Without established CRDs their resources cannot apply: fail them with the reason.
    const stopped = error instanceof InterruptedError;
    for (const item of rest) {
      if (stopped) notSent.push(item.subject);
      changeset[item.index] = {
        subject: item.subject,
        action: 'failed',
        error: `${item.subject}: ${stopped ? 'not applied: ' : ''}${messageOf(error)}`,
      };
    }
    return {
      changeset,
      applied: appliedRefs(items, changeset),
      observed,
      ...interrupted(options.signal, notSent),
    };
  }
  // The rest is checked as a whole too, once the definitions it is checked against (a
  // Namespace to create objects in, a CRD) exist.
  const writes = await plan(rest);
  const refusals = await refusalsOf(writes, concurrency);
  if (refusals === undefined) await send(writes, concurrency);
  else refuse(writes, refusals, refusedWhy(refusals));
  return {
    changeset,
    applied: appliedRefs(items, changeset),
    observed,
    ...interrupted(options.signal, notSent),
  };
}

/** The result's `interrupted`, once the signal stopped the apply. */
function interrupted(
  signal: AbortSignal | undefined,
  notSent: readonly string[],
): Pick<ApplyObjectsResult, 'interrupted'> {
  const interruption = interruptionOf(signal);
  return interruption === undefined
    ? {}
    : { interrupted: { reason: interruption.message, notSent } };
}

function appliedRefs(items: readonly Item[], changeset: readonly ChangeSetEntry[]): ObjectRef[] {
  return items
    .filter((item) => changeset[item.index]?.action !== 'failed')
    .map((item) => refOf(item.object));
}

/** An object without what changes when only field ownership does. */
function contentOf(object: KubeObject): unknown {
  const metadata: Record<string, unknown> = { ...object.metadata };
  delete metadata['managedFields'];
  delete metadata['resourceVersion'];
  return { ...object, metadata };
}
