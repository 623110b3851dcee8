/**
 * Reads the live form of the desired objects with one request per kind and
 * namespace: a LIST of the kind in the namespace (not by our label — an
 * object whose label was removed by hand must still be found), or a GET when
 * the group holds one object, which costs the same request and less transfer.
 */
import { mapWithLimit } from '../map-with-limit.ts';
import { UnknownResourceError } from '../cluster/errors.ts';
import { objectKey, refOf, type KubeObject } from '../cluster/kube-object.ts';
import type { KubernetesPort } from '../cluster/kubernetes-port.ts';
import { messageOf } from '../errors.ts';

export interface LiveObjects {
  /** By object key; absent means the object does not exist. */
  readonly found: Map<string, KubeObject>;
  /** By object key: why the object could not be read. */
  readonly errors: Map<string, string>;
}

export async function readLive(
  cluster: KubernetesPort,
  objects: readonly KubeObject[],
  concurrency = 8,
): Promise<LiveObjects> {
  const groups = new Map<string, KubeObject[]>();
  for (const object of objects) {
    const group = `${object.apiVersion}|${object.kind}|${object.metadata.namespace ?? ''}`;
    // Pushed, not copied: a copy per object made grouping 500 objects of one kind quadratic.
    const members = groups.get(group);
    if (members) members.push(object);
    else groups.set(group, [object]);
  }
  const found = new Map<string, KubeObject>();
  const errors = new Map<string, string>();
  await mapWithLimit([...groups.values()], concurrency, async (members) => {
    const first = members[0] as KubeObject;
    try {
      const listed =
        members.length === 1
          ? [await cluster.get(refOf(first))].filter((o) => o !== undefined)
          : await cluster.list({
              apiVersion: first.apiVersion,
              kind: first.kind,
              namespace: first.metadata.namespace,
            });
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
