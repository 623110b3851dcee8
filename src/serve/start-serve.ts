/**
 * `driftless serve` as a library: the local stack over a CLI context — the
 * per-track queue, the job runner, the scheduler and the HTTP server — and
 * its orderly shutdown.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readSecret, readSecretFor } from '../config/read-secret.ts';
import type { Environment } from '../config/env.ts';
import { isWebhookHost, type Notification, type WebhookHost } from '../config/types.ts';
import type { SecretRef } from '../config/secret-ref.ts';
import { InterruptedError, messageOf } from '../errors.ts';
import { silentLogger, type Logger } from '../logger.ts';
import { DEFAULT_MAX_BYTES } from '../source/webhooks/index.ts';
import type { DeliveryLog } from '../store/ports.ts';
import { logUndelivered, notifier } from '../notify/deliver.ts';
import { acceptWebhook } from '../sync/accept-webhook.ts';
import type { LocalContext } from '../sync/local-context.ts';
import type { ExecuteJob } from '../sync/run-job.ts';
import { readTrackState, type TrackState } from '../sync/track-state.ts';
import { keptTracks, knownTracks } from '../sync/published-tracks.ts';
import { REMOVED_TRACK_MESSAGE, tracksOffConfig } from '../sync/schedule.ts';
import { httpRoutes } from './http-routes.ts';
import { serveDashboard } from './serve-dashboard.ts';
import { createJobRunner } from './job-runner.ts';
import { startScheduler, type SchedulerTimers } from './scheduler.ts';
import { ServeMetrics } from './serve-metrics.ts';
import { TrackQueue } from './track-queue.ts';

export const DEFAULT_PORT = 8080;

export interface ServeOptions {
  /** TCP port; 0 lets the system pick one (tests). Default 8080. */
  readonly port?: number;
  /** Address to listen on; default every interface, since Git hosts deliver from outside. */
  readonly host?: string;
  /** For `env:` webhook secrets when the context does not resolve secrets itself. */
  readonly env?: Environment;
  readonly logger?: Logger;
  /** Tracks running a job at once; default 4. */
  readonly concurrency?: number;
  /** Largest webhook body, in bytes; default 1 MiB. */
  readonly maxBodyBytes?: number;
  /** Default: the `src/sync/` use-cases over the context. Unit tests pass fakes. */
  readonly execute?: ExecuteJob;
  /** Poll and drift-check every track at start; default true. */
  readonly runAtStart?: boolean;
  readonly timers?: SchedulerTimers;
  /** Where the dashboard's built UI is; default dist/web of this package. */
  readonly webDir?: string;
}

export interface RunningServe {
  /** `http://127.0.0.1:<port>` when listening on every interface. */
  readonly url: string;
  readonly port: number;
  readonly queue: TrackQueue;
  /**
   * Stops taking webhooks and scheduled work, asks running jobs to stop (a
   * sync sends nothing more, ends its health wait, records what it did and
   * gives its track back) and waits for them; waiting jobs are dropped (the
   * next start polls again). Until they are done the server still answers:
   * 503 to webhooks, dashboard actions and /healthz. Then it is closed.
   */
  close(): Promise<void>;
}

/** A delivery log in memory, for contexts built without one (tests): a restart forgets it. */
function memoryDeliveryLog(): DeliveryLog {
  const seen = new Set<string>();
  return {
    async markDelivery(id) {
      if (seen.has(id)) return false;
      seen.add(id);
      return true;
    },
    async isDelivered(id) {
      return seen.has(id);
    },
  };
}

/** Every configured host's secrets, read once at start so a missing one fails now, not on a push. */
async function webhookSecrets(
  ctx: LocalContext,
  env: Environment | undefined,
): Promise<Partial<Record<WebhookHost, readonly string[]>>> {
  const resolve = ctx.readSecret ?? ((ref) => readSecret(ref, env));
  const secrets: Partial<Record<WebhookHost, readonly string[]>> = {};
  for (const [host, config] of Object.entries(ctx.config.webhooks)) {
    if (!config) continue;
    const field = (index: number) =>
      config.secrets.length === 1
        ? `webhooks.${host}.secret`
        : `webhooks.${host}.secrets[${index}]`;
    secrets[host as WebhookHost] = await Promise.all(
      config.secrets.map((ref, index) => readSecretFor(field(index), () => resolve(ref))),
    );
  }
  return secrets;
}

