/**
 * What counts as a full commit id everywhere in Driftless: a SHA-1 (40 hex
 * digits) or SHA-256 (64 hex digits) object name in lower case — the form
 * revisions are stored, keyed and compared in. Input from people (a
 * reference, a webhook payload) is lower-cased before it is tested.
 */
const FULL_COMMIT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/** Whether `value` is a full commit id in the stored (lower-case) form. */
export function isFullCommitId(value: string): boolean {
  return FULL_COMMIT_ID.test(value);
}
