/**
 * The environment variables the Lambda functions read, in one place, so
 * serverless.yml, the wiring and the docs cannot drift apart. Values are
 * read only through `readEnv`/`readOptionalEnv` (src/config/env.ts), which
 * name a missing variable.
 */
export const FUNCTION_ENV = {
  /** Path of the bundled driftless.yaml; default `driftless.yaml` in the working directory (the zip's root). */
  config: 'DRIFTLESS_CONFIG',
  /** The deployed artifact bucket; when set it replaces the `store:` of driftless.yaml. */
  bucket: 'DRIFTLESS_BUCKET',
  /** KMS key the store encrypts every object with (the bucket's key). */
  kmsKeyId: 'DRIFTLESS_KMS_KEY_ID',
  /** URL of the fetch queue (standard or FIFO). */
  fetchQueueUrl: 'DRIFTLESS_FETCH_QUEUE_URL',
  /** URL of the apply queue (FIFO, one message group per track). */
  applyQueueUrl: 'DRIFTLESS_APPLY_QUEUE_URL',
  /**
   * Local stage only (handlers/offline/): base URL of serverless-offline's Lambda Invoke API
   * (`--lambdaPort`); jobs are delivered by invoking the fetch and apply functions (invoke-job-queue.ts).
   */
  invokeEndpoint: 'DRIFTLESS_INVOKE_ENDPOINT',
  /** With `DRIFTLESS_INVOKE_ENDPOINT`: the function fetch jobs are invoked on, e.g. `driftless-local-fetch`. */
  fetchFunction: 'DRIFTLESS_FETCH_FUNCTION',
  /** With `DRIFTLESS_INVOKE_ENDPOINT`: the function apply jobs are invoked on, e.g. `driftless-local-apply`. */
  applyFunction: 'DRIFTLESS_APPLY_FUNCTION',
  /** Git cache of the fetch function; default `<tmpdir>/driftless-git`. */
  gitCacheDir: 'DRIFTLESS_GIT_CACHE_DIR',
  /** Log level of the JSON logs: debug, info (default), warn or error. */
  logLevel: 'DRIFTLESS_LOG_LEVEL',
  /**
   * CloudWatch namespace of the functions' metrics (function-metrics.ts); default `Driftless`.
   * Powertools' own variable; its `POWERTOOLS_METRICS_DISABLED=true` turns the metrics off.
   */
  metricsNamespace: 'POWERTOOLS_METRICS_NAMESPACE',
} as const;

/** The default config path, relative to the working directory (`/var/task` in Lambda). */
export const DEFAULT_FUNCTION_CONFIG = 'driftless.yaml';
