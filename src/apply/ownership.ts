/**
 * The labels and annotations through which Driftless marks what it owns and
 * users steer what it does (DESIGN.md, "Objects").
 */
export const FIELD_MANAGER = 'driftless';
export const TRACK_LABEL = 'driftless.dev/track';
export const PRUNE_ANNOTATION = 'driftless.dev/prune';
export const RECONCILE_ANNOTATION = 'driftless.dev/reconcile';
export const STRATEGY_ANNOTATIONS = [
  'driftless.dev/update-strategy',
  'faros.pusher.com/update-strategy',
] as const;

export type UpdateStrategy = 'update' | 'never' | 'recreate';

type Annotated = { metadata?: { annotations?: Record<string, string> | undefined } };

function annotation(object: Annotated, name: string): string | undefined {
  return object.metadata?.annotations?.[name];
}

/** The object's update strategy; throws naming the annotation when its value is unknown. */
export function updateStrategyOf(object: Annotated): UpdateStrategy {
  for (const name of STRATEGY_ANNOTATIONS) {
    const value = annotation(object, name);
    if (value === undefined) continue;
    if (value === 'update' || value === 'never' || value === 'recreate') return value;
    throw new Error(
      `annotation ${name}: "${value}" is not an update strategy (update, never or recreate)`,
    );
  }
  return 'update';
}

/** `driftless.dev/reconcile: disabled`: created once, never updated or corrected. */
export function isReconcileDisabled(object: Annotated): boolean {
  return annotation(object, RECONCILE_ANNOTATION) === 'disabled';
}

/** `driftless.dev/prune: disabled`: never deleted by pruning. */
export function isPruneDisabled(object: Annotated): boolean {
  return annotation(object, PRUNE_ANNOTATION) === 'disabled';
}
