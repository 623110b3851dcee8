/**
 * Objects as YAML for people and for `kubectl apply -f -`: what `driftless
 * render` prints and the dashboard shows of a stored revision.
 */
import { dump } from 'js-yaml';
import type { RenderedBundle } from './types.ts';

/**
 * An object as YAML for people and for `kubectl apply -f -`: no anchors, no
 * folding of long lines, and strings YAML 1.1 would misread (`on`, `0123`)
 * quoted. `sortKeys` gives a stable order, so diffs show content, not order.
 */
export function toYaml(value: unknown, options: { sortKeys?: boolean } = {}): string {
  return dump(value, { noRefs: true, lineWidth: -1, sortKeys: options.sortKeys ?? false });
}

/**
 * The bundle's objects as YAML documents in the bundle's order, each under a
 * comment naming the file and line it came from; `kubectl apply -f -` takes it.
 */
export function formatManifests(bundle: Pick<RenderedBundle, 'objects'>): string {
  return bundle.objects
    .map(
      (o) => `---\n# Source: ${commentPath(o.source.file)}:${o.source.line}\n${toYaml(o.manifest)}`,
    )
    .join('');
}

// Controls (C0, DEL, C1 with NEL), format characters (bidi overrides, BOM), lone
// surrogates, private-use and unassigned code points, and the line and paragraph
// separators: YAML 1.1, as kubectl reads it, ends a line at NEL, LS and PS too.
const UNPRINTABLE = /[\p{C}\p{Zl}\p{Zp}]/u;
const UNPRINTABLE_ALL = /[\p{C}\p{Zl}\p{Zp}]/gu;

/**
 * A file path as a comment can hold it: as it is, or JSON-quoted when it holds
 * a character that could end the comment or hide in a terminal. A path is
 * whatever a commit names, and one with a line break in it would otherwise
 * add documents of its own to what `kubectl apply -f -` reads. A path that
 * starts with `"` is quoted too, so a quoted path is never mistaken for it.
 */
function commentPath(path: string): string {
  if (!UNPRINTABLE.test(path) && !path.startsWith('"')) return path;
  // JSON.stringify escapes C0 controls and lone surrogates; the rest is escaped here.
  return JSON.stringify(path).replace(UNPRINTABLE_ALL, (char) =>
    Array.from(
      { length: char.length },
      (_, i) => `\\u${char.charCodeAt(i).toString(16).padStart(4, '0')}`,
    ).join(''),
  );
}
