/** What happened to each object in a sync: results are data (fluxcd/pkg ssa's ChangeSet). */

export type ChangeAction =
  'created' | 'configured' | 'unchanged' | 'deleted' | 'skipped' | 'recreated' | 'failed';

export interface ChangeSetEntry {
  /** `Kind/namespace/name` or `Kind/name`. */
  readonly subject: string;
  readonly action: ChangeAction;
  /** Why it failed; starts with the subject. */
  readonly error?: string;
  /** Why it was skipped. */
  readonly reason?: string;
  /** Set when it failed because another track (or something else) owns the object. */
  readonly conflict?: 'ownership';
}

/** True when any entry failed. */
export function hasFailures(changeset: readonly ChangeSetEntry[]): boolean {
  return changeset.some((entry) => entry.action === 'failed');
}
