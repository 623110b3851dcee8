/**
 * The storage ports: immutable, content-addressed artifacts; per-track state
 * documents with optimistic concurrency and an append-only history; a log of
 * webhook deliveries for de-duplication; the track lists `tracksFrom`
 * discoveries publish. `fs-store.ts` and `s3-store.ts`
 * implement them; `test/integration/store-contract.ts` is the contract both
 * must pass.
 */

/** `sha256:<64 lower-case hex>`. */
export type Digest = `sha256:${string}`;

/** What {@link ArtifactStore.put} did. */
export interface PutArtifactResult {
  /** Digest of the bytes, as stored (and as given by any earlier put of this revision). */
  readonly digest: Digest;
  /** `false` when the same bytes were already stored for this revision (nothing was written). */
  readonly created: boolean;
}

/** One stored artifact, as {@link ArtifactStore.list} reports it. */
export interface ArtifactInfo {
  readonly revision: string;
  readonly digest: Digest;
  /** ISO-8601 time the artifact was stored. */
  readonly storedAt: string;
}

/** One stored artifact by name, as {@link ArtifactStore.listRevisions} reports it. */
export interface ListedRevision {
  readonly revision: string;
  /**
   * ISO-8601 time the backend recorded the artifact as stored: the artifact's own record on
   * the filesystem, the object's LastModified on S3 (the server's clock, whole seconds on AWS).
   */
  readonly storedAt: string;
}

/**
 * Rendered revisions, keyed by track and commit sha (40 hex, or 64 for
 * SHA-256 repositories), immutable once stored, verified against their
 * sha256 digest on every read.
 */
export interface ArtifactStore {
  /**
   * Stores `bytes` as the artifact of `track` at `revision`. Never replaces a
   * stored artifact: the same bytes again are a no-op (`created: false`),
   * different bytes throw `ArtifactConflictError` (or `ArtifactCorruptError`
   * when the stored one no longer matches its own digest).
   */
  put(track: string, revision: string, bytes: Uint8Array): Promise<PutArtifactResult>;
  /**
   * The artifact's bytes, verified against the recorded digest. Throws
   * `ArtifactNotFoundError` or `ArtifactCorruptError`.
   */
  get(track: string, revision: string): Promise<Uint8Array>;
  /** Whether an artifact is stored (not verified: `get` does that). */
  has(track: string, revision: string): Promise<boolean>;
  /** Every artifact of the track, newest first (by store time, then revision). */
  list(track: string): Promise<ArtifactInfo[]>;
  /**
   * The track's stored revisions and when each was stored, newest first (by that time, then
   * revision), without digests: for readers that show or pick revisions by name. On S3 this
   * is one listing request per 1,000 artifacts, where {@link list} adds one request per
   * artifact. Its `storedAt` may differ from {@link list}'s (the writer's clock) by the
   * clocks' skew. No artifact is verified: {@link get} does that.
   */
  listRevisions(track: string): Promise<ListedRevision[]>;
}

/** A state document and the version to pass to {@link StateStore.write} to replace it. */
export interface VersionedValue<T> {
  readonly value: T;
  /** Opaque; only meaningful to the store that returned it. */
  readonly version: string;
}

/** How a history entry was started (DESIGN.md `history -o json`). */
export type HistoryTrigger = 'webhook' | 'schedule' | 'manual' | 'rollback' | 'write-back';

/** One line of a track's history. Extra fields are kept as given (JSON values only). */
export interface HistoryEntry {
  readonly revision: string;
  /** ISO-8601; orders the history. */
  readonly appliedAt: string;
  readonly result: string;
  readonly trigger: HistoryTrigger;
  readonly [key: string]: unknown;
}

/**
 * Per-track JSON state (status, inventory, pins) with compare-and-swap
 * writes, and an append-only history per track.
 */
