/**
 * Serializes a JSON value with object keys sorted (code-unit order) and no
 * whitespace, so equal values always give equal bytes. Written by hand rather
 * than by rebuilding sorted objects for JSON.stringify, which would mishandle
 * a `__proto__` key and put integer-like keys ("10", "9") in numeric order.
 *
 * One string built by appending, not arrays mapped and joined: it runs for
 * every artifact written and again for every artifact read (its canonical
 * form is checked), and this halves its time.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    const text = JSON.stringify(value);
    if (text === undefined) throw new TypeError(`cannot serialize ${typeof value} as JSON`);
    return text;
  }
  if (Array.isArray(value)) {
    let text = '[';
    for (let index = 0; index < value.length; index++) {
      if (index > 0) text += ',';
      text += canonicalJson(value[index]);
    }
    return `${text}]`;
  }
  const record = value as Record<string, unknown>;
  // The default sort compares UTF-16 code units: the order the format needs.
  const keys = Object.keys(record).sort();
  let text = '{';
  let first = true;
  for (const key of keys) {
    const field = record[key];
    if (field === undefined) continue;
    if (!first) text += ',';
    first = false;
    text += `${JSON.stringify(key)}:${canonicalJson(field)}`;
  }
  return `${text}}`;
}

/** True when every object in `value` already has its keys in code-unit order. */
function keysInOrder(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return true;
  if (Array.isArray(value)) return value.every(keysInOrder);
  const record = value as Record<string, unknown>;
  let previous: string | undefined;
  for (const key of Object.keys(record)) {
    if (previous !== undefined && !(previous < key)) return false;
    if (!keysInOrder(record[key])) return false;
    previous = key;
  }
  return true;
}

/**
 * Whether `text` is `canonicalJson(value)` for a value JSON.parse gave,
 * without building that string when it can: JSON.stringify (native, several
 * times faster) writes keys in the value's own order, so when every object's
 * keys are in order already and it writes `text`, canonicalJson would too.
 * Otherwise — integer-like keys, which V8 keeps in numeric order, or text
 * that is not canonical — canonicalJson itself decides.
 */
export function isCanonicalJson(value: unknown, text: string): boolean {
  if (keysInOrder(value) && JSON.stringify(value) === text) return true;
  return canonicalJson(value) === text;
}
