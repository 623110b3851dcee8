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

/**
 * A revision as stored and keyed: a full commit id, or for a render that
 * depends on more than the commit the commit id, `+`, and 12 hex digits of the
 * rendered bundle's digest — a chart (a new chart version or new capabilities
 * make a new revision of the same commit), or a commit rendered again after
 * the track's spec changed (fetch-track.ts), as its first render stays stored.
 */
const REVISION_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})(?:\+[0-9a-f]{12})?$/;

/** Whether `value` is a revision id in the stored form (see {@link REVISION_ID}). */
export function isRevisionId(value: string): boolean {
  return REVISION_ID.test(value);
}

/** The commit a revision id was rendered from. */
export function commitOf(revision: string): string {
  const plus = revision.indexOf('+');
  return plus === -1 ? revision : revision.slice(0, plus);
}

/** The revision id of a commit rendered with inputs beyond Git, from the rendered bundle's sha256 hex digest. */
export function renderedRevision(commit: string, bundleSha256Hex: string): string {
  return `${commit}+${bundleSha256Hex.slice(0, 12)}`;
}

/**
 * A revision shortened for people: 12 digits of the commit, and its render's `+digest` when it
 * has one (two renders of one commit are two revisions); `-` when there is none.
 */
export function shortRevision(revision: string | null | undefined): string {
  if (!revision) return '-';
  const commit = commitOf(revision);
  return `${commit.slice(0, 12)}${revision.slice(commit.length)}`;
}
