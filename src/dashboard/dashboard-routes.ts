/**
 * The dashboard's routes (docs/dashboard.md), the same in `driftless serve`
 * and the dashboard function: the UI's files at `/` and `/assets/`, the
 * read API under `/api/`, and the actions, which queue jobs exactly as the
 * rollback function's manual invoke does (sync/request-action.ts) with the
 * user recorded as `by`.
 *
 * Actions are CSRF-safe without tokens: they are POSTs that must carry
 * `Content-Type: application/json` (a form or a no-CORS fetch from another
 * site cannot send it) and, when the browser names the request's origin,
 * come from this very origin.
 */
import type { Track } from '../config/types.ts';
import { DriftlessError, messageOf, UsageError } from '../errors.ts';
import { ArtifactNotFoundError } from '../store/errors.ts';
import type { ArtifactStore, StateStore } from '../store/ports.ts';
import type { JobQueue } from '../sync/jobs.ts';
import {
  parseRollbackRequest,
  requestRollback,
  USAGE as MANUAL_INVOKE_USAGE,
  type RollbackRequest,
} from '../sync/request-action.ts';
import { RollbackTargetError } from '../sync/rollback.ts';
import { trackNamed, UnknownTrackError } from '../sync/track-named.ts';
import type { TrackState } from '../sync/track-state.ts';
import { isFullCommitId } from '../object-id.ts';
import { jsonSyntaxProblem } from '../source/webhooks/json-syntax.ts';
import type { DashboardRequest, DashboardResponse, Identity } from './http-types.ts';
import { overview, trackDetail } from './read-model.ts';
import { revisionDiff, revisionManifests } from './revision-text.ts';
import type { CollectingTrack, HeldTrack, KeptTracks } from '../sync/published-tracks.ts';
import { tracksOffConfig, type TracksOffConfig } from '../sync/schedule.ts';
import {
  configuredStatusJson,
  offConfigStatusJson,
  type KeptBySource,
} from '../sync/status-json.ts';
import { readTrackState } from '../sync/track-state.ts';
import {
  DASHBOARD_ACTIONS,
  type ActionAnswer,
  type DashboardAction,
  type ObservedObjects,
  type SessionJson,
} from './types.ts';

/** A file of the built UI (web/, built into dist/web/). */
export interface WebAsset {
  readonly body: string;
  readonly contentType: string;
}

export interface DashboardDeps {
  /** The configured and published tracks, read per request (discoveries add tracks). */
  readonly tracks: () => Promise<readonly Track[]>;
  /**
   * What the config's sources keep off their lists (published-tracks.ts keptTracks): the tracks
   * of deleted GitTracks whose objects are being collected, and those of documents refused for
   * now; read per request. Absent, none are shown.
   */
  readonly kept?: () => Promise<KeptTracks>;
  readonly state: StateStore;
  readonly artifacts: ArtifactStore;
  /** Where actions go: the same queues the webhooks and schedules feed. */
  readonly queue: JobQueue;
  /** The track's objects: live in serve, recorded by the last drift check in AWS. */
  readonly objects: (track: Track, state: TrackState) => Promise<ObservedObjects>;
  readonly readAccess: 'open' | 'authenticated';
  /** How a person signs in here (the UI shows the matching form). */
  readonly signIn: SessionJson['signIn'];
  /** The UI's files by path (`index.html`, `assets/app-<hash>.js`); undefined when absent. */
  readonly assets: (path: string) => Promise<WebAsset | undefined>;
}

/** Sent with every answer: no framing, no sniffing, nothing from elsewhere. */
const SECURITY_HEADERS = {
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'same-origin',
  'X-Frame-Options': 'DENY',
} as const;

const PAGE_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

function respond(
  status: number,
  body: string,
  contentType: string,
  headers: Record<string, string> = {},
): DashboardResponse {
  return {
    status,
    headers: { ...SECURITY_HEADERS, 'Content-Type': contentType, ...headers },
    body,
  };
}

function json(status: number, body: unknown): DashboardResponse {
  return respond(status, `${JSON.stringify(body)}\n`, 'application/json; charset=utf-8', {
    'Cache-Control': 'no-store',
  });
}

const text = (body: string, contentType: string): DashboardResponse =>
  respond(200, body, contentType, { 'Cache-Control': 'no-store' });

const error = (status: number, message: string): DashboardResponse =>
  json(status, { error: message });

