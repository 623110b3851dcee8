import type * as z from 'zod/mini';
import { closestName } from './closest-name.ts';
import { describeValue } from './describe-value.ts';
import type { LocatedIssue, PathSegment } from './path.ts';
import { knownFields } from './strict-object.ts';

/** Maps a path inside the validated object to the path the user wrote (e.g. inside a GitTrack). */
export type PathMapper = (path: readonly PathSegment[]) => PathSegment[];

const EXPECTED: Readonly<Record<string, string>> = {
  string: 'a string',
  number: 'a number',
  boolean: 'true or false',
  array: 'a list',
  object: 'a mapping',
  record: 'a mapping',
};

/**
 * `"yes" is not auto, true or false`: what each alternative of a union of
 * plain values and types accepts, or undefined for unions of other shapes.
 */
function unionMessage(issue: z.core.$ZodIssue): string | undefined {
  const branches = (issue as { errors?: readonly (readonly z.core.$ZodIssue[])[] }).errors ?? [];
  const accepted: string[] = [];
  for (const [first, ...rest] of branches) {
    if (first === undefined || rest.length > 0 || first.path.length > 0) return undefined;
    if (first.code === 'invalid_value') accepted.push(...first.values.map(String));
    else if (first.code === 'invalid_type' && first.expected === 'boolean')
      accepted.push('true', 'false');
    else if (first.code === 'invalid_type')
      accepted.push(EXPECTED[first.expected] ?? first.expected);
    else return undefined;
  }
  if (accepted.length === 0) return undefined;
  const list =
    accepted.length === 1
      ? accepted[0]
      : `${accepted.slice(0, -1).join(', ')} or ${accepted.at(-1)}`;
  return `${describeValue(issue.input)} is not ${list}`;
}

/**
 * Turns zod issues into located issues with messages in Driftless' style:
 * the offending value quoted, YAML words (list, mapping) rather than JS ones,
 * one issue per unknown field with a "did you mean" when a known field is close.
 */
export function toLocatedIssues(
  issues: readonly z.core.$ZodIssue[],
  mapPath: PathMapper,
): LocatedIssue[] {
  const out: LocatedIssue[] = [];
  const add = (path: readonly PathSegment[], message: string): void => {
    out.push({ path: mapPath(path), message });
  };
  for (const issue of issues) {
    const path = issue.path.filter((s): s is PathSegment => typeof s !== 'symbol');
    switch (issue.code) {
      case 'unrecognized_keys': {
        const known = knownFields(issue.message);
        for (const key of issue.keys) {
          const suggestion = closestName(key, known);
          add(
            [...path, key],
            suggestion ? `unknown field; did you mean ${suggestion}?` : 'unknown field',
          );
        }
        break;
      }
      case 'invalid_type':
        add(
          path,
          issue.input === undefined
            ? 'is required'
            : `${describeValue(issue.input)} is not ${EXPECTED[issue.expected] ?? issue.expected}`,
        );
        break;
      case 'invalid_value':
        add(
          path,
          `${describeValue(issue.input)} is not one of ${issue.values.map(String).join(', ')}`,
        );
        break;
      case 'invalid_union': {
        const discriminator = (issue as { discriminator?: unknown }).discriminator;
        const options = (issue as { options?: unknown }).options;
        if (typeof discriminator === 'string' && Array.isArray(options)) {
          const input = issue.input as Record<string, unknown> | undefined;
          const value =
            typeof input === 'object' && input !== null ? input[discriminator] : undefined;
          const list = options.map(String).join(', ');
          add(
            path,
            value === undefined
              ? `is required (one of ${list})`
              : `${describeValue(value)} is not one of ${list}`,
          );
        } else {
          add(path, unionMessage(issue) ?? issue.message);
        }
        break;
      }
      case 'invalid_key': {
        // A mapping's key refused (a `substitute:` variable name): its own check's words.
        const inner = (issue as { issues?: readonly { message?: string }[] }).issues?.[0];
        add(path, inner?.message ?? issue.message);
        break;
      }
      case 'too_small':
        add(path, issue.origin === 'array' ? 'must not be an empty list' : 'must not be empty');
        break;
      default:
        add(path, issue.message);
    }
  }
  return out;
}
