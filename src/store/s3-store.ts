/**
 * The S3 store (DESIGN.md `store: {type: s3, bucket, prefix, endpoint?}`):
 * the layout of `keys.ts` as objects under the prefix, every one written with
 * server-side encryption.
 *
 * Conditional writes carry the concurrency: `If-None-Match: *` creates
 * (artifacts, history entries, deliveries, a track's first state document),
 * `If-Match: <ETag>` updates state; published track lists are replaced
 * unconditionally (last write wins). The one delete, of a track's state by
 * `driftless delete` (which holds the track's apply lease meanwhile), is
 * unconditional — MinIO ignores `If-Match` on DeleteObject
 * (docs/s3-features.md), so no design here relies on it. An artifact carries its digest in object metadata (`x-amz-meta-sha256`)
 * and as the upload's SHA-256 checksum, which S3 verifies on receipt; reads
 * recompute it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type PutObjectCommandInput,
} from '@aws-sdk/client-s3';
import {
  ArtifactConflictError,
  ArtifactCorruptError,
  ArtifactNotFoundError,
  ConcurrentUpdateError,
  JobBodyNotFoundError,
  StateCorruptError,
  StoreUnavailableError,
} from './errors.ts';
import {
  artifactDir,
  artifactKey,
  checkedJobBody,
  jobBodyDigest,
  jobBodyKey,
  misplacedArtifact,
  newestFirst,
  assertHistoryEntry,
  assertRevision,
  deliveryKey,
  digestOf,
  historyDir,
  historyEntryName,
  historyEntryProblem,
  HISTORY_SUFFIX,
  isDigest,
  normalisePrefix,
  publishedKey,
  STATE_DIR,
  stateKey,
  trackOfStateName,
} from './keys.ts';
import type {
  ArtifactInfo,
  ArtifactStore,
  DeliveryLog,
  Digest,
  HistoryEntry,
  JobBodyStore,
  ListedRevision,
  PublishedTrackStore,
  PutArtifactResult,
  S3Encryption,
  StateStore,
  VersionedValue,
} from './ports.ts';
import { s3FailureKind, s3Unavailable } from './s3-errors.ts';
import { mapWithLimit } from '../map-with-limit.ts';
import { AWS_REQUEST_TIMEOUTS, type AwsRequestTimeouts } from '../aws-request-timeouts.ts';

/** Options of {@link S3Store}. */
export interface S3StoreOptions {
  readonly bucket: string;
  /** Key prefix of every object, e.g. `driftless/`. Default: none. */
  readonly prefix?: string;
  /** Used as given; when absent one is built from `endpoint` and `region`. */
  readonly client?: S3Client;
  /** For the default client: an S3-compatible server; implies path-style requests. */
  readonly endpoint?: string;
  /** For the default client; otherwise the SDK's own region resolution applies. */
  readonly region?: string;
  /** Default `aws:kms`. */
  readonly encryption?: S3Encryption;
  /** KMS key for `aws:kms`; the bucket's or account's default key when absent. */
  readonly kmsKeyId?: string;
  /** `MaxKeys` of each ListObjectsV2 request. Default 1000 (S3's maximum). */
  readonly pageSize?: number;
  /** Most requests in flight when reading many objects (list, history). Default 8. */
  readonly concurrency?: number;
  /** Time source for `storedAt` and delivery records. */
  readonly now?: () => Date;
  /** For the default client: how long to wait on the network. Default {@link AWS_REQUEST_TIMEOUTS}. */
  readonly timeouts?: AwsRequestTimeouts;
}

/** Metadata keys (S3 returns them lower-cased, without `x-amz-meta-`). */
const DIGEST_METADATA = 'sha256';
const STORED_AT_METADATA = 'stored-at';
/** The key an artifact was stored under (see misplacedArtifact). */
const TRACK_METADATA = 'track';
const REVISION_METADATA = 'revision';

/** A conditional write that meets AWS's 409 (another conditional write in progress) is retried this often. */
const CONFLICT_RETRIES = 5;

