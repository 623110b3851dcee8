/**
 * The storage layout both adapters share, and the validation that keeps every
 * name inside it. Paths are `/`-separated and relative to the store's root
 * (a directory, or a bucket prefix):
 *
 * ```
 * artifacts/<track>/<revision>        the rendered revision (+ its digest)
 * state/<track>.json                  the track's state document
 * history/<track>/<entry key>.json    one object per history entry
 * deliveries/<sha256 of the id>       one object per webhook delivery
 * published/<source>.json             the track list a `tracksFrom` source published
 * jobs/<sha256 of the body>.json      a job too large for a queue message (claim check)
 * ```
 *
 * Track names, source names and revisions are validated rather than encoded,
 * so keys stay legible; delivery ids come from outside and are hashed.
 */
import { createHash, randomBytes } from 'node:crypto';
import { InvalidStoreKeyError, JobBodyNotFoundError } from './errors.ts';
import type { Digest, HistoryEntry, HistoryTrigger, ListedRevision } from './ports.ts';
import { isRevisionId } from '../object-id.ts';

/**
 * A Kubernetes label value (tracks are also the `driftless.dev/track` label):
 * at most 63 characters, alphanumerics, `-`, `_` and `.` inside. No `/`, and
 * never `.` or `..` since it must start with an alphanumeric.
 */
const TRACK_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/;

/** Longest delivery id accepted; ids are hashed, this only bounds memory. */
const MAX_DELIVERY_ID_LENGTH = 1024;

const TRIGGERS: ReadonlySet<HistoryTrigger> = new Set([
  'webhook',
  'schedule',
  'manual',
  'rollback',
  'write-back',
]);

/** Largest time (ms since the epoch) a history key can order: 13 digits, year 2286. */
const MAX_HISTORY_TIME = 9_999_999_999_999;

/** Throws `InvalidStoreKeyError` unless `track` is a valid track name. */
export function assertTrackName(track: unknown): asserts track is string {
  if (typeof track !== 'string' || !TRACK_NAME.test(track)) {
    throw new InvalidStoreKeyError(
      `${JSON.stringify(track)}: invalid track name: expected 1-63 characters, alphanumerics, '-', '_' or '.' inside`,
    );
  }
}

/** Throws `InvalidStoreKeyError` unless `source` is a valid `tracksFrom` source name (as for tracks). */
export function assertTrackSource(source: unknown): asserts source is string {
  if (typeof source !== 'string' || !TRACK_NAME.test(source)) {
    throw new InvalidStoreKeyError(
      `${JSON.stringify(source)}: invalid track source name: expected 1-63 characters, alphanumerics, '-', '_' or '.' inside`,
    );
  }
}

/** Throws `InvalidStoreKeyError` unless `revision` is a revision id (object-id.ts). */
export function assertRevision(revision: unknown): asserts revision is string {
  if (typeof revision !== 'string' || !isRevisionId(revision)) {
    throw new InvalidStoreKeyError(
      `${JSON.stringify(revision)}: invalid revision: expected a full commit sha (40 or 64 lower-case hex), optionally +12 hex of a rendered chart`,
    );
  }
}

