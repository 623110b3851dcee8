/**
 * The functions' metrics: CloudWatch embedded-metric-format (EMF) lines on
 * stdout, written by Powertools for AWS Lambda's Metrics, which CloudWatch
 * Logs turns into metrics without an API call. The names and labels are
 * those of `driftless serve`'s `/metrics` (src/metric-names.ts): each label
 * is a dimension, each counter a `Count` of 1 per event, the time-to-deploy
 * histogram one `Seconds` value per deploy (CloudWatch keeps the values, so
 * percentiles replace buckets). Powertools' own `service` dimension is
 * dropped, so the dimensions are exactly the labels.
 *
 * One line per set of dimension values: an EMF line applies every metric in
 * it to every dimension set in it, so metrics with other labels (or other
 * label values) go on lines of their own.
 *
 * - after each job: `driftless_jobs_total`, and `driftless_reconcile_errors_total`
 *   when it failed or could not run (job-handler.ts);
 * - after each sync applied whose webhook arrival is known
 *   (webhook-arrival.ts): `driftless_time_to_deploy_seconds` and Faros' alias;
 * - after each sync, drift, rollback and lifecycle job in apply, from the
 *   track's state as it left it (carried by a sync's or rollback's result,
 *   read back after the others: one S3 GET): the per-track gauges
 *   `driftless_track_child_status`, Faros' alias,
 *   `driftless_track_objects_in_sync` and `driftless_track_suspended`. serve
 *   reads them on each scrape; here a point is written whenever a job of the
 *   track ran, which the schedule's drift check does every `interval`;
 * - after each webhook answer: `driftless_webhook_deliveries_total`;
 * - on each schedule tick: `driftless_track_removed_from_config` (1 per such track) and
 *   `driftless_track_collecting` (1 per track of a deleted GitTrack being collected).
 *
 * `driftless_queue_length` and `driftless_jobs_running` have no equivalent:
 * SQS (`ApproximateNumberOfMessagesVisible`) and Lambda (`ConcurrentExecutions`)
 * report those.
 *
 * Dimension values are passed through redactSecrets like every log line;
 * CloudWatch refuses an empty one, so Prometheus' empty label value (a track
 * without `namespace`) is written as `-`. A metric that cannot be written
 * is logged and dropped: metrics never fail a job.
 */
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { readOptionalEnv, type Environment } from '../config/env.ts';
import { isWebhookHost, type Track } from '../config/types.ts';
import { messageOf } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { CHILD_STATUSES, METRIC_LABELS, METRIC_NAMES, type MetricLabels } from '../metric-names.ts';
import { redactSecrets } from '../redact.ts';
import { isSuspended, type TrackState } from '../sync/track-state.ts';
import { FUNCTION_ENV } from './function-env.ts';

/** The CloudWatch namespace unless `POWERTOOLS_METRICS_NAMESPACE` names another. */
export const DEFAULT_METRICS_NAMESPACE = 'Driftless';

/** What an empty label value is written as: CloudWatch refuses empty dimension values. */
export const EMPTY_DIMENSION_VALUE = '-';

/** The events a function reports; the methods of serve's ServeMetrics, plus the gauges. */
export interface FunctionMetrics {
  /** A job finished with `result`, or could not run (`error`). */
  countJob(track: string, job: string, result: string): void;
  /** A job failed, or could not run. */
  countError(track: string, job: string): void;
  /** A webhook delivery was answered with `status`. */
  countWebhook(provider: string, status: number): void;
  /** A webhook's change reached the cluster `seconds` after the webhook arrived. */
  observeDeploy(track: Track, seconds: number): void;
  /** The per-track gauges, from `state` as a job left it. */
  trackGauges(track: Track, state: TrackState): void;
  /** A track the config no longer names still has state. */
  removedFromConfig(track: string): void;
  /** The track of a deleted GitTrack still has state: its objects are being collected. */
  collecting(track: string): void;
  /** A track its source keeps while the document that gave it is refused. */
  held(track: string): void;
}

