/** Unified diffs coloured for a terminal (src/unified-diff.ts makes them). */
import type { Palette } from './colours.ts';

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
