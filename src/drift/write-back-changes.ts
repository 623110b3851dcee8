/**
 * What a drift check hands to write-back (two-way sync, `syncTo: git`): for
 * each drifted object, the fields the cluster changed with the cluster's
 * value and Git's, read from the live object. Only the fields drift found
 * are taken — never status, server-set metadata, the ownership label or
 * server defaults that Git did not set — and Secrets never leave in plain
 * text: they, and every object of a SOPS-encrypted file, are written back
 * only as their file encrypted again (sync/reencrypt-secret.ts), else
 * refused. Objects kustomize or Helm rendered are refused too: Git holds no
 * document of them to edit, only what they were built from.
 */
import type { KubeObject } from '../cluster/kube-object.ts';
import type { KubernetesPort } from '../cluster/kubernetes-port.ts';
import { messageOf } from '../errors.ts';
import { parsePointer, valueAt } from '../apply/json-pointer.ts';
import { KUSTOMIZATION_FILES } from '../render/kustomization-files.ts';
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
 * An object written back only encrypted (a Secret, or any object of a SOPS-encrypted file),
 * changed in the cluster: as Git has it, as the cluster has it, and the fields changed.
 */
export interface ChangedObject {
  readonly object: RenderedObject;
  readonly live: KubeObject;
  readonly paths: readonly string[];
}

/**
 * How objects are written back encrypted: `files`, the revision's SOPS-encrypted files, and
 * `changes`, the changes of objects as their files encrypted anew (sync/reencrypt-secret.ts,
 * where the decryption keys are), all at once: objects of one file go into one encryption of
 * it. An object that cannot be written so is refused with the reason; a throw refuses them all.
 */
export interface EncryptedWriteBack {
  readonly files: ReadonlySet<string>;
  readonly changes: (objects: readonly ChangedObject[]) => Promise<{
    readonly changes: readonly WriteBackChange[];
    readonly refused: readonly { readonly subject: string; readonly reason: string }[];
  }>;
}

/**
 * Why `object` has no document of its own in Git to write its changes to, or
 * undefined when it has one. Its source says it: kustomize's objects come
 * from the kustomization (plain manifests never do: those files are
 * skipped), a remote Helm chart's from its URL. A local chart's template is
 * recognised when the write-back reads it (source/edit-manifests.ts).
 */
function builtFrom(object: RenderedObject): string | undefined {
  const file = object.source.file;
  if (KUSTOMIZATION_FILES.includes(file.slice(file.lastIndexOf('/') + 1))) {
    return `kustomize builds it from ${file}`;
  }
  if (file.includes('://')) return `Helm renders it from the chart ${file}`;
  return undefined;
}

/**
 * The changes of `drifted` objects to write back; see the module comment. Without `encrypted`
 * (no decryption here), Secrets are refused.
 */
export async function writeBackChanges(
  cluster: KubernetesPort,
  drifted: readonly DriftedObject[],
  objects: readonly RenderedObject[],
  encrypted?: EncryptedWriteBack,
): Promise<WriteBackChanges> {
  const changes: WriteBackChange[] = [];
  const refused: { subject: string; error: string }[] = [];
  // Encrypted again after the loop, together: a file may hold several of them.
  const toEncrypt: ChangedObject[] = [];
  for (const entry of drifted) {
    const object = objects.find((candidate) => candidate.subject === entry.subject);
    if (object === undefined) continue;
    const built = builtFrom(object);
    if (built !== undefined) {
      refused.push({
        subject: entry.subject,
        error: `${entry.subject}: ${built}: objects rendered by kustomize or Helm cannot be written back to Git; change it in Git, or give it a syncTo: kubernetes rule`,
      });
      continue;
    }
    const live = await cluster.get(entry.ref);
    if (live === undefined) continue;
    // An array item's path (`/x/0`, `/x/-`) stands for its list: the whole list is written.
    const paths = [
      ...new Set(entry.patch.map((op) => op.path.replace(/\/(?:\d+|-)(?:\/.*)?$/, ''))),
    ].filter((path) => path !== '' && !NOT_WRITTEN.some((rule) => rule.test(path)));
    if (paths.length === 0) continue;
    if (object.kind === 'Secret' || encrypted?.files.has(object.source.file)) {
      if (encrypted === undefined) {
        refused.push({
          subject: entry.subject,
          error: `${notInPlainText(entry.subject)}; keep it SOPS-encrypted in Git (with the track's decryption) or give it a syncTo: kubernetes rule`,
        });
      } else toEncrypt.push({ object, live, paths });
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
    changes.push({ ...changeOf(object), fields });
  }
  if (toEncrypt.length > 0 && encrypted !== undefined) {
    const why = new Map(toEncrypt.map(({ object }) => [object.subject, encryptedOnly(object)]));
    try {
      const made = await encrypted.changes(toEncrypt);
      changes.push(...made.changes);
      for (const { subject, reason } of made.refused) {
        refused.push({ subject, error: `${why.get(subject)}: ${reason}` });
      }
    } catch (error) {
      for (const { object } of toEncrypt) {
        refused.push({
          subject: object.subject,
          error: `${why.get(object.subject)}: ${messageOf(error)}`,
        });
      }
    }
  }
  return { changes, refused };
}

function notInPlainText(subject: string): string {
  return `${subject}: Secrets are never written back to Git in plain text`;
}

/** Why `object` is written back only encrypted again, opening the reason it is refused. */
function encryptedOnly(object: RenderedObject): string {
  return object.kind === 'Secret'
    ? notInPlainText(object.subject)
    : `${object.subject}: ${object.source.file} is SOPS-encrypted, so its objects are written back only encrypted again`;
}