/**
 * Artifacts, state, history, deliveries and published track lists in an S3
 * bucket (or an S3-compatible server).
 */
export class S3Store
  implements ArtifactStore, StateStore, DeliveryLog, PublishedTrackStore, JobBodyStore
{
  readonly bucket: string;
  readonly prefix: string;
  readonly #client: S3Client;
  readonly #ownsClient: boolean;
  readonly #encryption: Pick<PutObjectCommandInput, 'ServerSideEncryption' | 'SSEKMSKeyId'>;
  readonly #pageSize: number;
  readonly #concurrency: number;
  readonly #now: () => Date;

  constructor(options: S3StoreOptions) {
    this.bucket = options.bucket;
    this.prefix = normalisePrefix(options.prefix);
    this.#ownsClient = options.client === undefined;
    this.#client =
      options.client ??
      new S3Client({
        requestHandler: { ...(options.timeouts ?? AWS_REQUEST_TIMEOUTS) },
        ...(options.region === undefined ? {} : { region: options.region }),
        ...(options.endpoint === undefined
          ? {}
          : // S3-compatible servers serve buckets as paths; virtual hosts would need DNS.
            { endpoint: options.endpoint, forcePathStyle: true }),
      });
    const encryption = options.encryption ?? 'aws:kms';
    this.#encryption = {
      ServerSideEncryption: encryption,
      ...(encryption === 'aws:kms' && options.kmsKeyId !== undefined
        ? { SSEKMSKeyId: options.kmsKeyId }
        : {}),
    };
    this.#pageSize = Math.max(1, Math.min(1000, Math.floor(options.pageSize ?? 1000)));
    this.#concurrency = Math.max(1, Math.floor(options.concurrency ?? 8));
    this.#now = options.now ?? (() => new Date());
  }

  /** Destroys the S3 client if this store built it; an injected client is left to its owner. */
  close(): void {
    if (this.#ownsClient) this.#client.destroy();
  }

  #key(relative: string): string {
    return `${this.prefix}${relative}`;
  }

  /** A PutObject with the store's encryption; `send` errors are the SDK's. */
  async #put(
    key: string,
    body: Uint8Array | string,
    extra: Partial<PutObjectCommandInput> = {},
  ): Promise<{ ETag?: string | undefined }> {
    return this.#client.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: key,
        Body: body,
        ...this.#encryption,
        ...extra,
      }),
    );
  }

  /** `If-None-Match: *` PutObject: `true` if created, `false` if the key exists. */
  async #createOnly(
    key: string,
    body: Uint8Array | string,
    extra: Partial<PutObjectCommandInput> = {},
  ): Promise<boolean> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.#put(key, body, { ...extra, IfNoneMatch: '*' });
        return true;
      } catch (error) {
        const kind = s3FailureKind(error);
        if (kind === 'precondition-failed') return false;
        // AWS answers 409 while another conditional write of the key is in flight: once it
        // lands, this one meets 412 (or succeeds if that one failed).
        if (kind === 'conditional-conflict' && attempt < CONFLICT_RETRIES) {
          await sleep(20 * 2 ** attempt * (0.5 + Math.random()));
          continue;
        }
        return s3Unavailable(this.bucket, key, error);
      }
    }
  }

  /** The object's bytes and metadata, or `undefined` when there is no such key. */
  async #get(
    key: string,
  ): Promise<
    { bytes: Uint8Array; metadata: Record<string, string>; etag: string | undefined } | undefined
  > {
    try {
      const response = await this.#client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: key }),
      );
      const bytes = (await response.Body?.transformToByteArray()) ?? new Uint8Array();
      return { bytes, metadata: response.Metadata ?? {}, etag: response.ETag };
    } catch (error) {
      if (s3FailureKind(error) === 'not-found') return undefined;
      return s3Unavailable(this.bucket, key, error);
    }
  }

  /** Every key under `prefix` (full keys) with its modification time and ETag, paging through. */
  async #listKeys(
    prefix: string,
    limit = Number.POSITIVE_INFINITY,
  ): Promise<{ key: string; lastModified: Date | undefined; etag: string | undefined }[]> {
    const found: { key: string; lastModified: Date | undefined; etag: string | undefined }[] = [];
    let token: string | undefined;
    try {
      do {
        const page = await this.#client.send(
          new ListObjectsV2Command({
            Bucket: this.bucket,
            Prefix: prefix,
            MaxKeys: Math.min(this.#pageSize, limit - found.length),
            ContinuationToken: token,
          }),
        );
        for (const object of page.Contents ?? []) {
          if (object.Key !== undefined)
            found.push({ key: object.Key, lastModified: object.LastModified, etag: object.ETag });
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token !== undefined && found.length < limit);
    } catch (error) {
      return s3Unavailable(this.bucket, prefix, error);
    }
    return found.slice(0, limit);
  }

  async put(track: string, revision: string, bytes: Uint8Array): Promise<PutArtifactResult> {
    const key = this.#key(artifactKey(track, revision));
    const digest = digestOf(bytes);
    const created = await this.#createOnly(key, bytes, {
      ContentType: 'application/octet-stream',
      // S3 checks the body against it on receipt: a damaged upload is refused, not stored.
      ChecksumSHA256: Buffer.from(digest.slice('sha256:'.length), 'hex').toString('base64'),
      Metadata: {
        [DIGEST_METADATA]: digest,
        [STORED_AT_METADATA]: this.#now().toISOString(),
        [TRACK_METADATA]: track,
        [REVISION_METADATA]: revision,
      },
    });
    if (created) return { digest, created: true };
    // Already stored: never replaced. Read it verified, so a corrupt one is reported.
    const storedDigest = digestOf(await this.get(track, revision));
    if (storedDigest !== digest)
      throw new ArtifactConflictError(track, revision, storedDigest, digest);
    return { digest, created: false };
  }

  async get(track: string, revision: string): Promise<Uint8Array> {
    const object = await this.#get(this.#key(artifactKey(track, revision)));
    if (object === undefined) throw new ArtifactNotFoundError(track, revision);
    const recorded = object.metadata[DIGEST_METADATA];
    if (!isDigest(recorded)) {
      throw new ArtifactCorruptError(
        track,
        revision,
        undefined,
        digestOf(object.bytes),
        `no valid ${DIGEST_METADATA} metadata recorded`,
      );
    }
    const actual = digestOf(object.bytes);
    if (actual !== recorded) throw new ArtifactCorruptError(track, revision, recorded, actual);
    const misplaced = misplacedArtifact(track, revision, {
      track: object.metadata[TRACK_METADATA],
      revision: object.metadata[REVISION_METADATA],
    });
    if (misplaced !== undefined) {
      throw new ArtifactCorruptError(track, revision, recorded, actual, misplaced);
    }
    return object.bytes;
  }

  async has(track: string, revision: string): Promise<boolean> {
    return this.#exists(this.#key(artifactKey(track, revision)));
  }

  async #exists(key: string): Promise<boolean> {
    // Not HeadObject: a HEAD answer has no body, so a missing bucket is the same bare
    // 404 `NotFound` as a missing key, and a misconfigured store would answer "not stored".
    try {
      const page = await this.#client.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: key, MaxKeys: 1 }),
      );
      return page.Contents?.[0]?.Key === key;
    } catch (error) {
      return s3Unavailable(this.bucket, key, error);
    }
  }

  /** The track's artifacts as listed (keys that are no revision of this layout left out). */
  async #artifactObjects(
    track: string,
  ): Promise<{ revision: string; key: string; lastModified: Date | undefined }[]> {
    const dir = this.#key(artifactDir(track));
    return (await this.#listKeys(dir)).flatMap(({ key, lastModified }) => {
      const revision = key.slice(dir.length);
      try {
        assertRevision(revision);
      } catch {
        return []; // not an artifact of this layout
      }
      return [{ revision, key, lastModified }];
    });
  }

  async list(track: string): Promise<ArtifactInfo[]> {
    const objects = await this.#artifactObjects(track);
    // The listing carries no metadata: one HEAD per artifact gives the recorded digest.
    const infos = await mapWithLimit(objects, this.#concurrency, async (object) => {
      const { revision } = object;
      let metadata: Record<string, string>;
      try {
        const head = await this.#client.send(
          new HeadObjectCommand({ Bucket: this.bucket, Key: object.key }),
        );
        metadata = head.Metadata ?? {};
      } catch (error) {
        return s3Unavailable(this.bucket, object.key, error);
      }
      const digest = metadata[DIGEST_METADATA];
      if (!isDigest(digest)) {
        throw new ArtifactCorruptError(
          track,
          revision,
          undefined,
          undefined,
          `no valid ${DIGEST_METADATA} metadata recorded`,
        );
      }
      const storedAt =
        metadata[STORED_AT_METADATA] ??
        object.lastModified?.toISOString() ??
        new Date(0).toISOString();
      return { revision, digest: digest as Digest, storedAt };
    });
    return infos.sort(newestFirst);
  }

  async listRevisions(track: string): Promise<ListedRevision[]> {
    // No HEAD: an artifact is written once, by a create-only put (a refused one changes
    // nothing), and never replaced, so the listing's LastModified is when it was stored.
    return (await this.#artifactObjects(track))
      .map(({ revision, key, lastModified }) => {
        if (lastModified === undefined) {
          throw new StoreUnavailableError(
            `s3://${this.bucket}/${key}: ListObjectsV2 returned no LastModified`,
          );
        }
        return { revision, storedAt: lastModified.toISOString() };
      })
      .sort(newestFirst);
  }

  async read<T>(track: string): Promise<VersionedValue<T> | undefined> {
    const key = this.#key(stateKey(track));
    const object = await this.#get(key);
    if (object === undefined) return undefined;
    if (object.etag === undefined) {
      throw new StoreUnavailableError(`s3://${this.bucket}/${key}: GetObject returned no ETag`);
    }
    let value: unknown;
    try {
      value = JSON.parse(Buffer.from(object.bytes).toString('utf8'));
    } catch (error) {
      throw new StateCorruptError(
        `${track}: state document s3://${this.bucket}/${key} is not JSON`,
        {
          cause: error,
        },
      );
    }
    return { value: value as T, version: object.etag };
  }

  async write<T>(
    track: string,
    value: T,
    expectedVersion: string | undefined,
  ): Promise<{ version: string }> {
    const key = this.#key(stateKey(track));
    const json = JSON.stringify(value);
    if (json === undefined) throw new TypeError(`${track}: state value is not JSON-serialisable`);
    let response: { ETag?: string | undefined };
    try {
      response = await this.#put(key, json, {
        ContentType: 'application/json',
        ...(expectedVersion === undefined ? { IfNoneMatch: '*' } : { IfMatch: expectedVersion }),
      });
    } catch (error) {
      // 412: the condition failed. 404 on If-Match: the document is gone (MinIO answers so
      // for a missing key). 409: AWS is completing a concurrent conditional write.
      const kind = s3FailureKind(error);
      if (
        kind === 'precondition-failed' ||
        kind === 'conditional-conflict' ||
        kind === 'not-found'
      ) {
        throw new ConcurrentUpdateError(track, expectedVersion, { cause: error });
      }
      return s3Unavailable(this.bucket, key, error);
    }
    if (response.ETag === undefined) {
      throw new StoreUnavailableError(`s3://${this.bucket}/${key}: PutObject returned no ETag`);
    }
    return { version: response.ETag };
  }

  async appendHistory(track: string, entry: HistoryEntry): Promise<void> {
    const dir = historyDir(track);
    assertHistoryEntry(entry);
    const key = this.#key(`${dir}${historyEntryName(entry)}`);
    // The name has a random part; If-None-Match makes even a collision lose nothing.
    if (
      !(await this.#createOnly(key, JSON.stringify(entry), { ContentType: 'application/json' }))
    ) {
      throw new StoreUnavailableError(`s3://${this.bucket}/${key}: history entry name collision`);
    }
  }

  async listHistory(track: string, limit?: number): Promise<HistoryEntry[]> {
    const dir = this.#key(historyDir(track));
    if (limit !== undefined && limit <= 0) return [];
    // Keys sort newest first, so the first `limit` keys are the newest entries.
    const keys = (await this.#listKeys(dir, limit)).filter((object) =>
      object.key.endsWith(HISTORY_SUFFIX),
    );
    return mapWithLimit(keys, this.#concurrency, async ({ key }) => {
      const object = await this.#get(key);
      if (object === undefined) {
        throw new StoreUnavailableError(`s3://${this.bucket}/${key}: listed but not found`);
      }
      let entry: unknown;
      try {
        entry = JSON.parse(Buffer.from(object.bytes).toString('utf8'));
      } catch {
        entry = undefined;
      }
      const problem = historyEntryProblem(entry);
      if (problem !== undefined) {
        throw new StateCorruptError(
          `${track}: history entry s3://${this.bucket}/${key}: ${problem}`,
        );
      }
      return entry as HistoryEntry;
    });
  }

  async listTracks(): Promise<string[]> {
    const dir = this.#key(STATE_DIR);
    return (await this.#listKeys(dir))
      .map((object) => trackOfStateName(object.key.slice(dir.length)))
      .filter((track) => track !== undefined)
      .sort();
  }

  async listVersions(): Promise<Map<string, string>> {
    const dir = this.#key(STATE_DIR);
    const versions = new Map<string, string>();
    // A listing's ETag is the one GetObject returns, which read() gives as the version.
    for (const object of await this.#listKeys(dir)) {
      const track = trackOfStateName(object.key.slice(dir.length));
      if (track !== undefined && object.etag !== undefined) versions.set(track, object.etag);
    }
    return versions;
  }

  async remove(track: string): Promise<void> {
    const key = this.#key(stateKey(track));
    try {
      // S3 answers 204 for a key that is not there: removing twice is fine.
      await this.#client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
    } catch (error) {
      return s3Unavailable(this.bucket, key, error);
    }
  }

  async markDelivery(id: string): Promise<boolean> {
    const key = this.#key(deliveryKey(id));
    return this.#createOnly(key, JSON.stringify({ id, markedAt: this.#now().toISOString() }), {
      ContentType: 'application/json',
    });
  }

  async isDelivered(id: string): Promise<boolean> {
    return this.#exists(this.#key(deliveryKey(id)));
  }

  async publish(source: string, document: unknown): Promise<void> {
    const key = this.#key(publishedKey(source));
    const json = JSON.stringify(document);
    if (json === undefined) {
      throw new TypeError(`${source}: published document is not JSON-serialisable`);
    }
    try {
      // Unconditional: last write wins (one job publishes a source at a time).
      await this.#put(key, json, { ContentType: 'application/json' });
    } catch (error) {
      return s3Unavailable(this.bucket, key, error);
    }
  }

  async readPublished<T>(source: string): Promise<T | undefined> {
    const key = this.#key(publishedKey(source));
    const object = await this.#get(key);
    if (object === undefined) return undefined;
    try {
      return JSON.parse(Buffer.from(object.bytes).toString('utf8')) as T;
    } catch (error) {
      throw new StateCorruptError(
        `${source}: published document s3://${this.bucket}/${key} is not JSON`,
        { cause: error },
      );
    }
  }

  async putJobBody(body: string): Promise<string> {
    const digest = jobBodyDigest(body);
    const key = this.#key(jobBodyKey(digest));
    try {
      // Unconditional: the key is the body's digest, so a write over it writes the same bytes.
      await this.#put(key, body, { ContentType: 'application/json' });
    } catch (error) {
      return s3Unavailable(this.bucket, key, error);
    }
    return digest;
  }

  async readJobBody(digest: string): Promise<string> {
    const key = this.#key(jobBodyKey(digest));
    const object = await this.#get(key);
    const where = `s3://${this.bucket}/${key}`;
    if (object === undefined) throw new JobBodyNotFoundError(`no job body ${where}`);
    return checkedJobBody(digest, Buffer.from(object.bytes).toString('utf8'), where);
  }
}
