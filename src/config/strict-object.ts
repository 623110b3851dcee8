// A namespace import, not `import { z }`: the `z` object re-exported by
// zod/mini holds the whole library (every locale included), so bundlers keep
// all of it; a namespace import lets esbuild keep only what is used.
import * as z from 'zod/mini';

// zod reports unknown keys without the keys it expected; the expected keys ride
// in the message so the issue formatter can suggest the field a typo meant.
const MARKER = 'driftless:known-fields:';

/**
 * `z.strictObject` whose unknown-key issues carry the known field names, so a
 * typo (`intervall`) is reported with the field it probably meant.
 */
export function strictObject<Shape extends z.core.$ZodLooseShape>(shape: Shape) {
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
