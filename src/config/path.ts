/** A location inside a parsed document: object keys and array indexes. */
export type PathSegment = string | number;

/** A problem at a location, before it is tied to a file and formatted. */
export interface LocatedIssue {
  readonly path: PathSegment[];
  readonly message: string;
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/**
 * Formats a path in JS-ish notation (`tracks[2].interval`), the form users
 * recognise from their editor; keys that are not identifiers are quoted.
 */
export function formatPath(segments: readonly PathSegment[]): string {
  let out = '';
  for (const segment of segments) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (IDENTIFIER.test(segment)) out += out === '' ? segment : `.${segment}`;
    else out += `[${JSON.stringify(segment)}]`;
  }
  return out;
}
