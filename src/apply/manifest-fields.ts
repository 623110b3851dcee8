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
  hasChildKeys,
  isPlainObject,
  keyFields,
  setValue,
  type FieldSet,
} from './field-set.ts';
import { formatPointer, isWithin } from './json-pointer.ts';
import { looseContains, looseScalarEqual } from './loose-equal.ts';

/**
 * Parts of a manifest that are identity or not applied, so never in a field
 * set: `/apiVersion`, `/kind`, `/status` ...
 */
const TOP_NOT_APPLIED: ReadonlySet<string> = new Set(['apiVersion', 'kind', 'status']);
/** ... `/metadata/name` and `/metadata/namespace`. */
const METADATA_NOT_APPLIED: ReadonlySet<string> = new Set(['name', 'namespace']);

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

/** Whether the manifest field at `tokens` is identity or not applied ({@link TOP_NOT_APPLIED}). */
function isNotApplied(tokens: readonly string[]): boolean {
  if (tokens.length === 1) return TOP_NOT_APPLIED.has(tokens[0] as string);
  return (
    tokens.length === 2 && tokens[0] === 'metadata' && METADATA_NOT_APPLIED.has(tokens[1] as string)
  );
}

/** What {@link suspectReason}'s walk carries down unchanged. */
interface SuspectWalk {
  readonly ignored: readonly string[];
  readonly options: SuspectOptions;
  /** The manifest coordinates of the node walked: a pointer only when one is needed. */
  readonly tokens: string[];
}

function isIgnored(walk: SuspectWalk): boolean {
  if (walk.ignored.length === 0) return false;
  const pointer = formatPointer(walk.tokens);
  return walk.ignored.some((p) => isWithin(pointer, p));
}

function suspectAt(walk: SuspectWalk, reason: string): string {
  return `${formatPointer(walk.tokens) || '/'}: ${reason}`;
}

function suspectIn(
  walk: SuspectWalk,
  m: unknown,
  node: FieldSet | undefined,
  l: unknown,
): string | undefined {
  if (isNotApplied(walk.tokens) || isIgnored(walk)) return undefined;
  // null in an apply configuration claims nothing.
  if (m === null || m === undefined) return undefined;
  if (!node) return suspectAt(walk, 'not owned by driftless');
  if (!hasChildKeys(node)) {
    const granular = Object.hasOwn(node, '.');
    const empty = Array.isArray(m)
      ? m.length === 0
      : isPlainObject(m) && Object.keys(m).length === 0;
    // A `.`-only node owns an element but none of its fields: ours were taken.
    if (granular && !empty) return suspectAt(walk, 'fields no longer owned by driftless');
    return looseContains(m, l) ? undefined : suspectAt(walk, 'value differs');
  }
  if (Array.isArray(m)) {
    if (!Array.isArray(l)) return suspectAt(walk, 'not a list');
    let previous = -1;
    for (const [index, element] of m.entries()) {
      walk.tokens.push(String(index));
      const reason = suspectInElement(walk, element, index, node, l, previous);
      if (typeof reason === 'string') return reason;
      previous = reason;
      walk.tokens.pop();
    }
    return undefined;
  }
  if (isPlainObject(m)) {
    if (!isPlainObject(l)) return suspectAt(walk, 'not an object');
    for (const name in m) {
      walk.tokens.push(name);
      const reason = suspectIn(walk, m[name], node[`f:${name}`], l[name]);
      if (reason) return reason;
      walk.tokens.pop();
    }
    return undefined;
  }
  return suspectAt(walk, 'a scalar where the server keeps fields');
}

/** A list element's reason, or the live index it was found at (elements come in order). */
function suspectInElement(
  walk: SuspectWalk,
  element: unknown,
  index: number,
  node: FieldSet,
  live: readonly unknown[],
  previous: number,
): string | number {
  if (isIgnored(walk)) return previous;
  const key = keyForElement(node, element, index);
  if (key === undefined) return suspectAt(walk, 'not owned by driftless');
  const liveIndex = elementIndex(live, key);
  if (liveIndex < 0) return suspectAt(walk, 'missing');
  if (walk.options.order && liveIndex < previous) return suspectAt(walk, 'out of order');
  return suspectIn(walk, element, node[key], live[liveIndex]) ?? liveIndex;
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
  // The walk keeps one token list, pushed and popped as it descends: a pointer
  // string per node (formatted, or appended token by token) was most of its time.
  return suspectIn({ ignored, options, tokens: [] }, manifest, set ?? undefined, live);
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
  // One token list, pushed and popped as the walk descends: it becomes a pointer
  // only in the answer (a copy per node was most of this walk's time).
  const tokens: string[] = [];
  const walk = (m: unknown, node: FieldSet): string | undefined => {
    for (const key in node) {
      if (key === '.') continue;
      let value: unknown;
      if (key.startsWith('f:')) {
        const name = key.slice(2);
        tokens.push(name);
        value = isPlainObject(m) ? m[name] : undefined;
      } else {
        const index = Array.isArray(m)
          ? m.findIndex((element, i) => keyForElement(node, element, i) === key)
          : -1;
        tokens.push(index < 0 ? key : String(index));
        value = index < 0 ? undefined : (m as unknown[])[index];
      }
      // null in an apply configuration claims nothing, so an owned field set to null goes.
      if (value === undefined || value === null) {
        return `${formatPointer(tokens)}: owned by driftless but not in the manifest`;
      }
      const reason = walk(value, node[key] as FieldSet);
      if (reason) return reason;
      tokens.pop();
    }
    return undefined;
  };
  return set ? walk(manifest, set) : undefined;
}
