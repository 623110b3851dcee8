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
