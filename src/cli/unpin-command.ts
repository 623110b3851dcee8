/**
 * `driftless unpin`: remove a rollback's pin and sync the track at once, so it
 * resumes with the newest revision rather than waiting for the next push or
 * schedule. Reports and exits like `driftless sync --track`.
 */
import { unpinTrackAction } from '../sync/lifecycle.ts';
import { readTrackState } from '../sync/track-state.ts';
import type { CommandHandler } from './command-handler.ts';
import { EXIT_OK } from './exit-codes.ts';
import { findTrack, suspensionOf } from './select-tracks.ts';
import { syncCommand } from './sync-command.ts';

export const unpinCommand: CommandHandler = async (ctx, line, output, signal) => {
  const track = findTrack(ctx.config, line.track ?? '', line.config);
  const { pinned } = await readTrackState(ctx.state, track.name);
  // The same use-case as the unpin action in AWS: also written to the history.
  await unpinTrackAction(track, { state: ctx.state });
  output.print(
    pinned
      ? `${output.colours.bold(track.name)}: unpinned (was pinned at ${pinned})`
      : `${output.colours.bold(track.name)}: was not pinned`,
  );
  // Suspended in the config or by `driftless suspend`: sync refuses the track; the pin is gone
  // all the same, and resuming syncs the newest.
  const suspended = await suspensionOf(track, ctx.state, line.config);
  if (suspended !== undefined) {
    output.print(`${track.name}: suspended (${suspended}); not synced`);
    return EXIT_OK;
  }
  return syncCommand(ctx, { ...line, output: 'text' }, output, signal);
};
