/**
 * The few JSON pointer (RFC 6901) operations ignore rules need: read, list
 * the leaves below, and drop values without disturbing list positions until
 * every drop is done.
 */
import { isPlainObject } from './field-set.ts';

/** `/a/b~1c` -> `['a', 'b/c']`; `''` is the whole document. */
export function parsePointer(pointer: string): string[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((token) => token.replaceAll('~1', '/').replaceAll('~0', '~'));
}

export function formatPointer(tokens: readonly string[]): string {
  let pointer = '';
  for (const token of tokens) pointer = appendToken(pointer, token);
  return pointer;
}

/** `pointer` with `token` appended, escaped. */
function appendToken(pointer: string, token: string): string {
  const escaped =
    token.includes('~') || token.includes('/')
      ? token.replaceAll('~', '~0').replaceAll('/', '~1')
      : token;
  return `${pointer}/${escaped}`;
}

/** True when `pointer` is `prefix` or lies below it. */
export function isWithin(pointer: string, prefix: string): boolean {
  return pointer === prefix || pointer.startsWith(`${prefix}/`);
}

function step(value: unknown, token: string): unknown {
  if (Array.isArray(value)) {
    return /^(0|[1-9]\d*)$/.test(token) ? value[Number(token)] : undefined;
  }
  return isPlainObject(value) && Object.hasOwn(value, token) ? value[token] : undefined;
}

/** The value at `tokens`, or undefined. */
export function valueAt(document: unknown, tokens: readonly string[]): unknown {
  let value = document;
  for (const token of tokens) {
    value = step(value, token);
    if (value === undefined) return undefined;
  }
  return value;
}

/** Pointers (as tokens) to every leaf below `tokens`: scalars and empty objects or lists. */
export function leavesBelow(document: unknown, tokens: readonly string[]): string[][] {
  const value = valueAt(document, tokens);
  if (value === undefined) return [];
  const out: string[][] = [];
  const walk = (node: unknown, path: string[]): void => {
    const entries = Array.isArray(node)
      ? node.map((v, i) => [String(i), v] as const)
      : isPlainObject(node)
        ? Object.entries(node)
        : [];
    if (entries.length === 0) {
      out.push(path);
      return;
    }
    for (const [key, child] of entries) walk(child, [...path, key]);
  };
  walk(value, [...tokens]);
  return out;
}

/**
 * A copy of `document` without the values at `drop`. Objects and lists left
 * empty by a drop go too (they were not empty in the manifest), so a partial
 * drop never turns into "this map is empty".
 */
export function withoutPointers(document: unknown, drop: readonly (readonly string[])[]): unknown {
  const REMOVED = Symbol('removed');
  const copy = structuredClone(document);
  for (const tokens of drop) {
    if (tokens.length === 0) continue;
    const parent = valueAt(copy, tokens.slice(0, -1));
    const last = tokens[tokens.length - 1] as string;
    if (Array.isArray(parent) && step(parent, last) !== undefined) {
      (parent as unknown[])[Number(last)] = REMOVED;
    } else if (isPlainObject(parent) && Object.hasOwn(parent, last)) {
      parent[last] = REMOVED;
    }
  }
  const strip = (node: unknown): unknown => {
    if (Array.isArray(node)) {
      const kept = node.filter((v) => v !== REMOVED).map(strip);
      const left = kept.filter((v) => v !== REMOVED);
      return left.length === 0 && node.length > 0 ? REMOVED : left;
    }
    if (isPlainObject(node)) {
      const out: Record<string, unknown> = {};
      let had = false;
      for (const [key, value] of Object.entries(node)) {
        had = true;
        const stripped = value === REMOVED ? REMOVED : strip(value);
        if (stripped !== REMOVED) out[key] = stripped;
      }
      return had && Object.keys(out).length === 0 ? REMOVED : out;
    }
    return node;
  };
  const result = strip(copy);
  return result === REMOVED ? {} : result;
}
