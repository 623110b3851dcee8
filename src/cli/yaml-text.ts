import { dump } from 'js-yaml';

/**
 * An object as YAML for people and for `kubectl apply -f -`: no anchors, no
 * folding of long lines, and strings YAML 1.1 would misread (`on`, `0123`)
 * quoted. `sortKeys` gives a stable order, so diffs show content, not order.
 */
export function toYaml(value: unknown, options: { sortKeys?: boolean } = {}): string {
  return dump(value, { noRefs: true, lineWidth: -1, sortKeys: options.sortKeys ?? false });
}
