/**
 * A track's drift ignore rules (Argo CD's ignoreDifferences): which JSON
 * pointers are out of drift's reach on a given object.
 */
import { splitApiVersion, subjectOf, refOf, type KubeObject } from '../cluster/kube-object.ts';
import type { IgnoreRule } from '../config/types.ts';
import { DriftlessError } from '../errors.ts';
import { parseLabelSelector } from '../config/label-selector.ts';

/** An ignore rule that cannot be applied (an unreadable label selector). */
export class InvalidIgnoreRuleError extends DriftlessError {
  readonly code = 'INVALID_IGNORE_RULE';
}

function matches(rule: IgnoreRule, object: KubeObject): boolean {
  const { target } = rule;
  const { group, version } = splitApiVersion(object.apiVersion);
  if (target.group !== undefined && target.group !== group) return false;
  if (target.version !== undefined && target.version !== version) return false;
  if (target.kind !== undefined && target.kind !== object.kind) return false;
  if (target.name !== undefined && target.name !== object.metadata.name) return false;
  if (target.namespace !== undefined && target.namespace !== object.metadata.namespace)
    return false;
  if (target.labelSelector !== undefined) {
    let selects: ReturnType<typeof parseLabelSelector>;
    try {
      selects = parseLabelSelector(target.labelSelector);
    } catch (error) {
      throw new InvalidIgnoreRuleError(
        `${subjectOf(refOf(object))}: ignore rule labelSelector: ${(error as Error).message}`,
        { cause: error },
      );
    }
    if (!selects(object.metadata.labels ?? {})) return false;
  }
  return true;
}

/**
 * The JSON pointers ignored on `object` (its manifest, labels as in Git),
 * without duplicates.
 */
export function ignoredPointers(rules: readonly IgnoreRule[], object: KubeObject): string[] {
  const pointers = new Set<string>();
  for (const rule of rules) {
    if (matches(rule, object)) for (const path of rule.paths) pointers.add(path);
  }
  return [...pointers];
}
