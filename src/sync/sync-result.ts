/** What a sync or rollback job reports (`driftless sync -o json` prints it, DESIGN.md). */
import type { ChangeSetEntry } from '../apply/changeset.ts';
import type { TrackState } from './track-state.ts';

/** `superseded`: a later-resolved revision is desired; this job did nothing. */
export type SyncOutcome = 'applied' | 'unchanged' | 'failed' | 'pinned' | 'superseded';

export interface SyncResult {
  readonly track: string;
  readonly revision: string | null;
  readonly result: SyncOutcome;
  readonly changeset: ChangeSetEntry[];
  readonly state: TrackState;
  /** Why the sync failed or was refused; undefined on success. */
  readonly error?: string;
  /**
   * What went wrong that the result does not turn on: a newer commit that failed to render or
   * be fetched while the track is pinned at another (result `pinned`; nothing would apply it).
   */
  readonly warning?: string;
  /** Set when a chart must be rendered again for the cluster's capabilities (outcome `superseded`). */
  readonly rerender?: true;
}