/** Metrics that go nowhere, for callers that do not care (tests). */
export const silentMetrics: FunctionMetrics = {
  countJob: () => undefined,
  countError: () => undefined,
  countWebhook: () => undefined,
  observeDeploy: () => undefined,
  trackGauges: () => undefined,
  removedFromConfig: () => undefined,
  collecting: () => undefined,
  held: () => undefined,
};

type Unit = (typeof MetricUnit)[keyof typeof MetricUnit];
type Value = readonly [name: string, unit: Unit, value: number];

/**
 * A function's metrics, written through Powertools' Metrics (made on first
 * use, so none of it runs during module init); its warnings go to `log`.
 */
export function functionMetrics(log: Logger, env?: Environment): FunctionMetrics {
  let emf: Metrics | undefined;
  const metrics = (): Metrics => {
    if (emf === undefined) {
      emf = new Metrics({
        namespace: readOptionalEnv(FUNCTION_ENV.metricsNamespace, env) ?? DEFAULT_METRICS_NAMESPACE,
        logger: log,
      });
      emf.clearDefaultDimensions();
    }
    return emf;
  };

  /** One EMF line: `values` under the dimensions `labels`. */
  const line = (labels: MetricLabels, ...values: Value[]): void => {
    let target: Metrics | undefined;
    try {
      target = metrics();
      for (const [name, value] of Object.entries(labels)) {
        target.addDimension(name, redactSecrets(value) || EMPTY_DIMENSION_VALUE);
      }
      for (const [name, unit, value] of values) target.addMetric(name, unit, value);
      target.publishStoredMetrics();
    } catch (error) {
      target?.clearMetrics();
      target?.clearDimensions();
      log.warn('metrics not written', {
        metrics: values.map(([name]) => name),
        error: messageOf(error),
      });
    }
  };
  const count = (name: string): Value => [name, MetricUnit.Count, 1];

  return {
    countJob: (track, job, result) =>
      line(METRIC_LABELS.jobs(track, job, result), count(METRIC_NAMES.jobs)),
    countError: (track, job) =>
      line(METRIC_LABELS.reconcileErrors(track, job), count(METRIC_NAMES.reconcileErrors)),
    countWebhook: (provider, status) =>
      line(
        METRIC_LABELS.webhookDeliveries(provider, status, isWebhookHost),
        count(METRIC_NAMES.webhookDeliveries),
      ),
    observeDeploy: (track, seconds) => {
      line(METRIC_LABELS.timeToDeploy(track), [
        METRIC_NAMES.timeToDeploy,
        MetricUnit.Seconds,
        seconds,
      ]);
      line(METRIC_LABELS.farosTimeToDeploy(track), [
        METRIC_NAMES.farosTimeToDeploy,
        MetricUnit.Seconds,
        seconds,
      ]);
    },
    trackGauges: (track, state) => {
      for (const [status, field] of CHILD_STATUSES) {
        const value = state[field];
        line(METRIC_LABELS.childStatus(track, status), [
          METRIC_NAMES.childStatus,
          MetricUnit.Count,
          value,
        ]);
        line(METRIC_LABELS.farosChildStatus(track, status), [
          METRIC_NAMES.farosChildStatus,
          MetricUnit.Count,
          value,
        ]);
      }
      line(
        METRIC_LABELS.track(track.name),
        [METRIC_NAMES.objectsInSync, MetricUnit.Count, state.objectsInSync],
        [METRIC_NAMES.suspended, MetricUnit.NoUnit, isSuspended(track, state) ? 1 : 0],
      );
    },
    removedFromConfig: (track) =>
      line(METRIC_LABELS.track(track), [METRIC_NAMES.removedFromConfig, MetricUnit.NoUnit, 1]),
    collecting: (track) =>
      line(METRIC_LABELS.track(track), [METRIC_NAMES.collecting, MetricUnit.NoUnit, 1]),
    held: (track) => line(METRIC_LABELS.track(track), [METRIC_NAMES.held, MetricUnit.NoUnit, 1]),
  };
}