/** `sha256:<hex>` of the bytes. */
export function digestOf(bytes: Uint8Array): Digest {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

/** Whether a string read back from storage is a well-formed digest. */
export function isDigest(value: unknown): value is Digest {
  return typeof value === 'string' && /^sha256:[0-9a-f]{64}$/.test(value);
}

/** `artifacts/<track>/<revision>`, after validating both. */
export function artifactKey(track: string, revision: string): string {
  assertTrackName(track);
  assertRevision(revision);
  return `${artifactDir(track)}${revision}`;
}

/** `artifacts/<track>/`, the prefix of the track's artifacts. */
export function artifactDir(track: string): string {
  assertTrackName(track);
  return `artifacts/${track}/`;
}

/** The order of artifact listings: newest `storedAt` first, then by revision. */
export function newestFirst(a: ListedRevision, b: ListedRevision): number {
  return (
    (a.storedAt < b.storedAt ? 1 : a.storedAt > b.storedAt ? -1 : 0) ||
    (a.revision < b.revision ? -1 : a.revision > b.revision ? 1 : 0)
  );
}

/** `state/<track>.json`. */
export function stateKey(track: string): string {
  assertTrackName(track);
  return `${STATE_DIR}${track}${STATE_SUFFIX}`;
}

export const STATE_DIR = 'state/';
export const STATE_SUFFIX = '.json';

/** The track a state key names, or `undefined` for anything else found under `state/`. */
export function trackOfStateName(name: string): string | undefined {
  if (!name.endsWith(STATE_SUFFIX)) return undefined;
  const track = name.slice(0, -STATE_SUFFIX.length);
  return TRACK_NAME.test(track) ? track : undefined;
}

/** `published/<source>.json`, after validating the source name. */
export function publishedKey(source: string): string {
  assertTrackSource(source);
  return `published/${source}.json`;
}

/** `history/<track>/`, the prefix of the track's history entries. */
export function historyDir(track: string): string {
  assertTrackName(track);
  return `history/${track}/`;
}

export const HISTORY_SUFFIX = '.json';

/** `deliveries/<sha256 hex of the id>`; any non-empty id is accepted. */
export function deliveryKey(id: unknown): string {
  if (typeof id !== 'string' || id.length === 0 || id.length > MAX_DELIVERY_ID_LENGTH) {
    throw new InvalidStoreKeyError(
      `invalid delivery id: expected a string of 1-${MAX_DELIVERY_ID_LENGTH} characters`,
    );
  }
  return `deliveries/${createHash('sha256').update(id, 'utf8').digest('hex')}`;
}

/** A job body's name: the sha256 hex of its bytes. */
const JOB_BODY_DIGEST = /^[0-9a-f]{64}$/;

/** `jobs/<digest>.json`, after validating the digest (sha256 hex of the body). */
export function jobBodyKey(digest: unknown): string {
  if (typeof digest !== 'string' || !JOB_BODY_DIGEST.test(digest)) {
    throw new InvalidStoreKeyError(
      `${JSON.stringify(digest)}: invalid job body name: expected the sha256 of the body, 64 lowercase hex digits`,
    );
  }
  return `jobs/${digest}.json`;
}

/** The name a job body is stored under: the sha256 hex of its UTF-8 bytes. */
export function jobBodyDigest(body: string): string {
  return createHash('sha256').update(body, 'utf8').digest('hex');
}

/** `body` read back under `digest`, refused when it is not what the name says. */
export function checkedJobBody(digest: string, body: string, where: string): string {
  if (jobBodyDigest(body) !== digest) {
    throw new JobBodyNotFoundError(`job body ${where} does not match its name`);
  }
  return body;
}

/** Counts down within a process so same-millisecond appends still list newest first. */
let historySequence = 0;

/**
 * Validates a history entry and returns the name of its object: sorting
 * names ascending lists entries newest first, so S3 can page the newest
 * without listing everything. `<inverted ms>-<inverted sequence>-<random>.json`;
 * the random part keeps concurrent appends, even from several processes,
 * from ever sharing a name.
 */
export function historyEntryName(entry: HistoryEntry): string {
  assertHistoryEntry(entry);
  const time = Date.parse(entry.appliedAt);
  const inverted = String(MAX_HISTORY_TIME - time).padStart(13, '0');
  historySequence = (historySequence + 1) % 1_000_000_000;
  const sequence = String(999_999_999 - historySequence).padStart(9, '0');
  return `${inverted}-${sequence}-${randomBytes(8).toString('hex')}${HISTORY_SUFFIX}`;
}

/** Throws `InvalidStoreKeyError` unless the entry has the fields the port requires. */
export function assertHistoryEntry(entry: unknown): asserts entry is HistoryEntry {
  const problem = historyEntryProblem(entry);
  if (problem !== undefined) throw new InvalidStoreKeyError(`invalid history entry: ${problem}`);
}

/** What is wrong with a (stored or offered) history entry, or `undefined`. */
export function historyEntryProblem(entry: unknown): string | undefined {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
    return 'not an object';
  }
  const fields = entry as Record<string, unknown>;
  if (typeof fields.revision !== 'string') return 'revision is not a string';
  if (typeof fields.result !== 'string') return 'result is not a string';
  if (typeof fields.trigger !== 'string' || !TRIGGERS.has(fields.trigger as HistoryTrigger)) {
    return `trigger ${JSON.stringify(fields.trigger)} is not one of ${[...TRIGGERS].join(', ')}`;
  }
  const time = typeof fields.appliedAt === 'string' ? Date.parse(fields.appliedAt) : NaN;
  if (!Number.isFinite(time) || time < 0 || time > MAX_HISTORY_TIME) {
    return `appliedAt ${JSON.stringify(fields.appliedAt)} is not an ISO-8601 time between 1970 and 2286`;
  }
  return undefined;
}

/** Normalises a bucket prefix: no leading `/`, one trailing `/` unless empty. */
export function normalisePrefix(prefix: string | undefined): string {
  const trimmed = (prefix ?? '').replace(/^\/+/, '').replace(/\/+$/, '');
  if (trimmed.split('/').some((segment) => segment === '..' || segment === '.')) {
    throw new InvalidStoreKeyError(
      `${JSON.stringify(prefix)}: invalid store prefix: '.' or '..' segment`,
    );
  }
  return trimmed === '' ? '' : `${trimmed}/`;
}

/** What an artifact recorded, when stored, about the key it was stored under. */
export interface RecordedArtifactKey {
  readonly track?: unknown;
  readonly revision?: unknown;
}

/**
 * Why an artifact that recorded `recorded` cannot be read as the artifact of
 * `track` at `revision`, or undefined when it can. A file or object copied to
 * another track's or revision's key still matches its own digest: only what
 * it recorded tells it is not where it belongs. Artifacts stored before keys
 * were recorded record none, and are read as before.
 */
export function misplacedArtifact(
  track: string,
  revision: string,
  recorded: RecordedArtifactKey,
): string | undefined {
  const sameTrack = recorded.track === undefined || recorded.track === track;
  const sameRevision = recorded.revision === undefined || recorded.revision === revision;
  if (sameTrack && sameRevision) return undefined;
  return `stored as the artifact of ${String(recorded.track)}@${String(recorded.revision)}, not of this track and revision`;
}
