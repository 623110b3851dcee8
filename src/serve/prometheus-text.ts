/**
 * The Prometheus text exposition format (version 0.0.4), for the few metric
 * families `driftless serve` exposes: enough to avoid a client library.
 */

export type Labels = Readonly<Record<string, string>>;

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export interface Sample {
  readonly labels: Labels;
  readonly value: number;
}

/** One metric family: its HELP, TYPE and samples. */
export interface MetricFamily {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'gauge' | 'histogram';
  /** For a histogram: the `_bucket`, `_sum` and `_count` samples, suffix included in `name`. */
  readonly samples: readonly (Sample & { readonly name?: string })[];
}

/** Backslash, double quote and line feed are the characters a label value must escape. */
function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function escapeHelp(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}

function formatLabels(labels: Labels): string {
  const pairs = Object.entries(labels).map(
    ([name, value]) => `${name}="${escapeLabelValue(value)}"`,
  );
  return pairs.length === 0 ? '' : `{${pairs.join(',')}}`;
}

/** The families as one exposition document. */
export function formatMetrics(families: readonly MetricFamily[]): string {
  const lines: string[] = [];
  for (const family of families) {
    lines.push(`# HELP ${family.name} ${escapeHelp(family.help)}`);
    lines.push(`# TYPE ${family.name} ${family.type}`);
    for (const sample of family.samples) {
      const name = sample.name ?? family.name;
      lines.push(`${name}${formatLabels(sample.labels)} ${formatValue(sample.value)}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

/** A labelled counter kept in memory. */
export class Counter {
  readonly #values = new Map<string, { labels: Labels; value: number }>();

  inc(labels: Labels, by = 1): void {
    const key = JSON.stringify(labels);
    const entry = this.#values.get(key) ?? { labels, value: 0 };
    entry.value += by;
    this.#values.set(key, entry);
  }

  samples(): Sample[] {
    return [...this.#values.values()].map(({ labels, value }) => ({ labels, value }));
  }
}

/** A labelled histogram kept in memory, with cumulative buckets as Prometheus expects. */
export class Histogram {
  readonly #buckets: readonly number[];
  readonly #series = new Map<
    string,
    { labels: Labels; counts: number[]; sum: number; count: number }
  >();

  /** `buckets`: upper bounds, ascending; `+Inf` is added. */
  constructor(buckets: readonly number[]) {
    this.#buckets = [...buckets].sort((a, b) => a - b);
  }

  observe(labels: Labels, value: number): void {
    const key = JSON.stringify(labels);
    const series = this.#series.get(key) ?? {
      labels,
      counts: this.#buckets.map(() => 0),
      sum: 0,
      count: 0,
    };
    this.#buckets.forEach((bound, index) => {
      if (value <= bound) series.counts[index]! += 1;
    });
    series.sum += value;
    series.count += 1;
    this.#series.set(key, series);
  }

  /** The `_bucket`, `_sum` and `_count` samples of every series, named after `name`. */
  samples(name: string): (Sample & { name: string })[] {
    const samples: (Sample & { name: string })[] = [];
    for (const series of this.#series.values()) {
      this.#buckets.forEach((bound, index) => {
        samples.push({
          name: `${name}_bucket`,
          labels: { ...series.labels, le: formatValue(bound) },
          value: series.counts[index]!,
        });
      });
      samples.push({
        name: `${name}_bucket`,
        labels: { ...series.labels, le: '+Inf' },
        value: series.count,
      });
      samples.push({ name: `${name}_sum`, labels: series.labels, value: series.sum });
      samples.push({ name: `${name}_count`, labels: series.labels, value: series.count });
    }
    return samples;
  }
}
