/**
 * Reads the live form of the desired objects with one request per kind and
 * namespace: a LIST of the kind in the namespace (not by our label — an
 * object whose label was removed by hand must still be found), or a GET when
 * the group holds one object, which costs the same request and less transfer.
 *
 * A sync can start its LISTs early ({@link prefetchLists}): from the stored
 * inventory, before the revision's artifact is read and placed, so the API
 * server answers while this process parses the artifact.
 */
import { mapWithLimit } from '../map-with-limit.ts';
import { UnknownResourceError } from '../cluster/errors.ts';
import { objectKey, refOf, type KubeObject, type ObjectRef } from '../cluster/kube-object.ts';
import type { KubernetesPort } from '../cluster/kubernetes-port.ts';
import { messageOf } from '../errors.ts';
import { refOfEntry, type InventoryEntry } from './inventory.ts';

export interface LiveObjects {
  /** By object key; absent means the object does not exist. */
  readonly found: Map<string, KubeObject>;
  /** By object key: why the object could not be read. */
  readonly errors: Map<string, string>;
}

/** Reads (LISTs or GETs) in flight at once. */
const READS_IN_FLIGHT = 8;

/** LISTs already asked for, by {@link groupOf} key; each is used by the first read of its group. */
export type PrefetchedLists = Map<string, Promise<KubeObject[]>>;

/** The kind and namespace `ref` is read with: one request per such group. */
function groupOf(ref: Pick<ObjectRef, 'apiVersion' | 'kind' | 'namespace'>): string {
  return `${ref.apiVersion}|${ref.kind}|${ref.namespace ?? ''}`;
}

/** The LIST of `ref`'s kind in its namespace: what a group's read asks for. */
function listGroup(
  cluster: KubernetesPort,
  ref: Pick<ObjectRef, 'apiVersion' | 'kind' | 'namespace'>,
): Promise<KubeObject[]> {
  return cluster.list({ apiVersion: ref.apiVersion, kind: ref.kind, namespace: ref.namespace });
}

/**
 * Starts the LIST of every kind and namespace holding more than one entry of
 * `inventory` (what the track's last sync applied), without waiting for the
 * answers. A hint only: an entry it cannot read is skipped, a LIST no read
 * uses costs one request, and a failed one fails the read that uses it, as
 * that read's own LIST would have.
 */
export function prefetchLists(
  cluster: KubernetesPort,
  inventory: readonly InventoryEntry[],
): PrefetchedLists {
  const refs: ObjectRef[] = [];
  for (const entry of inventory) {
    try {
      refs.push(refOfEntry(entry));
    } catch {
      continue;
    }
  }
  return startLists(cluster, refs, new Map());
}

/**
 * Adds to `lists` the LISTs of the groups of `objects` (the revision, once
 * placed) that the inventory did not hold: a first sync, or kinds new to the
 * track. They then run while the sync notes its pending objects, rather than
 * after (~5 ms of a first sync of 500 ConfigMaps).
 */
export function prefetchObjects(
  lists: PrefetchedLists,
  cluster: KubernetesPort,
  objects: readonly KubeObject[],
): void {
  startLists(cluster, objects.map(refOf), lists);
}

/** Starts into `lists` the LIST of each group of `refs` holding two or more and not started yet. */
function startLists(
  cluster: KubernetesPort,
  refs: readonly ObjectRef[],
  lists: PrefetchedLists,
): PrefetchedLists {
  const counts = new Map<string, { ref: ObjectRef; count: number }>();
  for (const ref of refs) {
    const group = groupOf(ref);
    const seen = counts.get(group);
    if (seen) seen.count++;
    else counts.set(group, { ref, count: 1 });
  }
  for (const [group, { ref, count }] of counts) {
    // A group of one is read with a GET, which only the read knows to ask for.
    if (count < 2 || lists.has(group)) continue;
    const list = listGroup(cluster, ref);
    // Unused (the kind left the revision), its failure is nobody's: not an unhandled rejection.
    list.catch(() => undefined);
    lists.set(group, list);
  }
  return lists;
}

export async function readLive(
  cluster: KubernetesPort,
  objects: readonly KubeObject[],
  prefetched?: PrefetchedLists,
): Promise<LiveObjects> {
  const groups = new Map<string, KubeObject[]>();
  for (const object of objects) {
    const group = groupOf(refOf(object));
    // Pushed, not copied: a copy per object made grouping 500 objects of one kind quadratic.
    const members = groups.get(group);
    if (members) members.push(object);
    else groups.set(group, [object]);
  }
  const found = new Map<string, KubeObject>();
  const errors = new Map<string, string>();
  await mapWithLimit([...groups], READS_IN_FLIGHT, async ([group, members]) => {
    const first = members[0] as KubeObject;
    const early = prefetched?.get(group);
    prefetched?.delete(group);
    try {
      const listed = early
        ? await early
        : members.length === 1
          ? [await cluster.get(refOf(first))].filter((o) => o !== undefined)
          : await listGroup(cluster, refOf(first));
      const wanted = new Set(members.map((m) => objectKey(refOf(m))));
      for (const live of listed) {
        const key = objectKey(refOf(live));
        if (wanted.has(key)) found.set(key, live);
      }
    } catch (error) {
      // No resource serves the kind (its CRD is gone): none of its objects exist.
      if (error instanceof UnknownResourceError) return;
      for (const member of members) errors.set(objectKey(refOf(member)), messageOf(error));
    }
  });
  return { found, errors };
}
