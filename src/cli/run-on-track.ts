/**
 * One track's sync or rollback in the CLI: under a progress line, with the
 * local context's stores, and reported as failed when it cannot run at all.
 */
import type { Track } from '../config/types.ts';
import { messageOf } from '../errors.ts';
import type { StateStore } from '../store/ports.ts';
import type { ApplyDeps } from '../sync/apply-revision.ts';
import type { LocalContext } from '../sync/local-context.ts';
import type { SyncResult } from '../sync/sync-result.ts';
import { emptyTrackState, readTrackState } from '../sync/track-state.ts';
import type { Output } from './output.ts';

/** What a use-case is given besides the cluster (and the sync's Git source). */
export type LocalApplyDeps = Omit<ApplyDeps, 'cluster'>;

/**
 * Runs `job` under a progress line `<track>: <label>`. When it cannot run or
 * record its own result (a cluster or store unreachable, the track's lease
 * held), the track is reported as failed, in the same shape, and the command
 * goes on: one bad cluster does not hide the other tracks.
 */
export async function runOnTrack(
  ctx: LocalContext,
  track: Track,
  output: Output,
  step: {
    readonly label: string;
    /** The revision reported when it cannot run: a rollback's target, null for a sync. */
    readonly revision: string | null;
    readonly signal: AbortSignal | undefined;
  },
  job: (deps: LocalApplyDeps) => Promise<SyncResult>,
): Promise<SyncResult> {
  const progress = output.progress(`${track.name}: ${step.label}`);
  try {
    return await job({
      artifacts: ctx.artifacts,
      state: ctx.state,
      ...(ctx.readSecret === undefined ? {} : { readSecret: ctx.readSecret }),
      onProgress: (done, total) => progress.update(done, total),
      ...(step.signal === undefined ? {} : { signal: step.signal }),
    });
  } catch (error) {
    return failedToRun(ctx.state, track, step.revision, error);
  } finally {
    progress.end();
  }
}

/** Failed, with the track's state as far as it can still be read. */
async function failedToRun(
  state: StateStore,
  track: Pick<Track, 'name'>,
  revision: string | null,
  error: unknown,
): Promise<SyncResult> {
  return {
    track: track.name,
    revision,
    result: 'failed',
    changeset: [],
    state: await readTrackState(state, track.name).catch(() => emptyTrackState()),
    error: messageOf(error),
  };
}
