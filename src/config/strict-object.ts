import { z } from 'zod';

// zod reports unknown keys without the keys it expected; the expected keys ride
// in the message so the issue formatter can suggest the field a typo meant.
const MARKER = 'driftless:known-fields:';

/**
 * `z.strictObject` whose unknown-key issues carry the known field names, so a
 * typo (`intervall`) is reported with the field it probably meant.
 */
export function strictObject<Shape extends z.ZodRawShape>(shape: Shape) {
  const known = JSON.stringify(Object.keys(shape));
  return z.strictObject(shape, {
    error: (issue) => (issue.code === 'unrecognized_keys' ? `${MARKER}${known}` : undefined),
  });
}

/** The known field names stored by {@link strictObject} in an unknown-key issue's message. */
export function knownFields(message: string): string[] {
  if (!message.startsWith(MARKER)) return [];
  const parsed: unknown = JSON.parse(message.slice(MARKER.length));
  return Array.isArray(parsed) ? parsed.filter((k): k is string => typeof k === 'string') : [];
}
