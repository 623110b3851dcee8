import type { JsonObject } from './types.ts';

/** A plain mapping (not an array, not null), as YAML mappings and JSON objects load. */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A copy of `document` with `value` at `tokens` (undefined: removed there), maps copied along
 * the way and made where missing. For pointers that name map keys only (a write-back's: a
 * changed list is written whole), as the write-back edits files and the sync tells its own
 * writes from Git's changes (sync/own-writes.ts).
 */
export function withValueAt(document: unknown, tokens: readonly string[], value: unknown): unknown {
  if (tokens.length === 0) return value;
  const [token, ...rest] = tokens as [string, ...string[]];
  const map: Record<string, unknown> = isJsonObject(document) ? { ...document } : {};
  const inner = withValueAt(map[token], rest, value);
  if (inner === undefined) delete map[token];
  else map[token] = inner;
  return map;
}

/**
 * Finds the first value that JSON cannot carry faithfully, as a JSON-pointer-like
 * path and a reason: `.inf`/`.nan`, and integers beyond 2^53 that would silently
 * lose digits (the API server would see a different number than Git holds).
 */
export function findNonJsonValue(value: unknown, path = ''): string | undefined {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return `${path || '/'}: ${value} is not a JSON number`;
    if (Number.isInteger(value) && !Number.isSafeInteger(value)) {
      return `${path || '/'}: integer ${value} is too large to keep exactly; quote it`;
    }
    return undefined;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findNonJsonValue(value[i], `${path}/${i}`);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (isJsonObject(value)) {
    for (const key of Object.keys(value)) {
      const found = findNonJsonValue(
        value[key],
        `${path}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`,
      );
      if (found !== undefined) return found;
    }
  }
  return undefined;
}
