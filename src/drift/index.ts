/**
 * Drift: detect changes made in the cluster to what a track applied, and
 * correct them (or only report them). The `reconcileDrift` use-case and the
 * `driftless drift` command call {@link detectDrift}, then — unless the track
 * says `drift: detect` or `--detect-only` was given — {@link correctDrift}.
 */
export {
  detectDrift,
  plannedApply,
  type DetectDriftOptions,
  type DriftError,
  type DriftReport,
  type DriftedObject,
} from './detect-drift.ts';
export { correctDrift, type CorrectDriftOptions } from './correct-drift.ts';
export { InvalidIgnoreRuleError } from './ignore-rules.ts';
export { parseLabelSelector } from '../config/label-selector.ts';
export type { DesiredObject } from './desired-objects.ts';
