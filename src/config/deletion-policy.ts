/** Flux's deletion policies, as the config, the CLI and the delete action spell them. */
export const DELETION_POLICIES = ['Delete', 'Orphan', 'MirrorPrune'] as const;

/** Delete: remove the objects; Orphan: leave them; MirrorPrune: Delete when the track prunes. */
export type DeletionPolicy = (typeof DELETION_POLICIES)[number];

export function isDeletionPolicy(value: unknown): value is DeletionPolicy {
  return DELETION_POLICIES.includes(value as DeletionPolicy);
}
