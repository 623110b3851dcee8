/**
 * An object of a track as last seen in the cluster: its sync and health
 * (`status --objects`), and for an object out of sync what would put it back.
 * The drift check stores them in the track's state, so the dashboard
 * function — which cannot reach the cluster — shows them too.
 */
import type { DriftedObject } from '../drift/index.ts';

export type ObjectSync = 'InSync' | 'OutOfSync' | 'Missing' | 'Failed';
export type ObjectHealth = 'Healthy' | 'Progressing' | 'Degraded' | 'Unknown';

/** DESIGN.md `status --objects -o json`: one per object. */
export interface ObjectStatus {
  readonly subject: string;
  readonly apiVersion: string;
  readonly sync: ObjectSync;
  readonly health: ObjectHealth;
  readonly message: string;
}

/** What a Secret's value reads as wherever people see it (dashboard, stored observations). */
export const MASKED_VALUE = '********';

/**
 * One object as the dashboard shows it: its status, and for an object out of
 * sync the operations that put it back and who changed it.
 */
export interface ObservedObject extends ObjectStatus {
  readonly kind: string;
  /**
   * Out of sync: RFC 6902 operations taking the cluster's object back to
   * Git's, each replaced or removed field preceded by a `test` of what the
   * cluster has; a Secret's values masked.
   */
  readonly patch?: DriftedObject['patch'];
  /** Out of sync: the field managers that own the changed fields now. */
  readonly changedBy?: readonly string[];
}
