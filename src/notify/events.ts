/**
 * What notifications carry (DESIGN.md "Notifications and metrics"): one
 * event per transition of a track, the same JSON a generic webhook receives.
 */
import type { NotificationEventType } from '../config/types.ts';

export interface NotificationEvent {
  readonly track: string;
  readonly event: NotificationEventType;
  /** The commit concerned, or null (a fetch that could not resolve one). */
  readonly revision: string | null;
  /** The job's result word (`applied`, `failed`, `corrected`, ...). */
  readonly result: string;
  /** One line for people; the first error when something failed. */
  readonly message: string;
  /** Objects concerned (`Kind/namespace/name`): what drifted, what was written back. */
  readonly subjects: readonly string[];
  /** ISO-8601. */
  readonly time: string;
}