/** A receiver's secret references by field name. */
function secretsOf(receiver: Notification): Record<string, SecretRef> {
  switch (receiver.type) {
    case 'slack':
    case 'msteams':
      return { url: receiver.url };
    case 'webhook':
      return { url: receiver.url, ...(receiver.secret ? { secret: receiver.secret } : {}) };
    case 'commitStatus':
      return { token: receiver.token };
    case 'sns':
    case 'eventbridge':
      return {};
  }
}

/**
 * Reads every notification receiver's secrets once at start and warns, naming the field and
 * never a value, about each that cannot be read (an unset `env:` variable, a missing file):
 * otherwise the first sign would be a `notification not delivered` at the first event, maybe
 * days later. A warning, not a refusal, as serve runs on without that receiver; delivery reads
 * them again each time, so a file written later is used.
 */
async function checkReceiverSecrets(
  ctx: LocalContext,
  env: Environment | undefined,
  logger: Logger,
): Promise<void> {
  const resolve = ctx.readSecret ?? ((ref) => readSecret(ref, env));
  const fields = ctx.config.notifications.flatMap((receiver, index) =>
    Object.entries(secretsOf(receiver)).map(([name, ref]) => ({
      receiver,
      field: `notifications[${index}].${name}`,
      ref,
    })),
  );
  await Promise.all(
    fields.map(({ receiver, field, ref }) =>
      readSecretFor(field, () => resolve(ref)).catch((error: unknown) =>
        logger.warn('notification receiver secret cannot be read', {
          receiver: receiver.name,
          field,
          error: messageOf(error),
        }),
      ),
    ),
  );
}

/** How long answers in flight may take to finish once the jobs are done and serve closes. */
const CLOSE_GRACE_MS = 2_000;
/** How long startServe waits for the start-up tick to queue its polls (it reads the store). */
const STARTUP_TICK_WAIT_MS = 10_000;

