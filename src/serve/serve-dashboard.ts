/**
 * The dashboard in `driftless serve`: the shared routes (dashboard/) over
 * serve's ports — actions go into the same per-track queue as webhooks,
 * objects are read live from the cluster, users and tokens come from the
 * config's `dashboard:` secrets, read once at start.
 */
import type { Environment } from '../config/env.ts';
import { readSecret } from '../config/read-secret.ts';
import type { Track } from '../config/types.ts';
import { identify, type DashboardCredentials } from '../dashboard/credentials.ts';
import { handleDashboard } from '../dashboard/dashboard-routes.ts';
import type { DashboardRequest, DashboardResponse } from '../dashboard/http-types.ts';
import { storedObjects } from '../dashboard/read-model.ts';
import type { ObservedObjects } from '../dashboard/types.ts';
import { directoryAssets, packageWebDir } from '../dashboard/web-assets.ts';
import { messageOf } from '../errors.ts';
import type { JobQueue } from '../sync/jobs.ts';
import type { LocalContext } from '../sync/local-context.ts';
import { observeObjects } from '../sync/object-statuses.ts';
import type { TrackState } from '../sync/track-state.ts';

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
}

async function credentialsOf(
  ctx: LocalContext,
  env: Environment | undefined,
): Promise<DashboardCredentials> {
  const dashboard = ctx.config.dashboard;
  if (dashboard === undefined) return { users: [], tokens: [] };
  const resolve = ctx.readSecret ?? ((ref) => readSecret(ref, env));
  return {
    users: await Promise.all(
      dashboard.users.map(async (user) => ({
        name: user.name,
        password: await resolve(user.password),
      })),
    ),
    tokens: await Promise.all(dashboard.tokens.map(resolve)),
  };
}

/** The objects as the cluster has them now; the last drift check's when it cannot be read. */
async function liveObjects(
  ctx: LocalContext,
  track: Track,
  state: TrackState,
): Promise<ObservedObjects> {
  const observedAt = new Date().toISOString();
  try {
    const objects = await observeObjects(track, {
      cluster: await ctx.cluster(track),
      artifacts: ctx.artifacts,
      state: ctx.state,
      ...(ctx.readSecret === undefined ? {} : { readSecret: ctx.readSecret }),
    });
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
  const credentials = await credentialsOf(ctx, options.env);
  const assets = directoryAssets(options.webDir ?? packageWebDir());
  const signIn = [
    ...(credentials.users.length > 0 ? (['basic'] as const) : []),
    ...(credentials.tokens.length > 0 ? (['bearer'] as const) : []),
  ];
  // Everyone looking at a track shares one reading of the cluster for a few seconds.
  const recent = new Map<string, { at: number; objects: Promise<ObservedObjects> }>();
  const objects = (track: Track, state: TrackState): Promise<ObservedObjects> => {
    const now = Date.now();
    const cached = recent.get(track.name);
    if (cached !== undefined && now - cached.at < LIVE_OBJECTS_TTL_MS) return cached.objects;
    const reading = liveObjects(ctx, track, state);
    recent.set(track.name, { at: now, objects: reading });
    return reading;
  };
  return (request) =>
    handleDashboard(
      { ...request, identity: identify(request.headers['authorization'], credentials) },
      {
        tracks: async () => options.tracks(),
        state: ctx.state,
        artifacts: ctx.artifacts,
        queue: options.queue,
        objects,
        readAccess: ctx.config.dashboard?.readAccess ?? 'authenticated',
        signIn,
        assets,
      },
    );
}
