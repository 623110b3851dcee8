/**
 * What a drift check hands to write-back (two-way sync, `syncTo: git`): for
 * each drifted object, the fields the cluster changed with the cluster's
 * value and Git's, read from the live object. Only the fields drift found
 * are taken — never status, server-set metadata, the ownership label or
 * server defaults that Git did not set — and Secrets never leave: they are
 * refused, since they would reach Git in plain text.
 */
import type { KubernetesPort } from '../cluster/kubernetes-port.ts';
import { parsePointer, valueAt } from '../apply/json-pointer.ts';
import type { RenderedObject } from '../render/types.ts';
import type { WriteBackChange } from '../render/write-back-change.ts';
import type { DriftedObject } from './detect-drift.ts';

/** Fields that are the server's or Driftless' own, never a person's: not written to Git. */
const NOT_WRITTEN = [
  /^\/status(\/|$)/,
  /^\/metadata\/(managedFields|uid|resourceVersion|generation|creationTimestamp|selfLink)(\/|$)/,
  /^\/metadata\/labels\/driftless\.dev~1/,
  /^\/metadata\/annotations\/(driftless\.dev~1|kubectl\.kubernetes\.io~1last-applied-configuration$)/,
];

export interface WriteBackChanges {
  readonly changes: WriteBackChange[];
  readonly refused: { readonly subject: string; readonly error: string }[];
}

/** The changes of `drifted` objects to write back; see the module comment. */
export async function writeBackChanges(
  cluster: KubernetesPort,
  drifted: readonly DriftedObject[],
  objects: readonly RenderedObject[],
): Promise<WriteBackChanges> {
  const changes: WriteBackChange[] = [];
  const refused: { subject: string; error: string }[] = [];
  for (const entry of drifted) {
    const object = objects.find((candidate) => candidate.subject === entry.subject);
    if (object === undefined) continue;
    if (object.kind === 'Secret') {
      refused.push({
        subject: entry.subject,
        error: `${entry.subject}: Secrets are never written back to Git in plain text; change it in Git (SOPS-encrypted) or give it a syncTo: kubernetes rule`,
      });
      continue;
    }
    const live = await cluster.get(entry.ref);
    if (live === undefined) continue;
    // An array item's path (`/x/0`, `/x/-`) stands for its list: the whole list is written.
    const paths = [
      ...new Set(entry.patch.map((op) => op.path.replace(/\/(?:\d+|-)(?:\/.*)?$/, ''))),
    ].filter((path) => path !== '' && !NOT_WRITTEN.some((rule) => rule.test(path)));
    const fields = paths.map((path) => {
      const tokens = parsePointer(path);
      const value = valueAt(live, tokens);
      const base = valueAt(object.manifest, tokens);
      return {
        path,
        ...(value === undefined ? {} : { value }),
        ...(base === undefined ? {} : { base }),
      };
    });
    if (fields.length === 0) continue;
    changes.push({
      subject: entry.subject,
      apiVersion: String(object.manifest['apiVersion']),
      kind: object.kind,
      name: object.name,
      ...(object.namespace === undefined ? {} : { namespace: object.namespace }),
      file: object.source.file,
      line: object.source.line,
      fields,
    });
  }
  return { changes, refused };
}
