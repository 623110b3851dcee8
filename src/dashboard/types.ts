/**
 * The dashboard's JSON API (docs/dashboard.md): the shapes `driftless serve`
 * and the dashboard function answer, and the web UI (web/) reads. One
 * definition for the server and the browser: web/ imports these types only.
 */
import type { ObservedObject } from '../sync/observed-object.ts';
import type { CommitInfo } from '../source/ports.ts';
import type { collectingJson, heldJson, statusJson } from '../sync/status-json.ts';

export type { CommitInfo, ObservedObject };

/**
 * `GET /api/tracks`: one per track, exactly as `driftless status -o json` prints it (`suspended`
 * when the config's `suspend: true` or a stored suspension says so). A track off the config (its
 * state still stored) has `removedFromConfig: true`, and `collecting` when it is the track of a
 * deleted GitTrack whose objects are being collected, `held` when its source keeps it while the
 * document that gave it is refused (status-json.ts offConfigStatusJson); a configured track has
 * none of them.
 */
export type TrackStatusJson = ReturnType<typeof statusJson> & {
  readonly removedFromConfig?: boolean;
  readonly collecting?: ReturnType<typeof collectingJson>;
  readonly held?: ReturnType<typeof heldJson>;
};

/** A track off the config as `GET /api/tracks` lists it: what the store keeps of it. */
export type OffConfigTrackJson = TrackStatusJson & { readonly removedFromConfig: boolean };

/** A history entry (`driftless history -o json`), with who acted when a person did. */
export interface HistoryEntryJson {
  readonly revision: string;
  readonly appliedAt: string;
  readonly result: string;
  readonly trigger: string;
  /** The dashboard user (or `cli`) who asked for it; absent for webhooks and schedules. */
  readonly by?: string;
  readonly durationMs?: number;
  readonly error?: string;
  readonly [key: string]: unknown;
}

/**
 * `GET /api/overview`: a row of the overview page. The configured tracks' rows come first, then
 * those of the tracks off the config, in `GET /api/tracks` order: their `status` is their entry
 * there (`removedFromConfig`, `collecting`), the rest read from their stored state as any row's.
 */
export interface OverviewRow {
  readonly status: TrackStatusJson;
  /** The Ready condition's status: True, False or Unknown (never synced). */
  readonly ready: 'True' | 'False' | 'Unknown';
  /** The Ready condition's reason and message (the last error when not ready). */
  readonly reason: string;
  readonly message: string;
  /** Commits of the applied and desired revisions, when known. */
  readonly appliedCommit: CommitInfo | null;
  readonly desiredCommit: CommitInfo | null;
  /** The newest history entry that applied, rolled back or failed; null before a first sync. */
  readonly lastSync: HistoryEntryJson | null;
  /** Objects out of sync or missing at the last observation; null when never observed. */
  readonly drifted: number | null;
  /** When drift was last checked (ISO), if ever. */
  readonly driftCheckedAt: string | null;
  /**
   * Present (true) when the track's config says `suspend: true`: `status.suspended` is then true
   * whatever the stored state says, and no dashboard action lifts it (resume is refused 409), only
   * removing it from driftless.yaml. Absent otherwise, so a row reads as it did before.
   */
  readonly suspendedInConfig?: true;
}

/** The objects of a track and when they were observed. */
export interface ObservedObjects {
  /** ISO time of the observation (now, when read live). */
  readonly observedAt: string | null;
  /** `live`: read from the cluster for this answer; `stored`: recorded by the last drift check. */
  readonly source: 'live' | 'stored';
  readonly objects: readonly ObservedObject[];
  /** Why the live reading failed (the stored observation is shown instead). */
  readonly error?: string;
}

/** A stored revision of a track (rollback targets). */
export interface StoredRevision {
  readonly revision: string;
  readonly storedAt: string;
  readonly commit: CommitInfo | null;
}

/** `GET /api/tracks/<track>`: everything the track page shows. */
export interface TrackDetail {
  readonly row: OverviewRow;
  readonly objects: ObservedObjects;
  /** Newest first, at most 100. */
  readonly history: readonly HistoryEntryJson[];
  /** Newest first. */
  readonly revisions: readonly StoredRevision[];
}

/**
 * `GET /api/tracks/<track>`: the track page of a configured track, or the `GET /api/tracks` entry
 * of a track off the config, which has no config to observe its objects by (tell them apart by
 * `row`).
 */
export type TrackAnswer = TrackDetail | OffConfigTrackJson;

/** `GET /api/session`: who the request is from, and what they may do. */
export interface SessionJson {
  /** The user's name; null when not signed in. */
  readonly user: string | null;
  readonly readAccess: 'open' | 'authenticated';
  /** Whether this user may run actions. */
  readonly canAct: boolean;
  /**
   * How to sign in here: `basic` / `bearer` (serve), `gateway` (AWS: API Gateway did it), `sigv4`
   * (the page's own, when API Gateway's IAM authorizer refused the session: a signing proxy in
   * front of the browser signs in, with no form on the page).
   */
  readonly signIn: readonly ('basic' | 'bearer' | 'gateway' | 'sigv4')[];
}

/** The actions of `POST /api/tracks/<track>/<action>`. */
export const DASHBOARD_ACTIONS = ['sync', 'rollback', 'unpin', 'suspend', 'resume'] as const;
export type DashboardAction = (typeof DASHBOARD_ACTIONS)[number];

/** What an action answers (202): the job queued for it. */
export interface ActionAnswer {
  readonly track: string;
  readonly action: DashboardAction;
  readonly queued: true;
  /** Rollback: the full revision resolved from the request. */
  readonly revision?: string;
  readonly by: string;
}

/** Every error answer: `{"error": "..."}` with a 4xx/5xx status. */
export interface ErrorAnswer {
  readonly error: string;
}
