/**
 * Bucket tracks (Flux's Bucket source): the objects of an S3 or
 * S3-compatible bucket under a prefix are the revision's files.
 *
 * - The revision is a digest of the listing: SHA-256 over each object's key,
 *   size and ETag in key order, cut to 40 hex digits so that it is a revision
 *   id like a commit's everywhere downstream (store keys, status, rollback).
 *   Any added, changed or deleted object is a new revision; an unchanged
 *   bucket polls to the same revision and stores nothing.
 * - Reading a revision lists again and requires the same digest, then reads
 *   each object with `If-Match` on the listed ETag: a file changed in between
 *   fails the read (the next poll picks up the new revision) instead of
 *   mixing two states of the bucket in one artifact.
 * - Keys are paths relative to the prefix; keys that are not clean relative
 *   paths (`..`, empty segments, a leading `/`) refuse the revision, naming
 *   the key, as a Git tree with such a path would be.
 * - Credentials: `auth: {type: s3, secret}` (JSON `{"accessKeyId",
 *   "secretAccessKey"}`), else the AWS SDK's default chain (the fetch
 *   function's role in AWS).
 * - The call's signal (Ctrl-C, a function's deadline, `serve` stopping)
 *   cancels the requests under way; the call then fails with its
 *   InterruptedError.
 */
import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import type { S3Client } from '@aws-sdk/client-s3';
import type { BucketSource } from '../../config/types.ts';
import { formatSecretRef } from '../../config/secret-ref.ts';
import { DriftlessError, messageOf, throwIfInterrupted } from '../../errors.ts';
import { mapWithLimit } from '../../map-with-limit.ts';
import type { GitSource, TrackSource } from '../ports.ts';
import { isManifestScoped } from '../git/read-tree-files.ts';
import type { SecretReader } from '../git/credentials.ts';

/** The bucket cannot be listed or read, or its credentials are unusable; names the bucket. */
export class BucketSourceError extends DriftlessError {
  readonly code = 'BUCKET_UNAVAILABLE';
}

/** The bucket changed between resolving a revision and reading it; the next poll resolves anew. */
export class BucketChangedError extends DriftlessError {
  readonly code = 'BUCKET_CHANGED';
}

/** One object of a listing. */
export interface ListedObject {
  /** Relative to the prefix. */
  readonly path: string;
  readonly key: string;
  readonly size: number;
  readonly etag: string;
}

/** The revision id of a listing; see the module comment. */
export function listingDigest(objects: readonly ListedObject[]): string {
  const hash = createHash('sha256');
  for (const object of [...objects].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))) {
    hash.update(`${object.key}\t${object.size}\t${object.etag}\n`);
  }
  return hash.digest('hex').slice(0, 40);
}

export interface BucketSourceOptions {
  readonly readSecret: SecretReader;
  /** How many objects are read at once. */
  readonly concurrency?: number;
  /** For tests: the client of a bucket. */
  readonly client?: (bucket: BucketSource, credentials?: AwsKeys) => Promise<S3Client>;
}

