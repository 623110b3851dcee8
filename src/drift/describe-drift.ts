/**
 * What drifted, from two server-normalised forms of one object: the live
 * object and the server's dry-run of our apply. Both are restricted to the
 * fields our apply claims (the dry-run's driftless field set), so defaults,
 * other managers' fields and status never show; both being normalised by the
 * same server, `1000m` against `1` never shows either.
 */
import jsonpatch, { type Operation } from 'fast-json-patch';
import { splitApiVersion, type KubeObject } from '../cluster/kube-object.ts';
import { FIELD_MANAGER } from '../apply/ownership.ts';
import {
  appliedFieldSet,
  differingPaths,
  otherEntries,
  ownsPath,
  project,
  type FieldSet,
} from '../apply/field-set.ts';
import { isWithin, parsePointer, withoutPointers } from '../apply/json-pointer.ts';
import { maskDataValue, maskValue } from '../apply/mask-secret.ts';
import { fieldSetAsStored } from '../apply/secret-string-data.ts';

export interface DriftDescription {
  /** RFC 6902 operations taking the live object's fields to the desired ones. */
  readonly patch: Operation[];
  /** Managers that now own fields which drifted: who (or what) changed them. */
  readonly changedBy: string[];
}

/**
 * Secret values never leave memory: a patch on a Secret's data says that a
 * value changed, and with the mask's digest (apply/mask-secret.ts) that two
 * values differ, never what they are.
 */
function redact(object: KubeObject, patch: Operation[]): Operation[] {
  if (splitApiVersion(object.apiVersion).group !== '' || object.kind !== 'Secret') return patch;
  return patch.map((op) => {
    if (!('value' in op)) return op;
    for (const field of ['data', 'stringData'] as const) {
      if (!isWithin(op.path, `/${field}`)) continue;
      const one = field === 'data' ? maskDataValue : (v: unknown) => maskValue(String(v));
      const value: unknown = op.value;
      if (op.path !== `/${field}`) return { ...op, value: one(value) };
      return {
        ...op,
        value:
          typeof value === 'object' && value !== null
            ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, one(v)]))
            : one(value),
      };
    }
    return op;
  });
}

/**
 * The drift of `live` from `dryRun` (our apply as the server would store it),
 * leaving out `ignored` pointers (evaluated on each object).
 */
export function describeDrift(
  live: KubeObject,
  dryRun: KubeObject,
  ignored: readonly string[],
): DriftDescription {
  const set: FieldSet = fieldSetAsStored(dryRun, appliedFieldSet(dryRun, FIELD_MANAGER)) ?? {};
  const drop = ignored.map(parsePointer);
  const before = withoutPointers(live, drop);
  const after = withoutPointers(dryRun, drop);
  const patch = jsonpatch.compare(project(before, set) as object, project(after, set) as object);
  if (patch.length === 0) return { patch, changedBy: [] };
  const changed = differingPaths(set, before, after);
  const changedBy = otherEntries(live, FIELD_MANAGER)
    .filter((entry) => changed.some((path) => ownsPath((entry.fieldsV1 ?? {}) as FieldSet, path)))
    .map((entry) => entry.manager ?? '(unnamed)');
  return { patch: redact(live, patch), changedBy: [...new Set(changedBy)].sort() };
}
