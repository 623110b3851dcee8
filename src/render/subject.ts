import { KUSTOMIZATION_FILES } from './kustomization-files.ts';
import type { SourceLocation } from './types.ts';

/**
 * A subject for people: `Kind/namespace/name`, or `Kind/name` without a namespace.
 * Inventory, prune and drift key objects by group, kind, namespace and name instead.
 */
export function formatSubject(kind: string, name: string, namespace?: string): string {
  return namespace === undefined ? `${kind}/${name}` : `${kind}/${namespace}/${name}`;
}

/**
 * Where an object was written, for a message about it: `file:line` in a manifest; the file
 * alone on its first line, and for renderer output, whose lines are not the file's (kustomize's
 * build output is placed at its kustomization, a chart's objects at line 1 of their template).
 */
export function describeSource(source: SourceLocation): string {
  const base = source.file.slice(source.file.lastIndexOf('/') + 1);
  return source.line > 1 && !KUSTOMIZATION_FILES.includes(base)
    ? `${source.file}:${source.line}`
    : source.file;
}