export interface StateStore {
  /** The track's document and its version, or `undefined` when none was written. */
  read<T>(track: string): Promise<VersionedValue<T> | undefined>;
  /**
   * Replaces the track's document if its version is still `expectedVersion`
   * (`undefined`: only if there is no document yet). Throws
   * `ConcurrentUpdateError` when someone else wrote in between.
   */
  write<T>(
    track: string,
    value: T,
    expectedVersion: string | undefined,
  ): Promise<{ version: string }>;
  /** Adds an entry to the track's history. Concurrent appends are all kept. */
  appendHistory(track: string, entry: HistoryEntry): Promise<void>;
  /**
   * The track's history, newest `appliedAt` first (entries with the same
   * `appliedAt` in no guaranteed order), at most `limit` entries.
   */
  listHistory(track: string, limit?: number): Promise<HistoryEntry[]>;
  /** Names of the tracks that have a state document, sorted. */
  listTracks(): Promise<string[]>;
  /**
   * The version of every track's state document (as {@link read} returns it), by
   * track. On S3 one listing per 1,000 tracks: a reader that kept documents can
   * tell which changed without reading them all again.
   */
  listVersions(): Promise<Map<string, string>>;
  /** Removes the track's state document (a deleted track); its history stays. No-op when absent. */
  remove(track: string): Promise<void>;
}

/** Webhook delivery ids already handled: git hosts redeliver, and retries must not run twice. */
export interface DeliveryLog {
  /**
   * Records the delivery. `true` the first time an id is marked, `false`
   * after — also when several callers mark the same id at once: exactly one
   * of them gets `true`.
   */
  markDelivery(id: string): Promise<boolean>;
  /** Whether the delivery was marked: its jobs were queued by an earlier attempt. */
  isDelivered(id: string): Promise<boolean>;
}

/**
 * Track lists published at run time (config `tracksFrom`): one JSON document per
 * source, replaced whole by the step that discovers the source and read by
 * every step that needs the tracks. Last write wins: one source is published
 * by one job at a time.
 */
export interface PublishedTrackStore {
  /** Replaces the source's document. */
  publish(source: string, document: unknown): Promise<void>;
  /** The source's document, or `undefined` when none was published. */
  readPublished<T>(source: string): Promise<T | undefined>;
}

/**
 * Jobs too large for a queue message (an SQS message holds 1 MiB at most; a
 * write-back of a large ConfigMap carries its old and new data): the body waits here under
 * the sha256 of its bytes and the message carries that name (a claim check).
 * Bodies are never changed; the store's lifecycle removes old ones.
 */
export interface JobBodyStore {
  /** Stores `body`; returns its name (the sha256 hex of its UTF-8 bytes). */
  putJobBody(body: string): Promise<string>;
  /** The body stored under `digest`, checked against it; JobBodyNotFoundError when none is. */
  readJobBody(digest: string): Promise<string>;
}

/** The stores over one backend, as `createStore` returns them. */
export interface Store {
  readonly artifacts: ArtifactStore;
  readonly state: StateStore;
  readonly deliveries: DeliveryLog;
  readonly published: PublishedTrackStore;
  readonly jobBodies: JobBodyStore;
}

/** DESIGN.md `store:` of driftless.yaml, local filesystem. */
export interface FsStoreConfig {
  readonly type: 'fs';
  /** Root directory; relative paths are resolved against the working directory. */
  readonly path: string;
}

/** Server-side encryption applied to every object the S3 store writes. */
export type S3Encryption = 'aws:kms' | 'AES256';

/** DESIGN.md `store:` of driftless.yaml, S3 or an S3-compatible server. */
export interface S3StoreConfig {
  readonly type: 's3';
  readonly bucket: string;
  /** Key prefix of every object, e.g. `driftless/`. Default: none. */
  readonly prefix?: string;
  /** An S3-compatible server, e.g. `http://127.0.0.1:9000`; implies path-style requests. */
  readonly endpoint?: string;
  readonly region?: string;
  /** Default `aws:kms` (the account's default key unless `kmsKeyId` names one). */
  readonly encryption?: S3Encryption;
  /** KMS key id, ARN or alias for `aws:kms`. */
  readonly kmsKeyId?: string;
}

/** DESIGN.md `store:` of driftless.yaml; default `{type: fs, path: .driftless/store}`. */
export type StoreConfig = FsStoreConfig | S3StoreConfig;

/** The store used when driftless.yaml names none. */
export const DEFAULT_STORE_CONFIG: FsStoreConfig = { type: 'fs', path: '.driftless/store' };