/**
 * The queue takes no jobs now (`driftless serve` is shutting down): an action is answered 503,
 * which says to ask again later, rather than 500.
 */
export class ActionsUnavailableError extends DriftlessError {
  readonly code = 'ACTIONS_UNAVAILABLE';
}

/**
 * An action names the track of a deleted GitTrack whose objects are being collected: it has no
 * config left to sync, roll back or pin by, and its source's discoveries own it until collected.
 * Answered 409: the track exists (it is listed), but its state refuses the action.
 */
export class TrackBeingCollectedError extends DriftlessError {
  readonly code = 'TRACK_BEING_COLLECTED';
}

/**
 * An action names a track its source keeps while the document that gave it (a GitTrack, a file)
 * is refused: nothing syncs it until the document is mended. Answered 409, as for a track being
 * collected: it is listed, but its state refuses the action.
 */
export class TrackHeldError extends DriftlessError {
  readonly code = 'TRACK_HELD';
}

/**
 * An action names a track removed from the config whose state is still stored: it has no config
 * to sync, roll back or pin by, and only a delete (not a dashboard action) collects it. Answered
 * 409, as for a track being collected: it is listed, but its state refuses the action.
 */
export class TrackRemovedFromConfigError extends DriftlessError {
  readonly code = 'TRACK_REMOVED_FROM_CONFIG';
}

/**
 * A suspend or resume of a track its config suspends (`suspend: true` in driftless.yaml): a
 * resume only lifts a stored suspension, so the track would stay suspended, and a suspend would
 * change nothing a person can see. Answered 409, as nothing is queued: only the config lifts it.
 */
export class TrackSuspendedInConfigError extends DriftlessError {
  readonly code = 'TRACK_SUSPENDED_IN_CONFIG';
}

/** A request refused before any work: answered as is. */
class Refusal extends Error {
  constructor(readonly response: DashboardResponse) {
    super(response.body);
  }
}

function signedInUser(request: DashboardRequest): string | undefined {
  return request.identity.kind === 'user' ? request.identity.name : undefined;
}

function refusedReason(identity: Identity): string | undefined {
  return identity.kind === 'anonymous' ? identity.refused : undefined;
}

/** Wrong credentials are refused everywhere; missing ones only where reading needs them. */
function requireReader(request: DashboardRequest, deps: DashboardDeps): void {
  const refused = refusedReason(request.identity);
  if (refused !== undefined) throw new Refusal(error(401, refused));
  if (deps.readAccess === 'authenticated' && signedInUser(request) === undefined) {
    throw new Refusal(error(401, 'sign in to read this dashboard (readAccess: authenticated)'));
  }
}

/** The user who may act, after the CSRF checks of the module comment. */
function requireActor(request: DashboardRequest): string {
  const refused = refusedReason(request.identity);
  if (refused !== undefined) throw new Refusal(error(401, refused));
  const user = signedInUser(request);
  if (user === undefined) throw new Refusal(error(401, 'sign in to run actions'));
  const contentType = request.headers['content-type'] ?? '';
  if (!/^application\/json\s*(;|$)/i.test(contentType)) {
    throw new Refusal(error(415, 'actions take a JSON body (Content-Type: application/json)'));
  }
  if (request.headers['sec-fetch-site'] === 'cross-site') {
    throw new Refusal(error(403, 'actions are refused from other sites'));
  }
  const origin = request.headers['origin'];
  if (origin !== undefined && origin !== 'null') {
    let host: string | undefined;
    try {
      host = new URL(origin).host;
    } catch {
      host = undefined;
    }
    if (host === undefined || host !== request.headers['host']) {
      throw new Refusal(error(403, `actions are refused from origin ${origin}`));
    }
  }
  if (origin === 'null') throw new Refusal(error(403, 'actions are refused from origin null'));
  return user;
}

