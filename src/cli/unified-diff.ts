/** Unified diffs of two texts, as `diff -u` and `kubectl diff` print them. */
import { createTwoFilesPatch, FILE_HEADERS_ONLY } from 'diff';
import type { Palette } from './colours.ts';

/**
 * The unified diff from `before` to `after` with three lines of context, under
 * `--- beforeName` / `+++ afterName` headers; `''` when the texts are equal.
 */
export function unifiedDiff(
  beforeName: string,
  afterName: string,
  before: string,
  after: string,
): string {
  if (before === after) return '';
  return createTwoFilesPatch(beforeName, afterName, before, after, undefined, undefined, {
    context: 3,
    headerOptions: FILE_HEADERS_ONLY,
  });
}

/** The diff with removals red, additions green and hunk headers cyan. */
export function colourDiff(diff: string, colours: Palette): string {
  if (!colours.enabled) return diff;
  return diff
    .split('\n')
    .map((line) => {
      if (line.startsWith('---') || line.startsWith('+++')) return colours.bold(line);
      if (line.startsWith('@@')) return colours.cyan(line);
      if (line.startsWith('-')) return colours.red(line);
      if (line.startsWith('+')) return colours.green(line);
      return line;
    })
    .join('\n');
}
