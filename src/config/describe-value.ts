/**
 * Quotes a value for an error message: strings in double quotes, scalars as
 * written, collections by kind so a large mapping never floods the message.
 */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  if (typeof value === 'object') return 'a mapping';
  return String(value);
}
