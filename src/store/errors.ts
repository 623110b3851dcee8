/**
 * Typed errors of the storage layer. Adapters translate whatever their
 * backend throws (S3 SDK exceptions, `fs` error codes) into these, so callers
 * never see a backend's own errors; the original travels as `cause`.
 */
import { DriftlessError } from '../errors.ts';

/** `<track>@<revision>`, the subject of artifact messages. */
function artifactSubject(track: string, revision: string): string {
  return `${track}@${revision}`;
}

/** No artifact is stored for this track and revision. */
export class ArtifactNotFoundError extends DriftlessError {
  readonly code = 'ARTIFACT_NOT_FOUND';

  constructor(
    readonly track: string,
    readonly revision: string,
    options?: { cause?: unknown },
  ) {
    super(`${artifactSubject(track, revision)}: no artifact is stored for this revision`, options);
  }
}

/**
 * A stored artifact's bytes do not match the digest recorded when it was
 * stored (or the record itself is unreadable): it was altered or damaged at
 * rest and must not be applied.
 */
export class ArtifactCorruptError extends DriftlessError {
  readonly code = 'ARTIFACT_CORRUPT';

  constructor(
    readonly track: string,
    readonly revision: string,
    /** The digest recorded at store time, when one could be read. */
    readonly expectedDigest: string | undefined,
    /** The digest of the bytes actually read, when they could be read. */
    readonly actualDigest: string | undefined,
    reason?: string,
    options?: { cause?: unknown },
  ) {
    super(
      `${artifactSubject(track, revision)}: stored artifact is corrupt: ${
        reason ??
        `recorded digest ${expectedDigest ?? '(none)'} but content is ${actualDigest ?? '(unreadable)'}`
      }`,
      options,
    );
  }
}

/**
 * An artifact is already stored for this track and revision with different
 * content. Artifacts are immutable, so the stored one is kept; a renderer
 * that gives two results for one commit is not deterministic.
 */
export class ArtifactConflictError extends DriftlessError {
  readonly code = 'ARTIFACT_CONFLICT';

  constructor(
    readonly track: string,
    readonly revision: string,
    readonly storedDigest: string,
    readonly offeredDigest: string,
  ) {
    super(
      `${artifactSubject(track, revision)}: an artifact with digest ${storedDigest} is already stored; refusing to replace it with ${offeredDigest}`,
    );
  }
}

/**
 * A conditional write lost: someone else wrote the document after the
 * caller read it (or created it first). Read again, re-apply the change and
 * retry.
 */
export class ConcurrentUpdateError extends DriftlessError {
  readonly code = 'STATE_CONFLICT';

  constructor(
    readonly track: string,
    /** The version the caller expected; `undefined` when it expected no document. */
    readonly expectedVersion: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(
      `${track}: state was changed concurrently (expected ${
        expectedVersion === undefined ? 'no document' : `version ${expectedVersion}`
      }); read it again and retry`,
      options,
    );
  }
}

/** A stored state document or history entry cannot be parsed. */
export class StateCorruptError extends DriftlessError {
  readonly code = 'STATE_CORRUPT';
}

/**
 * A track or source name, revision, delivery id or history entry cannot be
 * used as (part of) a storage key: it is malformed or could escape its place
 * in the layout (`../x`, slashes). Nothing was read or written.
 */
export class InvalidStoreKeyError extends DriftlessError {
  readonly code = 'STORE_INVALID_KEY';
}

/**
 * The storage backend failed: unreachable, access denied, a KMS error, a
 * missing bucket, a lock that could not be taken in time. The operation may
 * or may not have happened; it is safe to retry.
 */
export class StoreUnavailableError extends DriftlessError {
  readonly code = 'STORE_UNAVAILABLE';
}

/** A stored job body that is not there (expired, or never written) or not what its name says. */
export class JobBodyNotFoundError extends DriftlessError {
  readonly code = 'JOB_BODY_NOT_FOUND';
}
