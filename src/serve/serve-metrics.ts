/**
 * What `GET /metrics` reports: per-track child status counts and objects in
 * sync (read from the tracks' state, so they survive restarts), a
 * time-to-deploy histogram, reconcile errors, webhook deliveries and the
 * queue. Faros' metric names are kept as aliases, so dashboards and alerts
 * written for Faros keep working after a move to Driftless. Names and labels
 * are shared with the Lambda functions' metrics (src/metric-names.ts).
 */
import { isWebhookHost, type Track } from '../config/types.ts';
import { CHILD_STATUSES, METRIC_LABELS, METRIC_NAMES } from '../metric-names.ts';
import { emptyTrackState, isSuspended, type TrackState } from '../sync/track-state.ts';
import { Counter, formatMetrics, Histogram, type MetricFamily } from './prometheus-text.ts';

/**
 * Seconds. A deploy is a fetch, a render and a server-side apply: seconds to
 * minutes, longer with health waits. Faros used the client library's
 * defaults (5 ms to 10 s), which put every real deploy in `+Inf`.
 */
export const TIME_TO_DEPLOY_BUCKETS = [0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600];

/** What a scrape reads besides the counters kept here. */
export interface MetricsSnapshot {
  readonly tracks: readonly Track[];
  /** State of each track by name; a track never synced may be missing. */
  readonly states: ReadonlyMap<string, TrackState>;
  /** Tracks with stored state that the config no longer names, less those being collected. */
  readonly removed?: readonly string[];
  /** Tracks of deleted GitTracks, with stored state, whose objects are being collected. */
  readonly collecting?: readonly string[];
  /** Tracks, with stored state, that their source keeps while their document is refused. */
  readonly held?: readonly string[];
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
    this.#timeToDeploy.observe(METRIC_LABELS.timeToDeploy(track), seconds);
    this.#farosTimeToDeploy.observe(METRIC_LABELS.farosTimeToDeploy(track), seconds);
  }

  /** A job failed, or could not run. */
  countError(track: string, job: string): void {
    this.#reconcileErrors.inc(METRIC_LABELS.reconcileErrors(track, job));
  }

  /** A job finished with `result` (applied, unchanged, failed, skipped, ...). */
  countJob(track: string, job: string, result: string): void {
    this.#jobs.inc(METRIC_LABELS.jobs(track, job, result));
  }

  /** A webhook delivery was answered with `status`; a `provider` that is no webhook host counts as `other`. */
  countWebhook(provider: string, status: number): void {
    this.#webhooks.inc(METRIC_LABELS.webhookDeliveries(provider, status, isWebhookHost));
  }

  /** The exposition document for a scrape. */
  render(snapshot: MetricsSnapshot): string {
    const childStatus = (labelOf: (track: Track, status: string) => Record<string, string>) =>
      snapshot.tracks.flatMap((track) => {
        const state = snapshot.states.get(track.name);
        return CHILD_STATUSES.map(([status, field]) => ({
          labels: labelOf(track, status),
          value: state ? state[field] : 0,
        }));
      });
    const families: MetricFamily[] = [
      {
        name: METRIC_NAMES.childStatus,
        help: 'Objects of a track by status: discovered (rendered from Git), applied (changed by the last sync), ignored, inSync.',
        type: 'gauge',
        samples: childStatus(METRIC_LABELS.childStatus),
      },
      {
        name: METRIC_NAMES.farosChildStatus,
        help: "Alias of driftless_track_child_status under Faros' name and labels.",
        type: 'gauge',
        samples: childStatus(METRIC_LABELS.farosChildStatus),
      },
      {
        name: METRIC_NAMES.suspended,
        help: 'Whether a track is suspended (1), in its config or by "driftless suspend".',
        type: 'gauge',
        samples: snapshot.tracks.map((track) => ({
          labels: METRIC_LABELS.track(track.name),
          value: isSuspended(track, snapshot.states.get(track.name) ?? emptyTrackState()) ? 1 : 0,
        })),
      },
      {
        name: METRIC_NAMES.removedFromConfig,
        help: 'Tracks the config no longer names that still have state (and objects): 1 until "driftless delete".',
        type: 'gauge',
        samples: (snapshot.removed ?? []).map((track) => ({
          labels: METRIC_LABELS.track(track),
          value: 1,
        })),
      },
      {
        name: METRIC_NAMES.collecting,
        help: "Tracks of deleted GitTracks that still have state: 1 until their source's discovery has collected their objects.",
        type: 'gauge',
        samples: (snapshot.collecting ?? []).map((track) => ({
          labels: METRIC_LABELS.track(track),
          value: 1,
        })),
      },
      {
        name: METRIC_NAMES.held,
        help: 'Tracks whose GitTrack or file their source refuses for now: 1 while it keeps them (state and objects stay, nothing syncs them).',
        type: 'gauge',
        samples: (snapshot.held ?? []).map((track) => ({
          labels: METRIC_LABELS.track(track),
          value: 1,
        })),
      },
      {
        name: METRIC_NAMES.objectsInSync,
        help: 'Objects of a track that match Git after its last sync.',
        type: 'gauge',
        samples: snapshot.tracks.map((track) => ({
          labels: METRIC_LABELS.track(track.name),
          value: snapshot.states.get(track.name)?.objectsInSync ?? 0,
        })),
      },
      {
        name: METRIC_NAMES.timeToDeploy,
        help: 'Time from a push webhook arriving to its revision being applied.',
        type: 'histogram',
        samples: this.#timeToDeploy.samples(METRIC_NAMES.timeToDeploy),
      },
      {
        name: METRIC_NAMES.farosTimeToDeploy,
        help: "Alias of driftless_time_to_deploy_seconds under Faros' name and labels.",
        type: 'histogram',
        samples: this.#farosTimeToDeploy.samples(METRIC_NAMES.farosTimeToDeploy),
      },
      {
        name: METRIC_NAMES.reconcileErrors,
        help: 'Jobs that failed (fetch, sync, drift, rollback), by track and job type.',
        type: 'counter',
        samples: this.#reconcileErrors.samples(),
      },
      {
        name: METRIC_NAMES.jobs,
        help: 'Jobs finished, by track, job type and result.',
        type: 'counter',
        samples: this.#jobs.samples(),
      },
      {
        name: METRIC_NAMES.webhookDeliveries,
        help: 'Webhook deliveries, by provider and HTTP status answered.',
        type: 'counter',
        samples: this.#webhooks.samples(),
      },
      {
        name: METRIC_NAMES.queueLength,
        help: 'Jobs waiting in the per-track queue.',
        type: 'gauge',
        samples: [{ labels: {}, value: snapshot.queueLength }],
      },
      {
        name: METRIC_NAMES.jobsRunning,
        help: 'Jobs running now (at most one per track).',
        type: 'gauge',
        samples: [{ labels: {}, value: snapshot.jobsRunning }],
      },
    ];
    return formatMetrics(families);
  }
}
