/**
 * What each function runs with, built once per container so warm
 * invocations reuse the config, the store's S3 client, the queue client,
 * the Git cache and cluster connections. Each function gets only the ports
 * its role allows: the webhook its signing secrets and the fetch queue; fetch
 * the Git source (the only Git credentials) and both queues; apply the
 * cluster connections (the only cluster credentials) and both queues;
 * drift and rollback the store and the queues, no credentials at all; the
 * dashboard the same, plus the built UI shipped in its package.
 *
 * Which queue implementation is used is injected by the entry point:
 * handlers/ pass nothing and get SQS; only the local stage's entry points
 * (handlers/offline/) pass the serverless-offline invoker, so production
 * bundles never contain it.
 */
import { tmpdir } from 'node:os';
import { isMainThread, threadId } from 'node:worker_threads';
import { join } from 'node:path';
import { readEnv, readOptionalEnv, type Environment } from '../config/env.ts';
import type { Config, Track, TracksFrom } from '../config/types.ts';
import type { DashboardDeps } from '../dashboard/dashboard-routes.ts';
import { storedObjects } from '../dashboard/read-model.ts';
import { directoryAssets } from '../dashboard/web-assets.ts';
import type { AcceptWebhookDeps } from '../sync/accept-webhook.ts';
import type { JobQueue } from '../sync/jobs.ts';
import type { JobDeps } from '../sync/run-job.ts';
import { keptTracks, knownTracks } from '../sync/published-tracks.ts';
import { clusterOf } from '../sync/track-named.ts';
import type { GitSource } from '../source/ports.ts';
import type {
  ArtifactStore,
  JobBodyStore,
  PublishedTrackStore,
  StateStore,
  Store,
} from '../store/ports.ts';
import { createClusterConnector, type ClusterConnector } from './cluster-connector.ts';
import { packagedWebDir } from './dashboard-http.ts';
import { logUndelivered, notifier, type NotifierOptions } from '../notify/deliver.ts';
import { functionConfig } from './function-config.ts';
import { functionLogger } from './function-logger.ts';
import { FUNCTION_ENV } from './function-env.ts';
import { functionStore } from './function-store.ts';
import { createAwsSecretReader, type SecretReader } from './secrets.ts';
import { sqsClient } from './sqs-client.ts';
import { SqsJobQueue } from './sqs-job-queue.ts';

/** The queues a function sends to; its role allows no others. */
export interface QueueTargets {
  readonly fetch?: boolean;
  readonly apply?: boolean;
}

/** Builds the job queue of a function; `bodies` holds jobs too large for a message. */
export type JobQueueFactory = (
  targets: QueueTargets,
  env?: Environment,
  bodies?: JobBodyStore,
) => JobQueue;

/** The deployed queues: SQS, at the URLs serverless.yml gives each function. */
export const sqsJobQueues: JobQueueFactory = (targets, env, bodies) =>
  new SqsJobQueue({
    client: sqsClient(),
    ...(targets.fetch ? { fetchQueueUrl: readEnv(FUNCTION_ENV.fetchQueueUrl, env) } : {}),
    ...(targets.apply ? { applyQueueUrl: readEnv(FUNCTION_ENV.applyQueueUrl, env) } : {}),
    ...(bodies === undefined ? {} : { bodies }),
  });

/** One queue per set of targets: a process that builds two functions' ports never mixes them. */
const builtQueues = new Map<string, JobQueue>();
let secrets: SecretReader | undefined;
let connect: ClusterConnector | undefined;
let source: (() => Promise<GitSource>) | undefined;

function secretReader(env: Environment | undefined): SecretReader {
  secrets ??= createAwsSecretReader(env === undefined ? {} : { env });
  return secrets;
}

/** The config, store and queue every function has. */
async function common(targets: QueueTargets, queues: JobQueueFactory, env?: Environment) {
  const config = await functionConfig(env);
  const store = functionStore(config, env);
  const key = `fetch:${targets.fetch === true} apply:${targets.apply === true}`;
  let queue = builtQueues.get(key);
  if (queue === undefined) {
    queue = queues(targets, env, store.jobBodies);
    builtQueues.set(key, queue);
  }
  return { config, store, queue };
}

