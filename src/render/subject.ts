/**
 * A subject for people: `Kind/namespace/name`, or `Kind/name` without a namespace.
 * Inventory, prune and drift key objects by group, kind, namespace and name instead.
 */
export function formatSubject(kind: string, name: string, namespace?: string): string {
  return namespace === undefined ? `${kind}/${name}` : `${kind}/${namespace}/${name}`;
}
