/**
 * The store of the deployed functions. In AWS it is the artifact bucket
 * serverless.yml creates (named by `DRIFTLESS_BUCKET`, encrypted with the
 * bucket's KMS key), whatever the `store:` of driftless.yaml says: the
 * functions' IAM policies allow that bucket and its fixed prefixes only.
 * Without `DRIFTLESS_BUCKET` (serverless-offline against MinIO) the config's
 * store is used as the CLI would.
 */
import { readOptionalEnv, type Environment } from '../config/env.ts';
import type { Config } from '../config/types.ts';
import { createStore, type ClosableStore } from '../store/create-store.ts';
import type { StoreConfig } from '../store/ports.ts';
import { FUNCTION_ENV } from './function-env.ts';

/** The store configuration the functions use (see the module comment). */
export function functionStoreConfig(config: Pick<Config, 'store'>, env?: Environment): StoreConfig {
  const bucket = readOptionalEnv(FUNCTION_ENV.bucket, env);
  if (bucket === undefined) return config.store;
  const kmsKeyId = readOptionalEnv(FUNCTION_ENV.kmsKeyId, env);
  // No prefix: the bucket is Driftless' own, and the IAM policies name `artifacts/*`, `state/*`, ...
  return {
    type: 's3',
    bucket,
    prefix: '',
    encryption: 'aws:kms',
    ...(kmsKeyId === undefined ? {} : { kmsKeyId }),
  };
}

let cached: ClosableStore | undefined;

/** The store, built once per container so its S3 client's connections are reused. */
export function functionStore(config: Pick<Config, 'store'>, env?: Environment): ClosableStore {
  cached ??= createStore(functionStoreConfig(config, env));
  return cached;
}