/** Starts the local stack; resolves once the server listens. */
export async function startServe(
  ctx: LocalContext,
  options: ServeOptions = {},
): Promise<RunningServe> {
  const logger = options.logger ?? silentLogger;
  // The config's tracks and those `tracksFrom` discoveries published, read again after each discovery.
  let tracks = ctx.config.tracks;
  const refreshTracks = async (): Promise<void> => {
    tracks = await knownTracks(ctx.config, ctx.published);
  };
  const secrets = await webhookSecrets(ctx, options.env);
  await checkReceiverSecrets(ctx, options.env, logger);
  const metrics = new ServeMetrics();
  // Aborted at close(): running jobs stop instead of holding the shutdown (and their tracks).
  const stopping = new AbortController();
  const queue: TrackQueue = new TrackQueue(
    createJobRunner({
      ports: {
        get tracks() {
          return tracks;
        },
        config: ctx.config,
        ...(ctx.published === undefined ? {} : { published: ctx.published }),
        artifacts: ctx.artifacts,
        state: ctx.state,
        source: () => ctx.source(),
        cluster: (track) => ctx.cluster(track),
        ...(ctx.readSecret === undefined ? {} : { readSecret: ctx.readSecret }),
        signal: stopping.signal,
        ...(ctx.config.notifications.length === 0
          ? {}
          : {
              notify: notifier(ctx.config.notifications, {
                readSecret: ctx.readSecret ?? ((ref) => readSecret(ref, options.env)),
                ...(ctx.config.dashboard?.url === undefined
                  ? {}
                  : { dashboardUrl: ctx.config.dashboard.url }),
                onFailure: logUndelivered(logger),
              }),
            }),
      },
      enqueue: (job, context) => queue.enqueue(job, context),
      onDiscovered: refreshTracks,
      metrics,
      logger,
      ...(options.execute ? { execute: options.execute } : {}),
    }),
    {
      concurrency: options.concurrency,
      onError: (job, error) =>
        logger.error('job runner failed', { track: job.track, job: job.type, error }),
    },
  );

  const scrape = async (): Promise<string> => {
    const states = new Map<string, TrackState>();
    await Promise.all(
      tracks.map(async (track) => {
        // A store hiccup leaves one track's counters at 0 rather than failing the scrape.
        const state = await readTrackState(ctx.state, track.name).catch(() => undefined);
        if (state) states.set(track.name, state);
      }),
    );
    const { removed, collecting, held } = await tracksOffConfig(tracks, ctx.state, () =>
      keptTracks(ctx.config, ctx.published),
    ).catch(() => ({ removed: [], collecting: [], held: [] }));
    return metrics.render({
      tracks,
      states,
      removed,
      collecting: collecting.map((track) => track.name),
      held: held.map((track) => track.name),
      queueLength: queue.length,
      jobsRunning: queue.running,
    });
  };

  const dashboard = await serveDashboard(ctx, {
    tracks: () => tracks,
    queue: { enqueue: (job) => queue.enqueue(job) },
    ...(options.env === undefined ? {} : { env: options.env }),
    ...(options.webDir === undefined ? {} : { webDir: options.webDir }),
    logger,
  });
  const deliveries = ctx.deliveries ?? memoryDeliveryLog();
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BYTES;
  const server = createServer(
    httpRoutes({
      acceptWebhook: (provider, request) => {
        const receivedAt = Date.now();
        return acceptWebhook(provider, request, {
          tracks,
          secretsOf: async (host) => secrets[host],
          deliveries,
          // Each job carries when its webhook arrived, for the time-to-deploy histogram.
          queue: { enqueue: (job) => queue.enqueue(job, { receivedAt }) },
          maxBytes: maxBodyBytes,
          accepting: () => queue.accepting,
        });
      },
      webhookConfigured: (provider) => isWebhookHost(provider) && secrets[provider] !== undefined,
      maxBodyBytes,
      accepting: () => queue.accepting,
      metrics: scrape,
      dashboard,
      onWebhookAnswer: (provider, status) => metrics.countWebhook(provider, status),
      logger,
    }),
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? DEFAULT_PORT, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port, address } = server.address() as AddressInfo;
  const unspecified = address === '::' || address === '0.0.0.0';
  const host = unspecified ? '127.0.0.1' : address.includes(':') ? `[${address}]` : address;
  const url = `http://${host}:${port}`;
  logger.info('listening', {
    url,
    tracks: tracks.length,
    webhooks: Object.keys(secrets),
  });

  const scheduler = startScheduler(
    {
      get tracks() {
        return tracks;
      },
      tracksFrom: ctx.config.tracksFrom,
      published: ctx.published,
      state: ctx.state,
      queue,
    },
    {
      ...(options.runAtStart === undefined ? {} : { runAtStart: options.runAtStart }),
      ...(options.timers === undefined ? {} : { timers: options.timers }),
      onError: (error) => {
        if (queue.accepting) logger.warn('scheduled jobs not queued', { error: messageOf(error) });
      },
      onRemovedTrack: (track) => logger.warn(REMOVED_TRACK_MESSAGE, { track }),
    },
  );

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      logger.info('shutting down', { running: queue.running, waiting: queue.length });
      scheduler.stop();
      stopping.abort(new InterruptedError('driftless serve is stopping'));
      // The server listens on while running jobs finish: /healthz says "shutting down" and
      // webhooks and actions get 503 (the queue is closed), where a closed port would only
      // refuse connections and tell a Git host or a load balancer nothing.
      const { dropped } = await queue.close();
      const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Idle keep-alive connections would hold close() open until their clients drop them;
      // answers being written get a moment to finish before the rest are cut.
      server.closeIdleConnections();
      const grace = setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS);
      await serverClosed;
      clearTimeout(grace);
      logger.info('stopped', { dropped });
    })();
    return closing;
  };
  // Returned once the start-up poll is queued, so that `queue.idle()` waits for it to finish;
  // no longer than STARTUP_TICK_WAIT_MS: a store that does not answer must not hold the start.
  // The wait's timer is not ref'd: it keeps no process alive once it is not needed.
  await Promise.race([scheduler.started, sleep(STARTUP_TICK_WAIT_MS, undefined, { ref: false })]);
  return { url, port, queue, close };
}
