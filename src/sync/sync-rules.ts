/**
 * Two-way sync rules (gitops-controller): per object, whether Git drives the
 * cluster (`kubernetes`, the default), the cluster drives Git (`git`: a live
 * change is written back), or neither (`ignore`: never applied, corrected,
 * pruned or written back). The first rule that matches decides.
 */
import type { SyncRule, SyncTo, Track } from '../config/types.ts';
import { globMatches } from '../glob.ts';

/** What a rule can look at. */
export interface RuleSubject {
  /** API group, `""` for the core group. */
  readonly group: string;
  /** Plural resource name (`configmaps`). */
  readonly resource: string;
  readonly namespace?: string | undefined;
  readonly name: string;
  /** Undefined when not known (an inventory entry): a rule with `labels` then does not match. */
  readonly labels?: Readonly<Record<string, string>> | undefined;
}

/** Whether every field the rule gives matches `subject`. */
export function ruleMatches(rule: SyncRule, subject: RuleSubject): boolean {
  if (rule.apiGroups && !rule.apiGroups.some((g) => g === '*' || g === subject.group)) {
    return false;
  }
  if (rule.resources && !rule.resources.some((r) => r === '*' || r === subject.resource)) {
    return false;
  }
  if (rule.namespaces) {
    const namespace = subject.namespace;
    if (namespace === undefined || !rule.namespaces.some((n) => globMatches(n, namespace))) {
      return false;
    }
  }
  if (rule.names && !rule.names.some((n) => globMatches(n, subject.name))) return false;
  if (rule.labels) {
    const labels = subject.labels;
    if (labels === undefined) return false;
    if (!Object.entries(rule.labels).every(([key, value]) => labels[key] === value)) return false;
  }
  return true;
}

/** The side that drives `subject`: the first matching rule's, else `kubernetes`. */
export function syncToOf(track: Pick<Track, 'rules'>, subject: RuleSubject): SyncTo {
  return track.rules.find((rule) => ruleMatches(rule, subject))?.syncTo ?? 'kubernetes';
}

/** The index of the rule that decides `subject`, for messages (`rules[1]`). */
export function ruleIndexOf(track: Pick<Track, 'rules'>, subject: RuleSubject): number {
  return track.rules.findIndex((rule) => ruleMatches(rule, subject));
}
