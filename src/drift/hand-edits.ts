/**
 * Fields people added by hand to an object a track owns — a label put on
 * with `kubectl edit`, an annotation from `kubectl annotate`, replicas from
 * `kubectl scale`, the `last-applied-configuration` of a client-side
 * `kubectl apply` — which Git does not set and so would never count as
 * drift. They are found by who wrote them (the managers in `managedFields`),
 * so fields controllers and webhooks write (an HPA's replicas, defaults)
 * stay: only fields that nobody but a by-hand manager owns are undone.
 *
 * Undoing them is server-side apply's own rule: a field the applier owns and
 * no longer applies is removed. So correction first hands those fields to
 * Driftless' apply entry in `managedFields` (one JSON patch, guarded by the
 * resourceVersion read), then applies the revision as usual, as Flux's
 * kustomize-controller does with kubectl's managers.
 */
import jsonpatch from 'fast-json-patch';
import type { Operation } from 'fast-json-patch';
import { manifestAsStored } from '../apply/secret-string-data.ts';
import type { KubeObject, ManagedFieldsEntry } from '../cluster/kube-object.ts';
import {
  childKeys,
  childValue,
  elementIndex,
  isPlainObject,
  project,
  type FieldSet,
} from '../apply/field-set.ts';
import { FIELD_MANAGER } from '../apply/ownership.ts';

/**
 * The field managers kubectl uses for changes made by hand (its subcommands
 * name themselves `kubectl-<command>`; `kubectl apply --server-side`
 * defaults to `kubectl`). A track's `handEditManagers` adds to these.
 */
export const DEFAULT_HAND_EDIT_MANAGERS: readonly string[] = [
  'kubectl',
  'kubectl-edit',
  'kubectl-patch',
  'kubectl-client-side-apply',
  'kubectl-replace',
  'kubectl-create',
  'kubectl-label',
  'kubectl-annotate',
  'kubectl-scale',
  'kubectl-set',
  'kubectl-rollout',
];

/** Every field either set owns. */
export function unionFieldSets(a: FieldSet, b: FieldSet): FieldSet {
  const out: FieldSet = structuredClone(a);
  for (const [key, value] of Object.entries(b)) {
    out[key] = out[key] ? unionFieldSets(out[key], value) : structuredClone(value);
  }
  return out;
}

/**
 * The fields of `a` that `b` does not touch at all. A field `b` owns in part
 * is left out whole: removing it would take `b`'s part with it.
 */
export function subtractFieldSet(a: FieldSet, b: FieldSet): FieldSet {
  const out: FieldSet = {};
  for (const [key, value] of Object.entries(a)) {
    const other = b[key];
    if (other === undefined) {
      out[key] = structuredClone(value);
      continue;
    }
    // Both own something at this node: only children b does not touch are a's alone.
    if (childKeys(value).length === 0 || childKeys(other).length === 0) continue;
    const children: FieldSet = {};
    for (const child of childKeys(value)) children[child] = value[child] as FieldSet;
    const rest = subtractFieldSet(children, other);
    if (Object.keys(rest).length > 0) out[key] = rest;
  }
  return out;
}

function isHandEntry(entry: ManagedFieldsEntry, managers: readonly string[]): boolean {
  return entry.manager !== undefined && managers.includes(entry.manager);
}

/** What the hand-edit managers alone own on `live`, or undefined when nothing. */
export function handOnlyFields(
  live: KubeObject,
  managers: readonly string[],
): { fields: FieldSet; by: string[] } | undefined {
  const entries = live.metadata.managedFields ?? [];
  const hand = entries.filter((entry) => isHandEntry(entry, managers));
  if (hand.length === 0) return undefined;
  const byHand = hand.reduce<FieldSet>(
    (set, entry) => unionFieldSets(set, (entry.fieldsV1 ?? {}) as FieldSet),
    {},
  );
  const byOthers = entries
    .filter((entry) => !isHandEntry(entry, managers))
    .reduce<FieldSet>((set, entry) => unionFieldSets(set, (entry.fieldsV1 ?? {}) as FieldSet), {});
  const fields = subtractFieldSet(byHand, byOthers);
  // Only the object's own bookkeeping left (`.` markers, an empty metadata): nothing to undo.
  if (leafCount(fields) === 0) return undefined;
  const by = [...new Set(hand.map((entry) => entry.manager ?? '(unnamed)'))].sort();
  return { fields, by };
}

function leafCount(set: FieldSet): number {
  const keys = childKeys(set);
  if (keys.length === 0) return 1;
  return keys.reduce((sum, key) => sum + leafCount(set[key] as FieldSet), 0);
}

/**
 * `fields` without those `desired` sets: a field Git sets that was changed
 * by hand is drift of the ordinary kind (put back, not removed).
 */
export function withoutDesiredFields(fields: FieldSet, desired: unknown): FieldSet {
  const out: FieldSet = {};
  for (const key of Object.keys(fields)) {
    const below = fields[key] as FieldSet;
    if (key === '.') {
      out[key] = below;
      continue;
    }
    const value = childValue(desired, key);
    if (value === undefined) {
      out[key] = structuredClone(below);
      continue;
    }
    if (childKeys(below).length === 0) continue;
    const rest = withoutDesiredFields(below, value);
    if (childKeys(rest).length > 0) out[key] = rest;
  }
  return out;
}

