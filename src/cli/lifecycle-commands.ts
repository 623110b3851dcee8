/**
 * `driftless suspend`, `resume` and `delete`: the track's lifecycle, kept in
 * its stored state (src/sync/lifecycle.ts), so the same store that AWS uses
 * sees it without a redeploy.
 */
import { deleteTrack, resumeTrack, suspendTrack } from '../sync/lifecycle.ts';
import type { CommandHandler } from './command-handler.ts';
import { EXIT_FAILED, EXIT_OK } from './exit-codes.ts';
import { findTrack } from './select-tracks.ts';
import { syncCommand } from './sync-command.ts';

export const suspendCommand: CommandHandler = async (ctx, line, output) => {
  const track = findTrack(ctx.config, line.track ?? '', line.config);
  await suspendTrack(track, { state: ctx.state });
  output.print(
    `${output.colours.bold(track.name)}: suspended; webhooks, polls and drift checks leave it alone until "driftless resume --track ${track.name}"`,
  );
  return EXIT_OK;
};

export const resumeCommand: CommandHandler = async (ctx, line, output) => {
  const track = findTrack(ctx.config, line.track ?? '', line.config);
  const result = await resumeTrack(track, { state: ctx.state });
  if (result.suspended) {
    // `suspend: true` in the config outranks the stored state.
    output.print(
      `${output.colours.bold(track.name)}: resumed, but still suspended by suspend: true in ${line.config}`,
    );
    return EXIT_OK;
  }
  output.print(`${output.colours.bold(track.name)}: resumed`);
  return syncCommand(ctx, { ...line, output: 'text' }, output);
};

export const deleteCommand: CommandHandler = async (ctx, line, output) => {
  const track = findTrack(ctx.config, line.track ?? '', line.config);
  const result = await deleteTrack(track, line.policy, {
    state: ctx.state,
    cluster: await ctx.cluster(track),
  });
  if (line.output === 'json') {
    output.json(result);
  } else {
    for (const entry of result.changeset) {
      output.print(
        `  ${entry.action.padEnd(9)} ${entry.subject}${entry.reason ? ` (${entry.reason})` : ''}${entry.error ? `: ${entry.error}` : ''}`,
      );
    }
    if (result.note) output.print(`  ${result.note}`);
    output.print(
      result.result === 'deleted'
        ? `${output.colours.bold(track.name)}: deleted (policy ${result.policy}); its state was removed, its history kept`
        : `${output.colours.bold(track.name)}: not deleted: ${result.error}`,
    );
  }
  return result.result === 'deleted' ? EXIT_OK : EXIT_FAILED;
};
