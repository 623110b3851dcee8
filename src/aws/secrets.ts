/**
 * Secret references for the deployed functions: `aws-secretsmanager:` and
 * `aws-ssm:` from AWS, `env:` and `file:` as the CLI reads them. Values are
 * cached per container for a few minutes, so a warm invocation makes no
 * call and a rotated secret is picked up soon after.
 *
 * Which secrets a function can read is decided by its IAM role, not here:
 * fetch may read `driftless/git/*`, apply `driftless/cluster/*`,
 * `driftless/decryption/*` and `driftless/variables/*`, webhook
 * `driftless/webhook/*`; drift and rollback none.
 */
import { formatSecretRef, type SecretRef } from '../config/secret-ref.ts';
import type { Environment } from '../config/env.ts';
import { readSecret as readLocalSecret, SecretUnavailableError } from '../config/read-secret.ts';
import { secretsManagerReader } from './secrets-manager-secret.ts';
import { ssmParameterReader } from './ssm-parameter.ts';

/** Reads a secret's value. */
export type SecretReader = (ref: SecretRef) => Promise<string>;

/** How the AWS stores are asked; the defaults use the AWS SDK (a client made on first use). */
export interface SecretFetchers {
  /** SecretString (or SecretBinary as UTF-8) of a Secrets Manager secret, by name or ARN. */
  readonly secretsManager?: (id: string) => Promise<string>;
  /** The decrypted value of an SSM parameter, by name or ARN. */
  readonly ssm?: (name: string) => Promise<string>;
}

export interface AwsSecretReaderOptions {
  /** For `env:` references; default the process environment. */
  readonly env?: Environment;
  readonly fetchers?: SecretFetchers;
  /** How long a value is reused; default 5 minutes. */
  readonly ttlMs?: number;
  readonly now?: () => number;
}

const DEFAULT_TTL_MS = 5 * 60_000;

/** SDK error names that mean the secret is not there or not ours to read. */
const NOT_FOUND = new Set([
  'ResourceNotFoundException',
  'ParameterNotFound',
  'ParameterVersionNotFound',
]);
const DENIED = new Set(['AccessDeniedException', 'AccessDenied', 'UnrecognizedClientException']);

/** The failure as a {@link SecretUnavailableError} naming the reference; the SDK error is the cause. */
function unavailable(ref: SecretRef, error: unknown): SecretUnavailableError {
  const name = (error as { name?: unknown } | null)?.name;
  const reason =
    typeof name === 'string' && NOT_FOUND.has(name)
      ? 'not found'
      : typeof name === 'string' && DENIED.has(name)
        ? "access denied (this function's role may not read it)"
        : `cannot be read: ${(error as Error)?.message ?? String(error)}`;
  return new SecretUnavailableError(`secret ${formatSecretRef(ref)}: ${reason}`, { cause: error });
}

/**
 * A reader whose SDK client is created on its first read, then kept for the
 * container. The SDK is imported statically, by name: behind a dynamic
 * import, esbuild's one-file bundle wraps the module and keeps every command
 * the client package re-exports — ~100 KB more in each function that reads
 * secrets (`npm run bench -- lambda-bundles`).
 */
function onFirstUse(
  create: () => (key: string) => Promise<string>,
): (key: string) => Promise<string> {
  let read: ((key: string) => Promise<string>) | undefined;
  return (key) => (read ??= create())(key);
}

/** A {@link SecretReader} for every kind of reference; see the module comment. */
export function createAwsSecretReader(options: AwsSecretReaderOptions = {}): SecretReader {
  const secretsManager = options.fetchers?.secretsManager ?? onFirstUse(secretsManagerReader);
  const ssm = options.fetchers?.ssm ?? onFirstUse(ssmParameterReader);
  const ttl = options.ttlMs ?? DEFAULT_TTL_MS;
  const now = options.now ?? Date.now;
  const cache = new Map<string, { value: Promise<string>; expires: number }>();

  const fetch = async (ref: SecretRef): Promise<string> => {
    try {
      switch (ref.scheme) {
        case 'aws-secretsmanager':
          return await secretsManager(ref.id);
        case 'aws-ssm':
          return await ssm(ref.name);
        default:
          return await readLocalSecret(ref, options.env);
      }
    } catch (error) {
      if (ref.scheme === 'env' || ref.scheme === 'file') throw error;
      throw unavailable(ref, error);
    }
  };

  return (ref) => {
    const key = formatSecretRef(ref);
    const hit = cache.get(key);
    if (hit !== undefined && hit.expires > now()) return hit.value;
    const value = fetch(ref);
    const entry = { value, expires: now() + ttl };
    cache.set(key, entry);
    // A failure is not cached: the next invocation asks again.
    value.catch(() => {
      if (cache.get(key) === entry) cache.delete(key);
    });
    return value;
  };
}