function parseBody(body: string): Record<string, unknown> {
  if (body.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch (cause) {
    // Where, not what: answers to refused actions are logged, and the body may hold anything.
    throw new UsageError(`the body is not JSON: ${jsonSyntaxProblem(body, cause)}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new UsageError('the body must be a JSON object');
  }
  return parsed as Record<string, unknown>;
}

async function runAction(
  track: Track,
  action: DashboardAction,
  body: Record<string, unknown>,
  user: string,
  deps: DashboardDeps,
  tracks: readonly Track[],
): Promise<ActionAnswer> {
  // The action is the route's, never the body's: a rollback's body holds its target alone, so
  // that POST …/rollback cannot carry an "action" (delete, suspend) of the manual invoke's form.
  const allowed: readonly string[] = action === 'rollback' ? ROLLBACK_BODY_FIELDS : [];
  // The fields are not named back: answers to refused actions are logged, and a body's keys
  // are whatever was sent.
  if (Object.keys(body).some((key) => !allowed.includes(key))) {
    throw new UsageError(
      action === 'rollback'
        ? `${ROLLBACK_BODY} and no other field`
        : `${action} takes an empty body ({}) or none`,
    );
  }
  const request = dashboardRequest(
    action === 'rollback' ? { ...body, track: track.name } : { track: track.name, action },
  );
  const answer = await requestRollback(request, { ...deps, tracks }, user);
  return {
    track: track.name,
    action,
    queued: true,
    ...('revision' in answer ? { revision: answer.revision } : {}),
    by: user,
  };
}

/** What a dashboard rollback's body may hold: its target. */
const ROLLBACK_BODY_FIELDS: readonly string[] = ['revision', 'previous'];

/** What a dashboard rollback takes, for its 400 answers. */
const ROLLBACK_BODY = 'rollback takes {"revision": "<sha>"} or {"previous": true}';

/**
 * The manual invoke's checks of a request (one shared parser), with the dashboard's usage in
 * place of the invoke's: its track comes from the path, its action from the route, and delete
 * is no dashboard action, so the invoke's forms would send people to bodies refused here.
 */
function dashboardRequest(event: Record<string, unknown>): RollbackRequest {
  try {
    return parseRollbackRequest(event);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    const reason = error.message.endsWith(`; ${MANUAL_INVOKE_USAGE}`)
      ? error.message.slice(0, -`; ${MANUAL_INVOKE_USAGE}`.length)
      : error.message;
    throw new UsageError(`${reason}; ${ROLLBACK_BODY}`, { cause: error });
  }
}

const TRACK_PATH = /^\/api\/tracks\/([^/]+)(?:\/(.*))?$/;

/**
 * What a track's path names: a configured (or published) track, one being collected, one its
 * source keeps while its document is refused, or one removed from the config that still has
 * state.
 */
type NamedTrack =
  | { readonly kind: 'configured'; readonly track: Track }
  | { readonly kind: 'collecting'; readonly track: CollectingTrack }
  | { readonly kind: 'held'; readonly track: HeldTrack }
  | { readonly kind: 'removed'; readonly track: { readonly name: string } };

/**
 * The tracks with state that neither the config nor a source names, as `status -o json` lists
 * them after the tracks: those of deleted GitTracks being collected, those of documents refused
 * for now, then those removed from the config (the tracksOffConfig split the schedule and serve
 * metrics use).
 */
function offConfig(tracks: readonly Track[], deps: DashboardDeps): Promise<TracksOffConfig> {
  return tracksOffConfig(
    tracks,
    deps.state,
    deps.kept ?? (async () => ({ collecting: [], held: [] })),
  );
}

/** A track off the config as `GET /api/tracks` and `status -o json` list it. */
async function offConfigEntry(name: string, kept: KeptBySource | undefined, state: StateStore) {
  return offConfigStatusJson(name, await readTrackState(state, name), kept);
}

/** The `GET /api/tracks` entries of the tracks off the config, in its order. */
function offConfigEntries(listed: TracksOffConfig, state: StateStore) {
  return Promise.all([
    ...listed.collecting.map((track) => offConfigEntry(track.name, { collecting: track }, state)),
    ...listed.held.map((track) => offConfigEntry(track.name, { held: track }, state)),
    ...listed.removed.map((name) => offConfigEntry(name, undefined, state)),
  ]);
}

/**
 * The track `name` names. The stored tracks and published lists are read only for a name no
 * track has, so the pages of configured tracks cost no more than before.
 *
 * @throws {UnknownTrackError} when it is neither configured nor off the config with state.
 */
async function namedTrack(
  tracks: readonly Track[],
  name: string,
  deps: DashboardDeps,
): Promise<NamedTrack> {
  try {
    return { kind: 'configured', track: trackNamed(tracks, name) };
  } catch (unknown) {
    if (!(unknown instanceof UnknownTrackError)) throw unknown;
    const { collecting, held, removed } = await offConfig(tracks, deps);
    const being = collecting.find((track) => track.name === name);
    if (being !== undefined) return { kind: 'collecting', track: being };
    const kept = held.find((track) => track.name === name);
    if (kept !== undefined) return { kind: 'held', track: kept };
    if (removed.includes(name)) return { kind: 'removed', track: { name } };
    throw unknown;
  }
}

/** Why an action on a track off the config is refused. */
function offConfigRefusal(
  named: Exclude<NamedTrack, { kind: 'configured' }>,
  action: DashboardAction,
): DriftlessError {
  const { name } = named.track;
  if (named.kind === 'removed') {
    return new TrackRemovedFromConfigError(
      `track "${name}" was removed from the config; its state and objects stay until "driftless delete --track ${name}" collects them: it takes no ${action}`,
    );
  }
  if (named.kind === 'held') {
    const { document, source } = named.track;
    return new TrackHeldError(
      `track "${name}" is held: tracksFrom source "${source}" refuses ${document ?? 'the document that gave it'} for now, and nothing syncs the track until it is mended: it takes no ${action}`,
    );
  }
  const { gitTrack, source } = named.track;
  return new TrackBeingCollectedError(
    `track "${name}" is being collected (GitTrack ${gitTrack} was deleted; the discoveries of tracksFrom source "${source}" collect its objects): it takes no ${action}`,
  );
}

/**
 * Refuses a suspend or resume the track's config makes pointless (TrackSuspendedInConfigError);
 * other actions go ahead: a sync or rollback is queued, and skipped as on any suspended track.
 */
function refuseConfigSuspension(track: Track, action: DashboardAction): void {
  if (!track.suspend || (action !== 'suspend' && action !== 'resume')) return;
  const why = `track "${track.name}" is suspended in driftless.yaml (suspend: true)`;
  throw new TrackSuspendedInConfigError(
    action === 'resume'
      ? `${why}: resume cannot lift that; remove suspend: true from the track there to resume it`
      : `${why}: it is already suspended; remove suspend: true from the track there to resume it`,
  );
}

/** The routes under /api/ that name a track. */
async function trackRoute(
  request: DashboardRequest,
  deps: DashboardDeps,
  name: string,
  rest: string | undefined,
): Promise<DashboardResponse> {
  // Who asks is checked before the track is looked up: the answer for a track not configured
  // lists those that are, which only someone allowed to read (or act) may see.
  if (request.method === 'POST') {
    const user = requireActor(request);
    const action = rest as DashboardAction;
    if (!DASHBOARD_ACTIONS.includes(action)) {
      return error(404, `no action "${rest ?? ''}"; actions: ${DASHBOARD_ACTIONS.join(', ')}`);
    }
    const tracks = await deps.tracks();
    const named = await namedTrack(tracks, name, deps);
    if (named.kind !== 'configured') throw offConfigRefusal(named, action);
    refuseConfigSuspension(named.track, action);
    return json(
      202,
      await runAction(named.track, action, parseBody(request.body), user, deps, tracks),
    );
  }
  requireReader(request, deps);
  const named = await namedTrack(await deps.tracks(), name, deps);
  const track = named.track;
  if (named.kind !== 'configured') {
    // No config to observe its objects by, so no track page: its page and its status are its
    // entry of GET /api/tracks. Its stored revisions read as any track's (below).
    if (rest === undefined || rest === '' || rest === 'status') {
      const kept: KeptBySource | undefined =
        named.kind === 'collecting'
          ? { collecting: named.track }
          : named.kind === 'held'
            ? { held: named.track }
            : undefined;
      return json(200, await offConfigEntry(track.name, kept, deps.state));
    }
  } else if (rest === undefined || rest === '') {
    return json(200, await trackDetail(named.track, deps));
  }
  const manifests = /^revisions\/([^/]+)\/manifests$/.exec(rest);
  if (manifests) {
    return text(
      await revisionManifests(track, storedRevision(manifests[1]!), deps.artifacts),
      'application/yaml; charset=utf-8',
    );
  }
  if (rest === 'diff') {
    const from = storedRevision(request.query.get('from') ?? '');
    const to = storedRevision(request.query.get('to') ?? '');
    return text(await revisionDiff(track, from, to, deps.artifacts), 'text/plain; charset=utf-8');
  }
  if (rest === 'status' && named.kind === 'configured') {
    const state = await readTrackState(deps.state, track.name);
    return json(200, configuredStatusJson(named.track, state));
  }
  return error(404, `no route for ${request.method} ${request.path}`);
}

/** A revision id as stored: a full commit sha, with a chart's `+<digest>` suffix. */
function storedRevision(value: string): string {
  const [commit, suffix] = value.split('+');
  if (!isFullCommitId(commit ?? '') || (suffix !== undefined && !/^[0-9a-f]{1,64}$/.test(suffix))) {
    throw new UsageError(`"${value}" is not a stored revision id (a full commit sha)`);
  }
  return value;
}

async function apiRoute(
  request: DashboardRequest,
  deps: DashboardDeps,
): Promise<DashboardResponse> {
  const { method, path } = request;
  if (path === '/api/session' && method === 'GET') {
    const user = signedInUser(request) ?? null;
    const session: SessionJson = {
      user,
      readAccess: deps.readAccess,
      canAct: user !== null,
      signIn: deps.signIn,
    };
    return json(200, session);
  }
  const onTrack = TRACK_PATH.exec(path);
  if (onTrack && (method === 'GET' || method === 'POST')) {
    return trackRoute(request, deps, decodeURIComponent(onTrack[1]!), onTrack[2]);
  }
  if (method !== 'GET') return error(405, `${method} ${path} is not allowed`);
  requireReader(request, deps);
  if (path === '/api/tracks') {
    const tracks = await deps.tracks();
    const states = await Promise.all(tracks.map((track) => readTrackState(deps.state, track.name)));
    // Off the tracks, yet still with state and objects: listed as `status -o json` lists them.
    const offConfigStatuses = await offConfigEntries(await offConfig(tracks, deps), deps.state);
    return json(200, [
      ...tracks.map((track, index) => configuredStatusJson(track, states[index]!)),
      ...offConfigStatuses,
    ]);
  }
  if (path === '/api/overview') {
    const tracks = await deps.tracks();
    return json(200, await overview(tracks, deps, await offConfig(tracks, deps)));
  }
  return error(404, `no route for ${method} ${path}`);
}

async function assetRoute(
  request: DashboardRequest,
  deps: DashboardDeps,
): Promise<DashboardResponse> {
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    return error(405, `${request.method} ${request.path} is not allowed`);
  }
  const page = request.path === '/' || request.path === '/index.html';
  const name = page ? 'index.html' : request.path.slice(1);
  // Only the built files: `assets/<name>` with no way out of the folder.
  if (!page && !/^assets\/[A-Za-z0-9._-]+$/.test(name)) {
    return error(404, `no route for ${request.method} ${request.path}`);
  }
  const asset = await deps.assets(name);
  if (asset === undefined) {
    return page
      ? error(503, 'the dashboard UI is not built: run "npm run build"')
      : error(404, `no file ${name}`);
  }
  return respond(
    200,
    asset.body,
    asset.contentType,
    page
      ? { 'Cache-Control': 'no-cache', 'Content-Security-Policy': PAGE_POLICY }
      : // Asset names carry a content hash: a new build has new names.
        { 'Cache-Control': 'public, max-age=31536000, immutable' },
  );
}

/** How an error a use-case threw is answered. */
function errorResponse(cause: unknown): DashboardResponse | undefined {
  if (cause instanceof Refusal) return cause.response;
  if (cause instanceof UnknownTrackError || cause instanceof ArtifactNotFoundError) {
    return error(404, messageOf(cause));
  }
  if (
    cause instanceof RollbackTargetError ||
    cause instanceof TrackBeingCollectedError ||
    cause instanceof TrackHeldError ||
    cause instanceof TrackRemovedFromConfigError ||
    cause instanceof TrackSuspendedInConfigError
  ) {
    return error(409, messageOf(cause));
  }
  if (cause instanceof ActionsUnavailableError) return error(503, messageOf(cause));
  if (cause instanceof UsageError) return error(400, messageOf(cause));
  if (cause instanceof URIError) return error(400, 'the path is not valid percent-encoding');
  return undefined;
}

/**
 * Answers one request. Errors of the request (unknown track, bad body,
 * missing sign-in) are 4xx answers; anything else is thrown for the adapter
 * to log and answer 500, without its message (it may name internals).
 */
export async function handleDashboard(
  request: DashboardRequest,
  deps: DashboardDeps,
): Promise<DashboardResponse> {
  try {
    return request.path.startsWith('/api/')
      ? await apiRoute(request, deps)
      : await assetRoute(request, deps);
  } catch (cause) {
    const answer = errorResponse(cause);
    if (answer !== undefined) return answer;
    throw cause;
  }
}
