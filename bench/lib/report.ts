/** Turns measurements into verdicts, prints the table and writes `bench/results.json`. */
import { readFile, writeFile } from 'node:fs/promises';
import { arch, cpus, platform, release, totalmem } from 'node:os';
import { median, pairedRatio } from './stats.ts';
import type { Goal, Measurement, RowResult } from './types.ts';

export function evaluate(measurement: Measurement): RowResult {
  const value = median(measurement.runs);
  const peerMedian = measurement.peer ? median(measurement.peer.runs) : undefined;
  const ratio = measurement.peer ? pairedRatio(measurement.runs, measurement.peer.runs) : undefined;
  const goal = measurement.goal;
  let met: boolean | undefined;
  if (goal) {
    met =
      (goal.max === undefined || value <= goal.max) &&
      (goal.maxRatio === undefined || (ratio !== undefined && ratio <= goal.maxRatio));
  }
  return {
    ...measurement,
    median: value,
    ...(peerMedian === undefined ? {} : { peerMedian }),
    ...(ratio === undefined ? {} : { ratio }),
    ...(met === undefined ? {} : { met }),
  };
}

export function formatValue(value: number | undefined, unit: Measurement['unit']): string {
  if (value === undefined || Number.isNaN(value)) return '–';
  switch (unit) {
    case 'ms':
      return value >= 1000 ? `${(value / 1000).toFixed(2)} s` : `${value.toFixed(0)} ms`;
    case 'MB':
      return `${value.toFixed(1)} MB`;
    case 'KB':
      return value >= 1024 ? `${(value / 1024).toFixed(2)} MB` : `${value.toFixed(0)} KB`;
    case 'requests':
      return `${value.toFixed(0)} req`;
    case 'cores':
      return `${value.toFixed(2)} cores`;
  }
}

export function formatGoal(goal: Goal | undefined, unit: Measurement['unit']): string {
  if (!goal) return '(info)';
  const parts: string[] = [];
  if (goal.max !== undefined) parts.push(`≤ ${formatValue(goal.max, unit)}`);
  if (goal.maxRatio !== undefined) parts.push(`≤ ${goal.maxRatio}×`);
  return parts.join(' and ');
}

export interface BenchmarkResult {
  readonly title: string;
  readonly date: string;
  readonly runs: number;
  readonly quick: boolean;
  readonly rows: RowResult[];
  /** Set when the benchmark could not run. */
  readonly error?: string;
}

/** Prints one table of every row, then the notes under it. */
export function printTable(results: Readonly<Record<string, BenchmarkResult>>): void {
  const header = ['benchmark', 'metric', 'driftless', 'peer', 'ratio', 'goal', 'met'];
  const lines: string[][] = [];
  const notes: string[] = [];
  for (const [name, result] of Object.entries(results)) {
    if (result.error) {
      lines.push([name, 'ERROR (see below)', '', '', '', '', 'missed']);
      notes.push(`${name}: ${result.error}`);
      continue;
    }
    for (const row of result.rows) {
      lines.push([
        name,
        row.metric,
        formatValue(row.median, row.unit),
        row.peer ? `${formatValue(row.peerMedian, row.unit)} (${row.peer.label})` : '',
        row.ratio === undefined ? '' : `${row.ratio.toFixed(2)}×`,
        formatGoal(row.goal, row.unit),
        row.met === undefined ? '' : row.met ? 'met' : 'MISSED',
      ]);
      for (const note of row.notes ?? []) notes.push(`${name} / ${row.metric}: ${note}`);
    }
  }
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => (l[i] ?? '').length)));
  const format = (cells: readonly string[]): string =>
    `| ${cells.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  console.log(format(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const line of lines) console.log(format(line));
  if (notes.length > 0) {
    console.log('\nNotes:');
    for (const note of notes) console.log(`- ${note}`);
  }
}

/**
 * Writes the results file. Benchmarks not run this time keep their previous
 * entry (each carries its own date), so one benchmark can be re-run alone.
 */
export async function writeResults(
  path: string,
  results: Readonly<Record<string, BenchmarkResult>>,
): Promise<void> {
  let previous: Record<string, BenchmarkResult> = {};
  try {
    const parsed = JSON.parse(await readFile(path, 'utf8')) as {
      benchmarks?: Record<string, BenchmarkResult>;
    };
    previous = parsed.benchmarks ?? {};
  } catch {
    // No previous results (or unreadable ones): start afresh.
  }
  const cpu = cpus();
  const file = {
    machine: {
      cpus: cpu.length,
      cpuModel: cpu[0]?.model ?? 'unknown',
      memoryGB: Math.round(totalmem() / 2 ** 30),
      platform: `${platform()} ${release()} ${arch()}`,
    },
    date: new Date().toISOString(),
    node: process.version,
    benchmarks: { ...previous, ...results },
  };
  await writeFile(path, `${JSON.stringify(file, null, 2)}\n`);
}