/** `fields` without what the ignore pointers name (pointers of plain object keys). */
export function withoutIgnored(fields: FieldSet, pointers: readonly string[]): FieldSet {
  const out = structuredClone(fields);
  for (const pointer of pointers) {
    const segments = pointer
      .split('/')
      .slice(1)
      .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
    const path: FieldSet[] = [];
    let node: FieldSet | undefined = out;
    for (const segment of segments.slice(0, -1)) {
      if (node === undefined) break;
      path.push(node);
      node = node[`f:${segment}`];
    }
    if (node === undefined || !(`f:${segments.at(-1)}` in node)) continue;
    delete node[`f:${segments.at(-1)}`];
    // A parent left empty would read as owned whole: drop it too (`.` alone means nothing here).
    for (let depth = path.length - 1; depth >= 0; depth--) {
      const key = `f:${segments[depth]}`;
      const child = path[depth]![key];
      if (child === undefined || childKeys(child).length > 0) break;
      delete path[depth]![key];
    }
  }
  return out;
}

/**
 * The hand-added fields of `live` that are drift: only by-hand managers own
 * them, Git does not set them (those are put back, not removed) and no ignore
 * rule names them. Detection reports these; correction takes over exactly
 * these, read again from the object it is about to patch.
 */
export function handAddedFields(
  live: KubeObject,
  desired: KubeObject,
  managers: readonly string[],
  ignored: readonly string[],
): { fields: FieldSet; by: string[] } | undefined {
  const hand = handOnlyFields(live, managers);
  if (hand === undefined) return undefined;
  // Git's fields as the server stores them: a Secret's stringData is its data, and a key
  // patched by hand that Git sets in stringData is put back, not removed.
  const fields = withoutStructMarkers(
    withoutIgnored(withoutDesiredFields(hand.fields, manifestAsStored(desired)), ignored),
  );
  return childKeys(fields).length === 0 ? undefined : { fields, by: hand.by };
}

/**
 * `fields` without the `.` of maps and structs: owning a map's own node
 * would make the apply remove the whole map, with entries nobody asked to
 * remove (an ignored annotation). List elements keep theirs: removing an
 * element added by hand needs it.
 */
function withoutStructMarkers(fields: FieldSet, element = false): FieldSet {
  const out: FieldSet = {};
  for (const [key, below] of Object.entries(fields)) {
    if (key === '.') {
      if (element) out[key] = below;
      continue;
    }
    const isElement = !key.startsWith('f:');
    const whole = childKeys(below).length === 0 && !('.' in below);
    if (whole) {
      out[key] = below;
      continue;
    }
    const rest = withoutStructMarkers(below, isElement);
    if (Object.keys(rest).length > 0) out[key] = rest;
  }
  return out;
}

/** `value` without the fields `set` names (a copy). */
export function withoutFields(value: unknown, set: FieldSet): unknown {
  const copy = structuredClone(value);
  const strip = (node: unknown, fields: FieldSet): void => {
    for (const key of childKeys(fields)) {
      const below = fields[key] as FieldSet;
      const whole = childKeys(below).length === 0;
      if (key.startsWith('f:') && isPlainObject(node)) {
        const name = key.slice(2);
        if (!Object.hasOwn(node, name)) continue;
        if (whole) delete node[name];
        else strip(node[name], below);
      } else if (Array.isArray(node)) {
        const index = elementIndex(node, key);
        if (index < 0) continue;
        if (whole) node.splice(index, 1);
        else strip(childValue(node, key), below);
      }
    }
  };
  strip(copy, set);
  return copy;
}

/** The hand-added fields as RFC 6902 operations that take them away (for reports). */
export function removalPatch(live: KubeObject, fields: FieldSet): Operation[] {
  const shown = project(live, fields) as object;
  return jsonpatch.compare(shown, withoutFields(shown, fields) as object);
}

/**
 * `live`'s managedFields with `fields` moved from the hand-edit managers'
 * entries to Driftless' apply entry: the next apply, which does not carry
 * them, then removes them. What else those entries own stays theirs (an
 * ignored annotation): a field nobody owns would go with the map it is in.
 */
export function takeOverHandFields(
  live: KubeObject,
  managers: readonly string[],
  fields: FieldSet,
): ManagedFieldsEntry[] {
  const entries = structuredClone(live.metadata.managedFields ?? []);
  const kept = entries.flatMap((entry) => {
    if (!isHandEntry(entry, managers)) return [entry];
    const rest = subtractFieldSet((entry.fieldsV1 ?? {}) as FieldSet, fields);
    return childKeys(rest).length === 0 ? [] : [{ ...entry, fieldsV1: rest }];
  });
  const ours = kept.find(
    (entry) => entry.manager === FIELD_MANAGER && entry.operation === 'Apply' && !entry.subresource,
  );
  if (ours) {
    ours.fieldsV1 = unionFieldSets((ours.fieldsV1 ?? {}) as FieldSet, fields);
    return kept;
  }
  return [
    ...kept,
    {
      manager: FIELD_MANAGER,
      operation: 'Apply',
      apiVersion: live.apiVersion,
      time: new Date().toISOString(),
      fieldsType: 'FieldsV1',
      fieldsV1: fields,
    },
  ];
}
