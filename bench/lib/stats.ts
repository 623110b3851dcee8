/** Small statistics for benchmark runs: the machine is shared, so medians only, never means. */

/** The median of `values` (the mean of the middle two for an even count). */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/**
 * The median of the per-run ratios `a[i] / b[i]`. Each pair was measured in
 * the same run, so load that comes and goes on the shared machine affects
 * both sides of a pair alike; the ratio of two medians would mix runs.
 */
export function pairedRatio(a: readonly number[], b: readonly number[]): number {
  const count = Math.min(a.length, b.length);
  const ratios: number[] = [];
  for (let i = 0; i < count; i++) ratios.push((a[i] as number) / (b[i] as number));
  return median(ratios);
}

/** Milliseconds `work` took, with its result. */
export async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const start = performance.now();
  const value = await work();
  return { ms: performance.now() - start, value };
}

/**
 * Runs the measurements of one run in a rotating order (run 0: a b c, run 1:
 * b c a, ...), so no side always goes first into a warm or a busy server.
 */
export async function rotated(
  run: number,
  steps: ReadonlyArray<() => Promise<void>>,
): Promise<void> {
  for (let i = 0; i < steps.length; i++) {
    await (steps[(run + i) % steps.length] as () => Promise<void>)();
  }
}
