/** `driftless status`: each track's recorded state; reads the store only. */
import type { CommandHandler } from './command-handler.ts';
import { EXIT_OK } from './exit-codes.ts';
import { findTrack } from './select-tracks.ts';
import { formatObjectStatuses, formatStatusDetail, formatStatusSummary } from './status-view.ts';
import { statusJson } from '../sync/status-json.ts';
import { objectStatuses } from '../sync/object-statuses.ts';
import { tracksRemovedFromConfig } from '../sync/schedule.ts';
import { isSuspended, readTrackState } from '../sync/track-state.ts';

export const statusCommand: CommandHandler = async (ctx, line, output) => {
  const tracks =
    line.track !== undefined ? [findTrack(ctx.config, line.track, line.config)] : ctx.config.tracks;
  const entries = await Promise.all(
    tracks.map(async (track) => {
      const state = await readTrackState(ctx.state, track.name);
      // The config's `suspend: true` counts as much as a stored suspension.
      return { track: track.name, state: { ...state, suspended: isSuspended(track, state) } };
    }),
  );
  // Tracks the config no longer names still hold objects: shown until deleted.
  const removed =
    line.track === undefined ? await tracksRemovedFromConfig(ctx.config.tracks, ctx.state) : [];
  const removedEntries = await Promise.all(
    removed.map(async (track) => ({ track, state: await readTrackState(ctx.state, track) })),
  );
  const [track] = tracks;
  if (line.objects && line.track !== undefined && track && entries[0]) {
    const objects = await objectStatuses(track, {
      cluster: await ctx.cluster(track),
      artifacts: ctx.artifacts,
      state: ctx.state,
      ...(ctx.readSecret === undefined ? {} : { readSecret: ctx.readSecret }),
    });
    if (line.output === 'json') {
      output.json({ ...statusJson(entries[0].track, entries[0].state), objects });
    } else {
      output.print(
        formatStatusDetail(entries[0].track, entries[0].state, output.colours, new Date()),
      );
      output.print('');
      output.print(formatObjectStatuses(objects, output.colours));
    }
    return EXIT_OK;
  }
  if (line.output === 'json') {
    const documents = [
      ...entries.map(({ track, state }) => statusJson(track, state)),
      ...removedEntries.map(({ track, state }) => ({
        ...statusJson(track, state),
        removedFromConfig: true,
      })),
    ];
    output.json(line.track !== undefined ? documents[0] : documents);
  } else if (line.track !== undefined && entries[0]) {
    output.print(
      formatStatusDetail(entries[0].track, entries[0].state, output.colours, new Date()),
    );
  } else {
    output.print(formatStatusSummary(entries, output.colours, new Date()));
    for (const { track } of removedEntries) {
      output.print(
        `${output.colours.yellow(track)}: removed from ${line.config} but still has state and objects; "driftless delete --track ${track}" collects it`,
      );
    }
  }
  return EXIT_OK;
};
