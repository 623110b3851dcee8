/**
 * Walks a manifest (as written in Git) alongside our field set and the live
 * object (as the server normalised them). Lenient where the two forms may
 * legitimately differ — list keys include defaulted fields (`protocol: TCP`),
 * quantities are canonicalised — because what this finds are only suspects
 * (or, for ignore rules, whether we still own a field).
 */
import {
  childKeys,
  elementIndex,
  isPlainObject,
  keyFields,
  setValue,
  type FieldSet,
} from './field-set.ts';
import { appendToken, formatPointer, isWithin } from './json-pointer.ts';
import { looseContains, looseScalarEqual } from './loose-equal.ts';

/** Parts of a manifest that are identity or not applied, so never in a field set. */
const NOT_APPLIED = new Set([
  '/apiVersion',
  '/kind',
  '/status',
  '/metadata/name',
  '/metadata/namespace',
]);

/** The key of `set` naming the manifest list element `element` (at `index`), if any. */
function keyForElement(set: FieldSet, element: unknown, index: number): string | undefined {
  for (const key of childKeys(set)) {
    const fields = keyFields(key);
    if (fields) {
      if (!isPlainObject(element)) continue;
      const entries = Object.entries(fields);
      // A key field missing from the manifest was defaulted by the server (`protocol: TCP`).
      const given = entries.filter(([name]) => element[name] !== undefined);
      if (
        given.length > 0 &&
        given.every(([name, value]) => looseScalarEqual(element[name], value))
      ) {
        return key;
      }
      continue;
    }
    const set_ = setValue(key);
    if (set_.found && looseContains(element, set_.value)) return key;
    if (key === `i:${index}`) return key;
  }
  return undefined;
}

/**
 * True when `set` still owns the manifest field at `tokens` (manifest
 * coordinates: list indexes count in the manifest's lists).
 */
export function ownsManifestField(
  manifest: unknown,
  set: FieldSet | undefined,
  tokens: readonly string[],
): boolean {
  let node = set;
  let value = manifest;
  for (const token of tokens) {
    if (!node) return false;
    // An atomic struct, map or list: owned whole, so every part of it is ours.
    if (Object.keys(node).length === 0) return true;
    if (Array.isArray(value)) {
      const index = Number(token);
      const key = keyForElement(node, value[index], index);
      node = key === undefined ? undefined : node[key];
      value = value[index];
    } else {
      node = node[`f:${token}`];
      value = isPlainObject(value) ? value[token] : undefined;
    }
  }
  return node !== undefined;
}

export interface SuspectOptions {
  /**
   * Also suspect keyed list elements that the live list holds in another
   * order than the manifest (a reordered `env`, whose order matters). Off for
   * drift, whose dry-run settles such suspects anyway.
   */
  readonly order?: boolean;
}

/**
 * Why the live object may have drifted from `manifest`, or undefined when
 * every manifest field is still ours and still holds its value. `ignored`
 * pointers are skipped.
 */
export function suspectReason(
  manifest: unknown,
  set: FieldSet | undefined,
  live: unknown,
  ignored: readonly string[],
  options: SuspectOptions = {},
): string | undefined {
  // The pointer is built as the walk descends, one token at a time: formatting
  // it from a token list at every node cost more than the rest of the walk.
  const walk = (
    m: unknown,
    node: FieldSet | undefined,
    l: unknown,
    pointer: string,
  ): string | undefined => {
    if (NOT_APPLIED.has(pointer) || ignored.some((p) => isWithin(pointer, p))) return undefined;
    // null in an apply configuration claims nothing.
    if (m === null || m === undefined) return undefined;
    if (!node) return `${pointer || '/'}: not owned by driftless`;
    if (childKeys(node).length === 0) {
      const granular = Object.hasOwn(node, '.');
      const empty = Array.isArray(m)
        ? m.length === 0
        : isPlainObject(m) && Object.keys(m).length === 0;
      // A `.`-only node owns an element but none of its fields: ours were taken.
      if (granular && !empty) return `${pointer}: fields no longer owned by driftless`;
      return looseContains(m, l) ? undefined : `${pointer}: value differs`;
    }
    if (Array.isArray(m)) {
      if (!Array.isArray(l)) return `${pointer}: not a list`;
      let previous = -1;
      for (const [index, element] of m.entries()) {
        const at = `${pointer}/${index}`;
        if (ignored.some((p) => isWithin(at, p))) continue;
        const key = keyForElement(node, element, index);
        if (key === undefined) return `${at}: not owned by driftless`;
        const liveIndex = elementIndex(l, key);
        if (liveIndex < 0) return `${at}: missing`;
        if (options.order && liveIndex < previous) return `${at}: out of order`;
        previous = liveIndex;
        const reason = walk(element, node[key], l[liveIndex], at);
        if (reason) return reason;
      }
      return undefined;
    }
    if (isPlainObject(m)) {
      if (!isPlainObject(l)) return `${pointer}: not an object`;
      for (const name of Object.keys(m)) {
        const reason = walk(m[name], node[`f:${name}`], l[name], appendToken(pointer, name));
        if (reason) return reason;
      }
      return undefined;
    }
    return `${pointer}: a scalar where the server keeps fields`;
  };
  return walk(manifest, set ?? undefined, live, '');
}

/**
 * The first field `set` owns that `manifest` does not set, as a pointer with
 * the reason, or undefined when every owned field is one of the manifest's.
 * The reverse of {@link suspectReason}: together they tell that a field set is
 * exactly a manifest's, so applying the manifest would release nothing.
 */
export function ownedBeyondManifest(
  manifest: unknown,
  set: FieldSet | undefined,
): string | undefined {
  const walk = (m: unknown, node: FieldSet, tokens: string[]): string | undefined => {
    for (const key of childKeys(node)) {
      let value: unknown;
      let at: string[];
      if (key.startsWith('f:')) {
        at = [...tokens, key.slice(2)];
        value = isPlainObject(m) ? m[key.slice(2)] : undefined;
      } else {
        const index = Array.isArray(m)
          ? m.findIndex((element, i) => keyForElement(node, element, i) === key)
          : -1;
        at = [...tokens, index < 0 ? key : String(index)];
        value = index < 0 ? undefined : (m as unknown[])[index];
      }
      // null in an apply configuration claims nothing, so an owned field set to null goes.
      if (value === undefined || value === null) {
        return `${formatPointer(at)}: owned by driftless but not in the manifest`;
      }
      const reason = walk(value, node[key] as FieldSet, at);
      if (reason) return reason;
    }
    return undefined;
  };
  return set ? walk(manifest, set, []) : undefined;
}
