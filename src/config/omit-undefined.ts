/**
 * A copy of `value` without the keys whose value is `undefined`, so optional
 * settings that were not given are absent rather than present-but-undefined
 * (what `deepStrictEqual`, `in` and JSON output all see).
 */
export function omitUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
