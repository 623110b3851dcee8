/**
 * What a drift check hands to write-back (two-way sync, `syncTo: git`): for
 * each drifted object, the fields the cluster changed with the cluster's
 * value and Git's, read from the live object. Only the fields drift found
 * are taken — never status, server-set metadata, the ownership label or
 * server defaults that Git did not set — and Secrets never leave: they are
 * refused, since they would reach Git in plain text.
 */
import type { KubeObject } from '../cluster/kube-object.ts';
import type { KubernetesPort } from '../cluster/kubernetes-port.ts';
import { messageOf } from '../errors.ts';
import { parsePointer, valueAt } from '../apply/json-pointer.ts';
import type { RenderedObject } from '../render/types.ts';
import { changeOf, type WriteBackChange } from '../render/write-back-change.ts';
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

/**
 * A Secret's change as a whole file encrypted anew (sync/reencrypt-secret.ts,
 * where the decryption keys are); it throws when that cannot be done.
 */
export type SecretChange = (
  object: RenderedObject,
  live: KubeObject,
  paths: readonly string[],
) => Promise<WriteBackChange>;

/** The changes of `drifted` objects to write back; see the module comment. */
export async function writeBackChanges(
  cluster: KubernetesPort,
  drifted: readonly DriftedObject[],
  objects: readonly RenderedObject[],
  secretChange?: SecretChange,
): Promise<WriteBackChanges> {
  const changes: WriteBackChange[] = [];
  const refused: { subject: string; error: string }[] = [];
  for (const entry of drifted) {
    const object = objects.find((candidate) => candidate.subject === entry.subject);
    if (object === undefined) continue;
    const live = await cluster.get(entry.ref);
    if (live === undefined) continue;
    // An array item's path (`/x/0`, `/x/-`) stands for its list: the whole list is written.
    const paths = [
      ...new Set(entry.patch.map((op) => op.path.replace(/\/(?:\d+|-)(?:\/.*)?$/, ''))),
    ].filter((path) => path !== '' && !NOT_WRITTEN.some((rule) => rule.test(path)));
    if (object.kind === 'Secret') {
      const plain = `${entry.subject}: Secrets are never written back to Git in plain text`;
      if (secretChange === undefined) {
        refused.push({
          subject: entry.subject,
          error: `${plain}; keep it SOPS-encrypted in Git (with the track's decryption) or give it a syncTo: kubernetes rule`,
        });
        continue;
      }
      try {
        changes.push(await secretChange(object, live, paths));
      } catch (error) {
        refused.push({ subject: entry.subject, error: `${plain}: ${messageOf(error)}` });
      }
      continue;
    }
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
    changes.push({ ...changeOf(object), fields });
  }
  return { changes, refused };
}
