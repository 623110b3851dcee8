/** The shapes shared by every benchmark and the runner. */
import type { BenchContext } from './context.ts';

/** What a figure must reach; either bound or both. */
export interface Goal {
  /** driftless ÷ peer (median of paired per-run ratios) must not exceed this. */
  readonly maxRatio?: number;
  /** driftless' median must not exceed this, in the row's unit. */
  readonly max?: number;
}

/** One line of the table: driftless' runs, its peer's runs, and the goal. */
export interface Measurement {
  /** What was measured, e.g. "first apply, 1000 objects". */
  readonly metric: string;
  readonly unit: 'ms' | 'MB' | 'KB' | 'requests' | 'cores';
  /** driftless' figure of each run. */
  readonly runs: number[];
  /** What driftless is compared with, measured side by side in the same runs. */
  readonly peer?: { readonly label: string; readonly runs: number[] };
  /** Undefined for a figure shown for context only. */
  readonly goal?: Goal;
  /** What limits the figure, what was checked, anything a reader needs to trust it. */
  readonly notes?: string[];
}

/** A measurement with its medians, ratio and verdict, as printed and stored. */
export interface RowResult extends Measurement {
  readonly median: number;
  readonly peerMedian?: number;
  readonly ratio?: number;
  /** Undefined when there is no goal. */
  readonly met?: boolean;
}

export interface Benchmark {
  /** The name to select it on the command line, e.g. `first-apply`. */
  readonly name: string;
  readonly title: string;
  run(ctx: BenchContext): Promise<Measurement[]>;
}