/** Where jobs too large for a queue message wait: the function's store (its `jobs/`). */
export async function functionJobBodies(env?: Environment): Promise<JobBodyStore> {
  return functionStore(await functionConfig(env), env).jobBodies;
}

/** The webhook function: its signing secrets (the only secrets it may read), deliveries, the fetch queue. */
export async function webhookDeps(
  queues: JobQueueFactory = sqsJobQueues,
  env?: Environment,
): Promise<AcceptWebhookDeps> {
  const { config, store, queue } = await common({ fetch: true }, queues, env);
  return webhookPorts(config, store, queue, secretReader(env));
}

/**
 * The webhook's ports over its store. The published tracks are read when a
 * push is matched, after its signature was verified (src/sync/accept-webhook.ts),
 * not when the ports are made: the endpoint is public, and a request that is
 * unsigned, forged or for a host not configured costs the reads of the
 * signing secrets and no S3 request at all.
 */
export function webhookPorts(
  config: Pick<Config, 'tracks' | 'tracksFrom' | 'webhooks'>,
  store: Pick<Store, 'published' | 'deliveries'>,
  queue: JobQueue,
  readSecret: SecretReader,
): AcceptWebhookDeps {
  return {
    tracks: () => knownTracks(config, store.published),
    secretsOf: async (host) => {
      const webhook = config.webhooks[host];
      return webhook && Promise.all(webhook.secrets.map((ref) => readSecret(ref)));
    },
    deliveries: store.deliveries,
    queue,
  };
}

/**
 * The fetch function's Git cache: one per Lambda instance. Lambda gives each
 * instance a /tmp of its own; serverless-offline runs instances as worker
 * threads sharing one, and the cache is guarded within a thread only
 * (source/git/key-queue.ts): two fetches of a track at once in one
 * directory failed there ("commit ... not found", a renamed shallow file).
 */
function defaultGitCacheDir(): string {
  return join(tmpdir(), isMainThread ? 'driftless-git' : `driftless-git-${threadId}`);
}

/**
 * The fetch function: the Git source with its credentials; a fetch's
 * follow-up is a sync, a discovery's the first poll of each new track.
 */
export async function fetchDeps(
  queues: JobQueueFactory = sqsJobQueues,
  env?: Environment,
): Promise<JobDeps> {
  // The fetch queue too: a repository of track documents queues the first poll of a new track.
  const { config, store, queue } = await common({ fetch: true, apply: true }, queues, env);
  source ??= once(async () => {
    // Loaded on the first fetch: isomorphic-git and the pack reader are most of this bundle.
    const { createTrackSource } = await import('../source/track-source.ts');
    return createTrackSource({
      cacheDir: readOptionalEnv(FUNCTION_ENV.gitCacheDir, env) ?? defaultGitCacheDir(),
      readSecret: secretReader(env),
    });
  });
  return { ...(await jobPorts(config, store, queue)), source, ...notifierOf(config, env) };
}

/**
 * The apply function: cluster connections, the apply queue for the dependents
 * a job unblocks, and the fetch queue for a chart to render again for the
 * cluster's capabilities.
 */
export async function applyDeps(
  queues: JobQueueFactory = sqsJobQueues,
  env?: Environment,
): Promise<JobDeps> {
  const { config, store, queue } = await common({ fetch: true, apply: true }, queues, env);
  connect ??= createClusterConnector({ readSecret: secretReader(env) });
  const connectTo = connect;
  return {
    ...(await jobPorts(config, store, queue)),
    cluster: (track) => connectTo(clusterOf(config.clusters, track)),
    // Decryption keys and substituteFrom secrets: readable by this function's role only.
    readSecret: secretReader(env),
    // No Git token here: commit statuses of this function's jobs are set by fetch.
    ...notifierOf(config, env, {
      forward: (track, events, receivers) =>
        queue.enqueue({ type: 'notify', track: track.name, events, receivers }),
    }),
  };
}

