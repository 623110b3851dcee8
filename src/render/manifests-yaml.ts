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
    .map((o) => `---\n# Source: ${o.source.file}:${o.source.line}\n${toYaml(o.manifest)}`)
    .join('');
}
