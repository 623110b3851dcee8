/**
 * Classifies S3 SDK errors for the S3 store, which turns them into the
 * store's typed errors; nothing here leaks an SDK type to callers.
 */
import { DriftlessError } from '../errors.ts';
import { StoreUnavailableError } from './errors.ts';

/** What an S3 failure means to the store. */
export type S3FailureKind =
  /** `NoSuchKey` (GET, conditional PUT of a missing key) or `NotFound` (HEAD, which has no body). */
  | 'not-found'
  /** 412 `PreconditionFailed`: an `If-None-Match`/`If-Match` condition did not hold. */
  | 'precondition-failed'
  /** 409 `ConditionalRequestConflict`: AWS is completing another conditional write of the key; retry. */
  | 'conditional-conflict'
  | 'other';

interface SdkErrorShape {
  readonly name?: unknown;
  readonly Code?: unknown;
  readonly $metadata?: { readonly httpStatusCode?: unknown };
}

/** The kind of an error thrown by `S3Client.send`. */
export function s3FailureKind(error: unknown): S3FailureKind {
  if (typeof error !== 'object' || error === null) return 'other';
  const shape = error as SdkErrorShape;
  const name = typeof shape.name === 'string' ? shape.name : '';
  const status = shape.$metadata?.httpStatusCode;
  // Only these names mean "no such object": NoSuchBucket and kms:KeyNotFound are 404s too.
  if (name === 'NoSuchKey' || name === 'NotFound') return 'not-found';
  if (name === 'PreconditionFailed' || status === 412) return 'precondition-failed';
  if (name === 'ConditionalRequestConflict' || (status === 409 && name !== 'BucketAlreadyExists')) {
    return 'conditional-conflict';
  }
  return 'other';
}

/**
 * Lets the store's typed errors through and wraps anything else (network,
 * credentials, access denied, KMS, missing bucket) in StoreUnavailableError,
 * naming the object and S3's error code.
 */
export function s3Unavailable(bucket: string, key: string, error: unknown): never {
  if (error instanceof DriftlessError) throw error;
  const shape = (typeof error === 'object' && error !== null ? error : {}) as SdkErrorShape & {
    message?: unknown;
  };
  const name = typeof shape.name === 'string' ? shape.name : 'Error';
  const status = shape.$metadata?.httpStatusCode;
  const message = typeof shape.message === 'string' ? shape.message : String(error);
  throw new StoreUnavailableError(
    `s3://${bucket}/${key}: ${name}${status === undefined ? '' : ` (HTTP ${String(status)})`}: ${message}`,
    { cause: error },
  );
}