/**
 * Sends the events of the jobs this function runs to the configured
 * receivers, when there are any: URLs and signing secrets are secrets under
 * driftless/notify/ (fetch and apply), commit status tokens under
 * driftless/git/ (fetch only).
 */
function notifierOf(
  config: Config,
  env: Environment | undefined,
  options: Pick<NotifierOptions, 'forward'> = {},
): Pick<JobDeps, 'notify'> {
  if (config.notifications.length === 0) return {};
  return {
    notify: notifier(config.notifications, {
      ...options,
      readSecret: secretReader(env),
      ...(config.dashboard?.url === undefined ? {} : { dashboardUrl: config.dashboard.url }),
      onFailure: logUndelivered(functionLogger('notify')),
    }),
  };
}

/** What the drift and rollback functions run with: no secret reader, no credentials of any kind. */
export interface TriggerDeps {
  readonly tracks: readonly Track[];
  /** The sources the schedule queues a discovery of on every tick. */
  readonly tracksFrom?: readonly TracksFrom[];
  /** Their published lists: the schedule tells the tracks of deleted GitTracks being collected. */
  readonly published?: PublishedTrackStore;
  readonly artifacts: ArtifactStore;
  readonly state: StateStore;
  readonly queue: JobQueue;
}

/**
 * The drift and rollback functions. `fetchQueue`: whether the function sends
 * fetch jobs — drift polls refs, rollback's sync action queues a fetch; both
 * send to the apply queue too (drift checks; rollbacks and lifecycle
 * actions), and their roles allow those two queues and no others.
 */
export async function triggerDeps(
  options: { readonly fetchQueue: boolean },
  queues: JobQueueFactory = sqsJobQueues,
  env?: Environment,
): Promise<TriggerDeps> {
  const targets = { apply: true, fetch: options.fetchQueue };
  const { config, store, queue } = await common(targets, queues, env);
  return { ...(await jobPorts(config, store, queue)), tracksFrom: config.tracksFrom };
}

let webAssets: DashboardDeps['assets'] | undefined;

/**
 * The dashboard function: the store to read, both queues for its actions
 * (sync goes to fetch; rollback, unpin, suspend and resume to apply), the
 * objects as the last drift check recorded them (no cluster credentials
 * here), and the built UI from its deployment package. No secret reader:
 * API Gateway signs people in (`dashboard.authorizer`), so `dashboard.users`
 * and `dashboard.tokens` are serve's only.
 */
export async function dashboardDeps(
  queues: JobQueueFactory = sqsJobQueues,
  env?: Environment,
): Promise<DashboardDeps> {
  const { config, store, queue } = await common({ fetch: true, apply: true }, queues, env);
  webAssets ??= directoryAssets(packagedWebDir());
  return {
    // Read per request: a track published by a discovery shows without a cold start.
    tracks: () => knownTracks(config, store.published),
    kept: () => keptTracks(config, store.published),
    state: store.state,
    artifacts: store.artifacts,
    queue,
    objects: async (_track, state) => storedObjects(state),
    readAccess: config.dashboard?.readAccess ?? 'authenticated',
    // Under IAM a SigV4 signing proxy in front of the browser signs in, with no form on the page;
    // under JWT the page's token form does (web/session.ts). IAM is the default authorizer.
    signIn: [config.dashboard?.authorizer.type === 'jwt' ? 'gateway' : 'sigv4'],
    assets: webAssets,
  };
}

/**
 * What every job-running function shares. The tracks are read on every
 * call (each job), so a track published by a discovery since the last job
 * is known to the next one, in a warm container too.
 */
async function jobPorts(config: Config, store: ReturnType<typeof functionStore>, queue: JobQueue) {
  return {
    tracks: await knownTracks(config, store.published),
    config,
    published: store.published,
    artifacts: store.artifacts,
    state: store.state,
    queue,
  };
}

/** `make` called once; its promise shared (and forgotten when it fails, so the next job retries). */
function once<T>(make: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | undefined;
  return () => {
    made ??= make();
    made.catch(() => {
      made = undefined;
    });
    return made;
  };
}
