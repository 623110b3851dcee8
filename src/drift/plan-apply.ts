/**
 * The object drift re-applies (and dry-runs): the desired object with
 * ignored fields taken out — but only those another manager owns now.
 *
 * Why not drop every ignored field: with server-side apply, leaving out a
 * field we still own (and nobody else does) deletes it — ignoring
 * `/spec/replicas` would reset a Deployment to one replica. A field still
 * ours holds our value anyway (any change by someone else would have moved
 * its ownership), so keeping it reverts nothing; a field someone else took is
 * left out, so SSA leaves it to them.
 */
import type { KubeObject } from '../cluster/kube-object.ts';
import { FIELD_MANAGER, TRACK_LABEL } from '../apply/ownership.ts';
import { appliedFieldSet } from '../apply/field-set.ts';
import {
  formatPointer,
  leavesBelow,
  parsePointer,
  withoutPointers,
} from '../apply/json-pointer.ts';
import { ownsManifestField } from '../apply/manifest-fields.ts';

/** What identifies the object and marks it ours: never left out, whatever a rule says. */
const KEPT = new Set([
  '/apiVersion',
  '/kind',
  '/metadata/name',
  '/metadata/namespace',
  formatPointer(['metadata', 'labels', TRACK_LABEL]),
]);

/** `desired` without the ignored fields that another manager owns on `live`. */
export function planApply(
  desired: KubeObject,
  live: KubeObject | undefined,
  ignored: readonly string[],
): KubeObject {
  if (!live || ignored.length === 0) return desired;
  const set = appliedFieldSet(live, FIELD_MANAGER);
  const drop = ignored
    .flatMap((pointer) => leavesBelow(desired, parsePointer(pointer)))
    .filter((tokens) => !KEPT.has(formatPointer(tokens)))
    .filter((tokens) => !ownsManifestField(desired, set, tokens));
  if (drop.length === 0) return desired;
  return withoutPointers(desired, drop) as KubeObject;
}
