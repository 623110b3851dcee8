/**
 * The metrics Driftless reports, by name and labels, in one place for both
 * of its outputs: `driftless serve`'s Prometheus `/metrics`
 * (serve/serve-metrics.ts) and the Lambda functions' CloudWatch
 * embedded-metric-format lines (aws/function-metrics.ts), where each label
 * becomes a dimension. A dashboard or alert written against one keeps its
 * names on the other. Faros' names are kept as aliases.
 *
 * At `src/`'s root because serve and aws may not import each other; it
 * imports nothing, so tracks are described by the few fields read here.
 */

export const METRIC_NAMES = {
  childStatus: 'driftless_track_child_status',
  farosChildStatus: 'faros_gittrack_child_status',
  suspended: 'driftless_track_suspended',
  removedFromConfig: 'driftless_track_removed_from_config',
  collecting: 'driftless_track_collecting',
  held: 'driftless_track_held',
  objectsInSync: 'driftless_track_objects_in_sync',
  timeToDeploy: 'driftless_time_to_deploy_seconds',
  farosTimeToDeploy: 'faros_gittrack_time_to_deploy_seconds',
  reconcileErrors: 'driftless_reconcile_errors_total',
  jobs: 'driftless_jobs_total',
  webhookDeliveries: 'driftless_webhook_deliveries_total',
  queueLength: 'driftless_queue_length',
  jobsRunning: 'driftless_jobs_running',
} as const;

export type MetricLabels = Readonly<Record<string, string>>;

/** What the labels of a track's metrics read of it. */
export interface LabelledTrack {
  readonly name: string;
  readonly namespace?: string | undefined;
  readonly repository: string;
}

/** Faros' child statuses, in its words, and the track state counter each one reads. */
export const CHILD_STATUSES = [
  ['discovered', 'objectsDiscovered'],
  ['applied', 'objectsApplied'],
  ['ignored', 'objectsIgnored'],
  ['inSync', 'objectsInSync'],
] as const;

/** The `provider` of any other `/webhook/<host>` path: the path is unauthenticated input. */
export const OTHER_PROVIDER = 'other';

/** The labels of each metric, as functions of what it is about. */
export const METRIC_LABELS = {
  childStatus: (track: LabelledTrack, status: string): MetricLabels => ({
    track: track.name,
    namespace: track.namespace ?? '',
    status,
  }),
  farosChildStatus: (track: LabelledTrack, status: string): MetricLabels => ({
    name: track.name,
    namespace: track.namespace ?? '',
    status,
  }),
  /**
   * driftless_track_objects_in_sync, driftless_track_suspended, driftless_track_removed_from_config,
   * driftless_track_collecting.
   */
  track: (track: string): MetricLabels => ({ track }),
  timeToDeploy: (track: LabelledTrack): MetricLabels => ({ track: track.name }),
  farosTimeToDeploy: (track: LabelledTrack): MetricLabels => ({
    name: track.name,
    namespace: track.namespace ?? '',
    repository: track.repository,
  }),
  reconcileErrors: (track: string, job: string): MetricLabels => ({ track, job }),
  jobs: (track: string, job: string, result: string): MetricLabels => ({ track, job, result }),
  /**
   * A `provider` that is not a webhook host (`isHost`: config's
   * isWebhookHost) is reported as `other`: anyone can POST to any path, and
   * each distinct value would be a new series (in CloudWatch, a new billed
   * custom metric).
   */
  webhookDeliveries: (
    provider: string,
    status: number,
    isHost: (name: string) => boolean,
  ): MetricLabels => ({
    provider: isHost(provider) ? provider : OTHER_PROVIDER,
    status: String(status),
  }),
} as const;
