/** Unified diffs of two texts, as `diff -u` and `kubectl diff` print them. */
import { createTwoFilesPatch, FILE_HEADERS_ONLY } from 'diff';

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
