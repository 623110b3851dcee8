/**
 * What the fetch function runs with: the config, the Git source with its
 * credentials (only this function may read Git secrets), the store and the
 * apply queue. Built once per container; the Git cache in the container's
 * /tmp makes the next fetch of a repository incremental.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readEnv, readOptionalEnv, type Environment } from '../config/env.ts';
import { createGitSource } from '../source/git/index.ts';
import type { GitSource } from '../source/ports.ts';
import type { JobQueue } from '../sync/jobs.ts';
import { functionConfig } from './function-config.ts';
import { FUNCTION_ENV } from './function-env.ts';
import { functionStore } from './function-store.ts';
import { invokeJobQueueFromEnv } from './invoke-job-queue.ts';
import type { RunFetchJobDeps } from './run-fetch-job.ts';
import { createAwsSecretReader } from './secrets.ts';
import { sqsClient } from './sqs-client.ts';
import { SqsJobQueue } from './sqs-job-queue.ts';

let source: GitSource | undefined;
let queue: JobQueue | undefined;

/** The fetch function's ports. */
export async function fetchDeps(env?: Environment): Promise<RunFetchJobDeps> {
  const config = await functionConfig(env);
  const store = functionStore(config, env);
  source ??= createGitSource({
    cacheDir: readOptionalEnv(FUNCTION_ENV.gitCacheDir, env) ?? join(tmpdir(), 'driftless-git'),
    readSecret: createAwsSecretReader(env === undefined ? {} : { env }),
  });
  // Only the apply queue: a fetch's follow-up is always a sync job.
  queue ??=
    invokeJobQueueFromEnv({ apply: true }, env) ??
    new SqsJobQueue({
      client: sqsClient(),
      applyQueueUrl: readEnv(FUNCTION_ENV.applyQueueUrl, env),
    });
  return {
    tracks: config.tracks,
    source,
    artifacts: store.artifacts,
    state: store.state,
    queue,
  };
}
