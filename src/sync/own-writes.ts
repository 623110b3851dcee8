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
 * Exactly: each write is put into the applied revision's object only where that object holds
 * what it replaced, and the result must equal the new revision's object. Anything else — a
 * person's change in the same object, a write kept without what it replaced (by an older
 * version), a value redacted because it holds a secret, a SOPS-encrypted file replaced whole
 * (kept as a file, never as fields) — leaves the object changed in Git, and Git wins as before.
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
 * The fields write-backs wrote that a sync of `revision` may find in Git since `applied`, the
 * revision applied last, oldest first: those `applied` does not hold yet (track-state.ts
 * unsyncedWriteBacks), up to `revision`'s own commit when it is one of them — the later ones
 * are not in it, and folding them in would make the object look changed.
 */
export function ownWritesSince(
  writeBacks: readonly UnsyncedWriteBack[] | undefined,
  applied: string | null,
  revision: string,
): OwnWrite[] {
  const unsynced = unsyncedWriteBacks(writeBacks, applied);
  const own = unsynced.findLastIndex((writeBack) => writeBack.commit === commitOf(revision));
  const held = own < 0 ? unsynced : unsynced.slice(0, own + 1);
  return held.flatMap((writeBack) => writeBack.fields);
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
