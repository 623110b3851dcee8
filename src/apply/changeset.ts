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

/**
 * Work a stop request or the track's deadline cut short (errors.ts, sync/track-cluster.ts): why,
 * and the objects nothing was sent for.
 */
export interface Interrupted {
  readonly reason: string;
  readonly notSent: readonly string[];
}

/** How many of the objects an interruption stopped are named in the failures' first clause. */
const NAMED_STOPPED = 3;

/**
 * The failed entries' errors for people, joined with `; `; empty when nothing failed. The objects
 * an interruption stopped are told in one clause first, its reason once, with how many and the
 * first few (`track "web": the sync did not finish within the track's timeout (30000 ms): 10 of
 * 12 objects not applied (ConfigMap/apps/c, ConfigMap/apps/d, ConfigMap/apps/e and 7 more)`),
 * rather than that reason once per object: those not sent, and at the track's deadline those
 * whose request was cancelled in flight. Their changeset entries keep their own errors, and any
 * other failure its own part.
 */
export function describeFailures(
  changeset: readonly ChangeSetEntry[],
  stopped?: {
    readonly interrupted: Interrupted;
    readonly of: number;
    readonly verb: 'applied' | 'deleted';
  },
): string {
  const cut = stopped === undefined ? [] : stoppedSubjects(changeset, stopped.interrupted);
  const told = new Set(cut);
  const failed = changeset.filter((entry) => entry.action === 'failed' && !told.has(entry.subject));
  const failures = failed
    .filter((entry) => entry.heldBack !== true)
    .map((entry) => entry.error ?? entry.subject);
  const heldBack = failed.length - failures.length;
  if (heldBack > 0) {
    failures.push(
      `${heldBack} other object${heldBack === 1 ? '' : 's'} not applied for their sake`,
    );
  }
  if (stopped !== undefined && cut.length > 0) {
    const { interrupted, of, verb } = stopped;
    const named = cut.slice(0, NAMED_STOPPED).join(', ');
    const more = cut.length - NAMED_STOPPED;
    failures.unshift(
      `${interrupted.reason}: ${cut.length} of ${of} object${of === 1 ? '' : 's'} not ${verb} (${named}${more > 0 ? ` and ${more} more` : ''})`,
    );
  }
  return failures.join('; ');
}

/** The failed subjects `interrupted` stopped, in the changeset's order. */
function stoppedSubjects(changeset: readonly ChangeSetEntry[], interrupted: Interrupted): string[] {
  const notSent = new Set(interrupted.notSent);
  return changeset
    .filter(
      (entry) =>
        entry.action === 'failed' &&
        (notSent.has(entry.subject) || cancelledFor(entry, interrupted.reason)),
    )
    .map((entry) => entry.subject);
}

/**
 * Whether the entry's request was cancelled for `reason` and nothing else: its error is the
 * reason after the subject, or after the subject and the file it was written in
 * (apply-objects.ts). A request the deadline cancels rejects with the deadline's own message, the
 * reason the stopped steps give too (track-cluster.ts); one that failed otherwise on the way (a
 * recreate that deleted the object first) says more, and keeps its own part.
 */
function cancelledFor(entry: ChangeSetEntry, reason: string): boolean {
  const { error, subject } = entry;
  if (error === undefined) return false;
  return (
    error === `${subject}: ${reason}` ||
    (error.startsWith(`${subject} (`) && error.endsWith(`): ${reason}`))
  );
}
