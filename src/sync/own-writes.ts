/**
 * Driftless' own write-backs as the apply step sees them (two-way sync, `syncTo: git`).
 *
 * A sync leaves a `syncTo: git` object to the cluster unless Git changed it since the revision
 * applied last (apply-revision.ts unchangedInGit). A write-back commit changes it in Git — but
 * with what the cluster had, not with a person's change. When the cluster moved on before that
 * commit is synced (someone put back the value the drift check wrote to Git), applying it would
 * undo the cluster's newer change, which the next drift check would have written back instead.
 * So the differences that are exactly those write-backs' own do not count as Git's.
 *
 * Only for the sync of a write-back commit itself, with the write-backs made against the revision
 * applied last and since no other apply (ownWritesSince, settledByApply). Exactly: each write is
 * put into the applied revision's object only where that object holds what it replaced, and the
 * result must equal the new revision's object. Anything else — a person's change in the same
 * object, a write kept without what it replaced (by an older version), a value redacted because
 * it holds a secret, a SOPS-encrypted file replaced whole (kept as a file, never as fields) —
 * leaves the object changed in Git, and Git wins as before.
 */
import { isDeepStrictEqual } from 'node:util';
import { parsePointer, valueAt } from '../apply/json-pointer.ts';
import { withValueAt } from '../render/json-value.ts';
import { commitOf } from '../object-id.ts';
import { REDACTED } from '../redact.ts';
import { unsyncedWriteBacks, type UnsyncedWriteBack } from './track-state.ts';

/** A field a write-back wrote (track-state.ts UnsyncedWriteBack). */
export type OwnWrite = UnsyncedWriteBack['fields'][number];

/**
 * The fields a sync of `revision` may take as Driftless' own rather than Git's change since
 * `applied`, the revision applied last, oldest first. Only the sync of a write-back commit folds
 * (a person's commit, or one whose ancestry is unknown here, is Git's), and only the write-backs
 * up to that commit (track-state.ts unsyncedWriteBacks: those `applied` does not hold) that were
 * made comparing the cluster with `applied` itself: their changes are relative to what the
 * cluster was given last. A write-back made against an earlier revision, whose value may since
 * have reached the cluster inside someone's commit, or been replaced by one, explains nothing.
 */
export function ownWritesSince(
  writeBacks: readonly UnsyncedWriteBack[] | undefined,
  applied: string | null,
  revision: string,
): OwnWrite[] {
  if (applied === null) return [];
  const unsynced = unsyncedWriteBacks(writeBacks, applied);
  const own = unsynced.findLastIndex((writeBack) => writeBack.commit === commitOf(revision));
  if (own < 0) return [];
  return unsynced
    .slice(0, own + 1)
    .filter((writeBack) => writeBack.comparedWith === applied)
    .flatMap((writeBack) => writeBack.fields);
}

/**
 * Whether `next` (the object as the revision to apply has it; undefined: not there) differs
 * from `previous` (as the revision applied last has it) by no more than `writes`, the own writes
 * of that object, oldest first; see the module comment.
 */
export function unchangedButOwnWrites(
  previous: unknown,
  next: unknown,
  writes: readonly OwnWrite[],
): boolean {
  if (isDeepStrictEqual(previous, next)) return true;
  if (writes.length === 0 || !writes.every(foldable)) return false;
  let object = previous;
  for (const write of writes) {
    const tokens = parsePointer(write.path);
    // Made over something else (a person's commit came between): not this write's change.
    if (!isDeepStrictEqual(valueAt(object, tokens), write.replaced?.value)) continue;
    object = withValueAt(object, tokens, write.value);
  }
  return isDeepStrictEqual(object, next);
}

/**
 * Whether a write tells exactly what it changed: what it replaced is kept (an older version
 * kept none), and neither value is redacted (src/redact.ts: a value holding a secret is kept
 * with it replaced by {@link REDACTED}, so it is not what Git holds).
 */
function foldable(write: OwnWrite): boolean {
  return write.replaced !== undefined && !redacted(write.value) && !redacted(write.replaced.value);
}

function redacted(value: unknown): boolean {
  return value !== undefined && JSON.stringify(value).includes(REDACTED);
}

/**
 * The write-backs as an apply leaves them: none made before it folds any more. What the cluster
 * holds from then on is that apply's doing (a rollback to the revision a write-back compared
 * with, say), so a write made before it tells nothing about a person reverting the cluster.
 */
export function settledByApply(writeBacks: readonly UnsyncedWriteBack[]): UnsyncedWriteBack[] {
  return writeBacks.map(({ comparedWith: _compared, ...writeBack }) => writeBack);
}
