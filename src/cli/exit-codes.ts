/** DESIGN.md's exit codes. */
export const EXIT_OK = 0;
/** Differences found and left in place (`diff`, `drift --detect-only`). */
export const EXIT_DIFFERENCES = 1;
/** A usage error or an invalid driftless.yaml: nothing was attempted. */
export const EXIT_USAGE = 2;
/** The operation failed (fetch, render, apply, prune, health, or a refused revision). */
export const EXIT_FAILED = 3;
