/** DESIGN.md's exit codes. */
export const EXIT_OK = 0;
/** Differences found and left in place (`diff`, `drift --detect-only`). */
export const EXIT_DIFFERENCES = 1;
/** A usage error or an invalid driftless.yaml: nothing was attempted. */
export const EXIT_USAGE = 2;
/**
 * The operation failed (fetch, render, apply, prune, health, or a refused revision). Not a
 * newer commit's fetch or render while the track is pinned at another: that sync is `pinned`.
 */
export const EXIT_FAILED = 3;
/** Stopped by a signal (interrupts.ts): what a shell reports, 128 + the signal's number. */
export const EXIT_INTERRUPTED = { SIGINT: 130, SIGTERM: 143 } as const;
