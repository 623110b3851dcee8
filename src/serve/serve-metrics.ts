/**
 * What `GET /metrics` reports: per-track child status counts and objects in
 * sync (read from the tracks' state, so they survive restarts), a
 * time-to-deploy histogram, reconcile errors, webhook deliveries and the
 * queue. Faros' metric names are kept as aliases, so dashboards and alerts
 * written for Faros keep working after a move to Driftless.
 */
import type { Track } from '../config/types.ts';
import { emptyTrackState, isSuspended, type TrackState } from '../sync/track-state.ts';
import { Counter, formatMetrics, Histogram, type MetricFamily } from './prometheus-text.ts';

/**
 * Seconds. A deploy is a fetch, a render and a server-side apply: seconds to
 * minutes, longer with health waits. Faros used the client library's
 * defaults (5 ms to 10 s), which put every real deploy in `+Inf`.
 */
export const TIME_TO_DEPLOY_BUCKETS = [0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600];

/** Faros' child statuses, in its words, and the state counter each one reads. */
const CHILD_STATUSES = [
  ['discovered', 'objectsDiscovered'],
  ['applied', 'objectsApplied'],
  ['ignored', 'objectsIgnored'],
  ['inSync', 'objectsInSync'],
] as const satisfies readonly (readonly [string, keyof TrackState])[];

/** What a scrape reads besides the counters kept here. */
export interface MetricsSnapshot {
  readonly tracks: readonly Track[];
  /** State of each track by name; a track never synced may be missing. */
  readonly states: ReadonlyMap<string, TrackState>;
  /** Tracks with stored state that the config no longer names. */
  readonly removed?: readonly string[];
  readonly queueLength: number;
  readonly jobsRunning: number;
}

export class ServeMetrics {
  readonly #timeToDeploy = new Histogram(TIME_TO_DEPLOY_BUCKETS);
  readonly #farosTimeToDeploy = new Histogram(TIME_TO_DEPLOY_BUCKETS);
  readonly #reconcileErrors = new Counter();
  readonly #webhooks = new Counter();
  readonly #jobs = new Counter();

  /** A webhook's change reached the cluster `seconds` after the webhook arrived. */
  observeDeploy(track: Track, seconds: number): void {
    this.#timeToDeploy.observe({ track: track.name }, seconds);
    this.#farosTimeToDeploy.observe(
      { name: track.name, namespace: track.namespace ?? '', repository: track.repository },
      seconds,
    );
  }

  /** A job failed, or could not run. */
  countError(track: string, job: string): void {
    this.#reconcileErrors.inc({ track, job });
  }

  /** A job finished with `result` (applied, unchanged, failed, skipped, ...). */
  countJob(track: string, job: string, result: string): void {
    this.#jobs.inc({ track, job, result });
  }

  /** A webhook delivery was answered with `status`. */
  countWebhook(provider: string, status: number): void {
    this.#webhooks.inc({ provider, status: String(status) });
  }

  /** The exposition document for a scrape. */
  render(snapshot: MetricsSnapshot): string {
    const childStatus = (labelOf: (track: Track) => Record<string, string>) =>
      snapshot.tracks.flatMap((track) => {
        const state = snapshot.states.get(track.name);
        return CHILD_STATUSES.map(([status, field]) => ({
          labels: { ...labelOf(track), status },
          value: state ? state[field] : 0,
        }));
      });
    const families: MetricFamily[] = [
      {
        name: 'driftless_track_child_status',
        help: 'Objects of a track by status: discovered (rendered from Git), applied (changed by the last sync), ignored, inSync.',
        type: 'gauge',
        samples: childStatus((track) => ({
          track: track.name,
          namespace: track.namespace ?? '',
        })),
      },
      {
        name: 'faros_gittrack_child_status',
        help: "Alias of driftless_track_child_status under Faros' name and labels.",
        type: 'gauge',
        samples: childStatus((track) => ({ name: track.name, namespace: track.namespace ?? '' })),
      },
      {
        name: 'driftless_track_suspended',
        help: 'Whether a track is suspended (1), in its config or by "driftless suspend".',
        type: 'gauge',
        samples: snapshot.tracks.map((track) => ({
          labels: { track: track.name },
          value: isSuspended(track, snapshot.states.get(track.name) ?? emptyTrackState()) ? 1 : 0,
        })),
      },
      {
        name: 'driftless_track_removed_from_config',
        help: 'Tracks the config no longer names that still have state (and objects): 1 until "driftless delete".',
        type: 'gauge',
        samples: (snapshot.removed ?? []).map((track) => ({ labels: { track }, value: 1 })),
      },
      {
        name: 'driftless_track_objects_in_sync',
        help: 'Objects of a track that match Git after its last sync.',
        type: 'gauge',
        samples: snapshot.tracks.map((track) => ({
          labels: { track: track.name },
          value: snapshot.states.get(track.name)?.objectsInSync ?? 0,
        })),
      },
      {
        name: 'driftless_time_to_deploy_seconds',
        help: 'Time from a push webhook arriving to its revision being applied.',
        type: 'histogram',
        samples: this.#timeToDeploy.samples('driftless_time_to_deploy_seconds'),
      },
      {
        name: 'faros_gittrack_time_to_deploy_seconds',
        help: "Alias of driftless_time_to_deploy_seconds under Faros' name and labels.",
        type: 'histogram',
        samples: this.#farosTimeToDeploy.samples('faros_gittrack_time_to_deploy_seconds'),
      },
      {
        name: 'driftless_reconcile_errors_total',
        help: 'Jobs that failed (fetch, sync, drift, rollback), by track and job type.',
        type: 'counter',
        samples: this.#reconcileErrors.samples(),
      },
      {
        name: 'driftless_jobs_total',
        help: 'Jobs finished, by track, job type and result.',
        type: 'counter',
        samples: this.#jobs.samples(),
      },
      {
        name: 'driftless_webhook_deliveries_total',
        help: 'Webhook deliveries, by provider and HTTP status answered.',
        type: 'counter',
        samples: this.#webhooks.samples(),
      },
      {
        name: 'driftless_queue_length',
        help: 'Jobs waiting in the per-track queue.',
        type: 'gauge',
        samples: [{ labels: {}, value: snapshot.queueLength }],
      },
      {
        name: 'driftless_jobs_running',
        help: 'Jobs running now (at most one per track).',
        type: 'gauge',
        samples: [{ labels: {}, value: snapshot.jobsRunning }],
      },
    ];
    return formatMetrics(families);
  }
}
