/**
 * Server-side apply's field sets (`managedFields[].fieldsV1`): which fields a
 * manager owns, in the server's own terms. Drift uses them to tell our fields
 * from everyone else's, so defaults, controllers and other tools never count.
 *
 * A field set is a tree of keys: `f:<name>` a struct or map field, `k:{json}`
 * an associative-list element by its key fields, `v:<json>` a set element by
 * value, `i:<n>` a list element by position, and `.` the node itself. A node
 * without children (other than `.`) is owned whole.
 */
import type { KubeObject, ManagedFieldsEntry } from '../cluster/kube-object.ts';

export interface FieldSet {
  [key: string]: FieldSet;
}

/** `manager`'s server-side apply entry on the main resource, if any. */
export function appliedEntry(object: KubeObject, manager: string): ManagedFieldsEntry | undefined {
  return object.metadata.managedFields?.find(
    (e) => e.manager === manager && e.operation === 'Apply' && !e.subresource,
  );
}

/** The field set `manager` owns through server-side apply on the main resource, if any. */
export function appliedFieldSet(object: KubeObject, manager: string): FieldSet | undefined {
  return appliedEntry(object, manager)?.fieldsV1 as FieldSet | undefined;
}

/** Every manager's entry but `manager`'s own. */
export function otherEntries(object: KubeObject, manager: string): ManagedFieldsEntry[] {
  return (object.metadata.managedFields ?? []).filter((e) => e.manager !== manager);
}

/** The keys below a node, without `.`. */
export function childKeys(set: FieldSet): string[] {
  return Object.keys(set).filter((key) => key !== '.');
}

/** Whether `set` has a child other than `.`: `childKeys(set).length > 0` without the list. */
export function hasChildKeys(set: FieldSet): boolean {
  for (const key in set) if (key !== '.') return true;
  return false;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Structural equality of JSON values. */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((v, i) => deepEqual(v, b[i]));
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = Object.keys(a);
    return (
      keys.length === Object.keys(b).length &&
      keys.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]))
    );
  }
  return false;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The key fields of a `k:{json}` key, or undefined for other keys. */
export function keyFields(key: string): Record<string, unknown> | undefined {
  if (!key.startsWith('k:')) return undefined;
  const fields = parseJson(key.slice(2));
  return isPlainObject(fields) ? fields : undefined;
}

/** The value of a `v:<json>` key; `{ found: false }` for other keys. */
export function setValue(key: string): { found: boolean; value?: unknown } {
  if (!key.startsWith('v:')) return { found: false };
  return { found: true, value: parseJson(key.slice(2)) };
}

/**
 * The index of the element of `list` a list key names, or -1. Matching is
 * exact: both sides come from the server, in its normalised form.
 */
export function elementIndex(list: readonly unknown[], key: string): number {
  const fields = keyFields(key);
  if (fields) {
    return list.findIndex(
      (element) =>
        isPlainObject(element) &&
        Object.entries(fields).every(([name, value]) => deepEqual(element[name], value)),
    );
  }
  const set = setValue(key);
  if (set.found) return list.findIndex((element) => deepEqual(element, set.value));
  if (key.startsWith('i:')) {
    const index = Number(key.slice(2));
    return Number.isInteger(index) && index < list.length ? index : -1;
  }
  return -1;
}

/** The part of `value` a field-set key names, or undefined when it is absent. */
export function childValue(value: unknown, key: string): unknown {
  if (key.startsWith('f:')) {
    return isPlainObject(value) ? value[key.slice(2)] : undefined;
  }
  if (Array.isArray(value)) {
    const index = elementIndex(value, key);
    return index < 0 ? undefined : value[index];
  }
  return undefined;
}

/**
 * The part of `value` the field set covers, nothing else. List elements keep
 * their relative order in `value`, so two projections of similar objects line
 * up element by element.
 */
export function project(value: unknown, set: FieldSet): unknown {
  const keys = childKeys(set);
  if (keys.length === 0) return structuredClone(value);
  if (Array.isArray(value)) {
    const picked: { index: number; value: unknown }[] = [];
    for (const key of keys) {
      const index = elementIndex(value, key);
      if (index >= 0) picked.push({ index, value: project(value[index], set[key] as FieldSet) });
    }
    return picked.sort((a, b) => a.index - b.index).map((p) => p.value);
  }
  if (isPlainObject(value)) {
    const out: Record<string, unknown> = {};
    for (const key of keys) {
      if (!key.startsWith('f:')) continue;
      const name = key.slice(2);
      if (Object.hasOwn(value, name)) out[name] = project(value[name], set[key] as FieldSet);
    }
    return out;
  }
  // The set expects children but the value is a scalar (or gone): keep it, so a diff shows it.
  return structuredClone(value);
}

/**
 * The field paths (as field-set keys) below `set` whose values differ between
 * `a` and `b`: the leaves the set owns, compared whole.
 */
export function differingPaths(set: FieldSet, a: unknown, b: unknown): string[][] {
  const out: string[][] = [];
  const walk = (node: FieldSet, x: unknown, y: unknown, path: string[]): void => {
    const keys = childKeys(node);
    if (keys.length === 0) {
      if (!deepEqual(x, y)) out.push(path);
      return;
    }
    for (const key of keys) {
      walk(node[key] as FieldSet, childValue(x, key), childValue(y, key), [...path, key]);
    }
  };
  walk(set, a, b, []);
  return out;
}

/**
 * True when `set` owns the field at `path` or part of it: the path itself, an
 * ancestor owned whole, or something below it.
 */
export function ownsPath(set: FieldSet, path: readonly string[]): boolean {
  let node = set;
  for (const [depth, key] of path.entries()) {
    const next = node[key];
    // An empty node (no `.` either) owns its whole value, atomic structs and lists included.
    if (!next) return depth > 0 && Object.keys(node).length === 0;
    node = next;
  }
  return true;
}
