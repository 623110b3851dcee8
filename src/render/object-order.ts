/** The fields that identify an object within a revision. */
export interface ObjectKey {
  readonly group: string;
  readonly kind: string;
  readonly namespace?: string | undefined;
  readonly name: string;
}

function compareStrings(a: string, b: string): number {
  // Code-unit order: never depends on the runtime's locale.
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Canonical bundle order: group, kind, namespace (cluster-scoped first), name. */
export function compareObjectKeys(a: ObjectKey, b: ObjectKey): number {
  return (
    compareStrings(a.group, b.group) ||
    compareStrings(a.kind, b.kind) ||
    compareStrings(a.namespace ?? '', b.namespace ?? '') ||
    compareStrings(a.name, b.name)
  );
}

/** A string identity for maps and duplicate checks (NUL cannot occur in these fields' uses). */
export function objectIdentity(object: ObjectKey): string {
  return [object.group, object.kind, object.namespace ?? '', object.name].join('\u0000');
}
