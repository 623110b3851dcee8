/**
 * The dashboard in `driftless serve`: the shared routes (dashboard/) over
 * serve's ports — actions go into the same per-track queue as webhooks,
 * objects are read live from the cluster, users and tokens come from the
 * config's `dashboard:` secrets, read once at start.
 */
import type { Environment } from '../config/env.ts';
import { readSecret, readSecretFor } from '../config/read-secret.ts';
import type { Track } from '../config/types.ts';
import { identify, type DashboardCredentials } from '../dashboard/credentials.ts';
import { ActionsUnavailableError, handleDashboard } from '../dashboard/dashboard-routes.ts';
import type { DashboardRequest, DashboardResponse } from '../dashboard/http-types.ts';
import { storedObjects } from '../dashboard/read-model.ts';
import type { ObservedObjects } from '../dashboard/types.ts';
import { directoryAssets, packageWebDir } from '../dashboard/web-assets.ts';
import { messageOf } from '../errors.ts';
import { silentLogger, type Logger } from '../logger.ts';
import type { JobQueue } from '../sync/jobs.ts';
import type { LocalContext } from '../sync/local-context.ts';
import { observeObjects } from '../sync/object-statuses.ts';
import { keptTracks } from '../sync/published-tracks.ts';
import { readWithinTimeout } from '../sync/track-cluster.ts';
import type { TrackState } from '../sync/track-state.ts';
import { QueueClosedError } from './track-queue.ts';

/** How long one live reading of a track's objects answers the page's polls (every 5 s). */
const LIVE_OBJECTS_TTL_MS = 3_000;

/** A dashboard request as serve's HTTP routes hand it over: identity still to be established. */
export type ServeDashboardRequest = Omit<DashboardRequest, 'identity'>;

export interface ServeDashboardOptions {
  readonly tracks: () => readonly Track[];
  readonly queue: JobQueue;
  readonly env?: Environment;
  /** Where the built UI is; default dist/web of this package. */
  readonly webDir?: string;
  /** Told of credentials ignored at start; default silent. */
  readonly logger?: Logger;
}

/**
 * The users' passwords and the tokens, read from their secrets. An empty one (an empty file,
 * or one holding only a line break) is ignored, as an empty webhook secret is: it would match
 * anyone sending nothing. The log line names the field, never a value.
 */
async function credentialsOf(
  ctx: LocalContext,
  env: Environment | undefined,
  logger: Logger,
): Promise<DashboardCredentials> {
  const dashboard = ctx.config.dashboard;
  if (dashboard === undefined) return { users: [], tokens: [] };
  const resolve = ctx.readSecret ?? ((ref) => readSecret(ref, env));
  const ignored = (field: string): undefined => {
    logger.warn('dashboard credential is empty and ignored', { field });
    return undefined;
  };
  const users = await Promise.all(
    dashboard.users.map(async (user, index) => {
      const field = `dashboard.users[${index}].password`;
      const password = await readSecretFor(field, () => resolve(user.password));
      return password === '' ? ignored(field) : { name: user.name, password };
    }),
  );
  const tokens = await Promise.all(
    dashboard.tokens.map(async (ref, index) => {
      const token = await readSecretFor(`dashboard.tokens[${index}]`, () => resolve(ref));
      return token === '' ? ignored(`dashboard.tokens[${index}]`) : token;
    }),
  );
  return { users: users.filter((user) => user !== undefined), tokens };
}

/**
 * The objects as the cluster has them now; the last drift check's when it cannot be read. The
 * reading ends within the track's `timeout`, as `status --objects` does: an API server that
 * stops answering gets the page the stored objects and the timeout's error, not a request that
 * waits a minute or more per read.
 */
async function liveObjects(
  ctx: LocalContext,
  track: Track,
  state: TrackState,
): Promise<ObservedObjects> {
  const observedAt = new Date().toISOString();
  try {
    const objects = await readWithinTimeout(
      track,
      'dashboard read',
      await ctx.cluster(track),
      (cluster, signal) =>
        observeObjects(track, {
          cluster,
          signal,
          artifacts: ctx.artifacts,
          state: ctx.state,
          ...(ctx.readSecret === undefined ? {} : { readSecret: ctx.readSecret }),
        }),
    );
    return { observedAt, source: 'live', objects };
  } catch (error) {
    return { ...storedObjects(state), error: `the cluster could not be read: ${messageOf(error)}` };
  }
}

/**
 * The dashboard's request handler; reads the users' and tokens' secrets now,
 * so a missing one stops `serve` at start rather than at someone's sign-in.
 */
export async function serveDashboard(
  ctx: LocalContext,
  options: ServeDashboardOptions,
): Promise<(request: ServeDashboardRequest) => Promise<DashboardResponse>> {
  const credentials = await credentialsOf(ctx, options.env, options.logger ?? silentLogger);
  const assets = directoryAssets(options.webDir ?? packageWebDir());
  const signIn = [
    ...(credentials.users.length > 0 ? (['basic'] as const) : []),
    ...(credentials.tokens.some((token) => token !== undefined) ? (['bearer'] as const) : []),
  ];
  // Once serve is stopping the queue refuses jobs; the person asking gets 503, not 500.
  const queue: JobQueue = {
    enqueue: (job) =>
      options.queue.enqueue(job).catch((error: unknown) => {
        if (!(error instanceof QueueClosedError)) throw error;
        throw new ActionsUnavailableError(
          'driftless serve is shutting down; ask again once it is back',
          { cause: error },
        );
      }),
  };
  // Everyone looking at a track shares one reading of the cluster, while it runs and for a few
  // seconds after: the page's polls of a slow or hung cluster wait on the reading under way
  // rather than each sending its own (`at` is when it ended; undefined while it runs).
  const recent = new Map<string, { at: number | undefined; objects: Promise<ObservedObjects> }>();
  const objects = (track: Track, state: TrackState): Promise<ObservedObjects> => {
    const cached = recent.get(track.name);
    if (
      cached !== undefined &&
      (cached.at === undefined || Date.now() - cached.at < LIVE_OBJECTS_TTL_MS)
    ) {
      return cached.objects;
    }
    const entry: { at: number | undefined; objects: Promise<ObservedObjects> } = {
      at: undefined,
      // liveObjects never rejects: a failed reading is the stored objects with its error.
      objects: liveObjects(ctx, track, state).finally(() => (entry.at = Date.now())),
    };
    recent.set(track.name, entry);
    return entry.objects;
  };
  return (request) =>
    handleDashboard(
      { ...request, identity: identify(request.headers['authorization'], credentials) },
      {
        tracks: async () => options.tracks(),
        kept: () => keptTracks(ctx.config, ctx.published),
        state: ctx.state,
        artifacts: ctx.artifacts,
        queue,
        objects,
        readAccess: ctx.config.dashboard?.readAccess ?? 'authenticated',
        signIn,
        assets,
      },
    );
}
