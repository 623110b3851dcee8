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
  /**
   * Set when it was not sent because the API server refuses other objects of the revision
   * (apply-objects.ts): it failed for their sake, not its own.
   */
  readonly heldBack?: true;
}

/** True when any entry failed. */
export function hasFailures(changeset: readonly ChangeSetEntry[]): boolean {
  return changeset.some((entry) => entry.action === 'failed');
}

/** Work a stop request cut short (errors.ts): why, and the objects nothing was sent for. */
export interface Interrupted {
  readonly reason: string;
  readonly notSent: readonly string[];
}

/**
 * The failed entries' errors for people, joined with `; `; empty when nothing failed. The
 * objects an interruption left unsent are counted in one clause first (`interrupted by SIGINT:
 * 15 of 20 objects not applied`), not listed one by one.
 */
export function describeFailures(
  changeset: readonly ChangeSetEntry[],
  stopped?: {
    readonly interrupted: Interrupted;
    readonly of: number;
    readonly verb: 'applied' | 'deleted';
  },
): string {
  const notSent = new Set(stopped?.interrupted.notSent);
  const failed = changeset.filter(
    (entry) => entry.action === 'failed' && !notSent.has(entry.subject),
  );
  const failures = failed
    .filter((entry) => entry.heldBack !== true)
    .map((entry) => entry.error ?? entry.subject);
  const heldBack = failed.length - failures.length;
  if (heldBack > 0) {
    failures.push(
      `${heldBack} other object${heldBack === 1 ? '' : 's'} not applied for their sake`,
    );
  }
  if (stopped !== undefined) {
    const { interrupted, of, verb } = stopped;
    failures.unshift(`${interrupted.reason}: ${notSent.size} of ${of} objects not ${verb}`);
  }
  return failures.join('; ');
}