interface AwsKeys {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

const sdk = () => import('./bucket-s3-calls.ts');

async function defaultClient(bucket: BucketSource, credentials?: AwsKeys): Promise<S3Client> {
  const { S3Client: Client } = await sdk();
  return new Client({
    ...(bucket.region === undefined ? {} : { region: bucket.region }),
    ...(bucket.endpoint === undefined
      ? {}
      : // S3-compatible servers serve buckets as paths; virtual hosts would need DNS.
        { endpoint: bucket.endpoint, forcePathStyle: true }),
    ...(credentials === undefined ? {} : { credentials }),
    // No checksum on reads of objects another tool wrote.
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

function bucketOf(track: TrackSource): BucketSource {
  if (track.bucket === undefined) {
    throw new BucketSourceError(`track "${track.name}" has no bucket`);
  }
  return track.bucket;
}

function label(bucket: BucketSource): string {
  return `s3://${bucket.name}/${bucket.prefix}`;
}

/** The prefix as a key prefix: `''`, or ending in one `/`. */
function keyPrefix(bucket: BucketSource): string {
  const trimmed = bucket.prefix.replace(/^\/+/, '');
  return trimmed === '' || trimmed.endsWith('/') ? trimmed : `${trimmed}/`;
}

/** Whether `path` is a clean relative path: no `..`, no empty segment, no leading `/`. */
function cleanPath(path: string): boolean {
  return (
    path !== '' &&
    !path.startsWith('/') &&
    path.split('/').every((s) => s !== '' && s !== '..' && s !== '.')
  );
}

/** A bucket answers the Git source port's reads; it has no commits to verify, describe or push. */
export type BucketTrackSource = Pick<GitSource, 'resolve' | 'readFiles'>;

/** Creates the bucket source; see the module comment. */
export function createBucketSource(options: BucketSourceOptions): BucketTrackSource {
  const clients = new Map<string, Promise<S3Client>>();
  const makeClient = options.client ?? defaultClient;

  const clientFor = async (track: TrackSource): Promise<S3Client> => {
    const bucket = bucketOf(track);
    let credentials: AwsKeys | undefined;
    if (track.auth?.type === 's3') {
      const ref = track.auth.secret;
      try {
        const parsed = JSON.parse(await options.readSecret(ref)) as Partial<AwsKeys>;
        if (typeof parsed.accessKeyId !== 'string' || typeof parsed.secretAccessKey !== 'string') {
          throw new Error('missing accessKeyId or secretAccessKey');
        }
        credentials = { accessKeyId: parsed.accessKeyId, secretAccessKey: parsed.secretAccessKey };
      } catch (error) {
        if (error instanceof DriftlessError) throw error;
        throw new BucketSourceError(
          `track "${track.name}": the auth secret ${formatSecretRef(ref)} is not JSON {"accessKeyId", "secretAccessKey"}`,
        );
      }
    }
    const key = JSON.stringify([bucket.endpoint, bucket.region, credentials?.accessKeyId]);
    let client = clients.get(key);
    if (client === undefined) {
      client = makeClient(bucket, credentials);
      clients.set(key, client);
    }
    return client;
  };

  const list = async (track: TrackSource, signal?: AbortSignal): Promise<ListedObject[]> => {
    const bucket = bucketOf(track);
    const prefix = keyPrefix(bucket);
    const client = await clientFor(track);
    const { ListObjectsV2Command } = await sdk();
    const objects: ListedObject[] = [];
    let token: string | undefined;
    try {
      do {
        const page = await client.send(
          new ListObjectsV2Command({
            Bucket: bucket.name,
            Prefix: prefix,
            ContinuationToken: token,
          }),
          { abortSignal: signal },
        );
        for (const item of page.Contents ?? []) {
          if (item.Key === undefined || item.Key.endsWith('/')) continue; // "directory" markers
          const path = item.Key.slice(prefix.length);
          if (!cleanPath(path)) {
            throw new BucketSourceError(
              `track "${track.name}": object key ${JSON.stringify(item.Key)} in ${label(bucket)} is not a clean relative path`,
            );
          }
          objects.push({ path, key: item.Key, size: item.Size ?? 0, etag: item.ETag ?? '' });
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token !== undefined);
    } catch (error) {
      if (error instanceof DriftlessError) throw error;
      // A request the signal cancelled: stopped, not failed.
      throwIfInterrupted(signal);
      throw new BucketSourceError(
        `track "${track.name}": cannot list ${label(bucket)}: ${messageOf(error)}`,
        { cause: error },
      );
    }
    return objects;
  };

  return {
    async resolve(track, call = {}) {
      const bucket = bucketOf(track);
      return { revision: listingDigest(await list(track, call.signal)), ref: label(bucket) };
    },

    async readFiles(track, revision, scope = 'manifests', call = {}) {
      const { signal } = call;
      const bucket = bucketOf(track);
      const listed = await list(track, signal);
      if (listingDigest(listed) !== revision) {
        throw new BucketChangedError(
          `track "${track.name}": ${label(bucket)} changed since revision ${revision} was listed; the next poll fetches the new revision`,
        );
      }
      const subPath = (track.subPath ?? '').replace(/^\.?\/+|\/+$/g, '');
      const under = (path: string) => subPath === '' || path.startsWith(`${subPath}/`);
      const above = (path: string) =>
        posix.basename(path) === '.sourceignore' &&
        subPath.startsWith(posix.dirname(path) === '.' ? '' : `${posix.dirname(path)}/`);
      const wanted = listed.filter(
        (object) =>
          scope === 'repository' ||
          (isManifestScoped(object.path) && (under(object.path) || above(object.path))),
      );
      const client = await clientFor(track);
      const { GetObjectCommand } = await sdk();
      return mapWithLimit(wanted, options.concurrency ?? 8, async (object) => {
        try {
          const response = await client.send(
            new GetObjectCommand({ Bucket: bucket.name, Key: object.key, IfMatch: object.etag }),
            { abortSignal: signal },
          );
          const content = await response.Body!.transformToByteArray();
          return { path: object.path, content };
        } catch (error) {
          throwIfInterrupted(signal);
          const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata
            ?.httpStatusCode;
          if (status === 412 || status === 404) {
            throw new BucketChangedError(
              `track "${track.name}": ${object.key} in ${label(bucket)} changed while revision ${revision} was read; the next poll fetches the new revision`,
            );
          }
          throw new BucketSourceError(
            `track "${track.name}": cannot read ${object.key} from ${label(bucket)}: ${messageOf(error)}`,
            { cause: error },
          );
        }
      });
    },
  };
}
