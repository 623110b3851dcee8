/** `driftless status`: each track's recorded state; reads the store only. */
import { UsageError } from '../errors.ts';
import type { Palette } from './colours.ts';
import type { CommandHandler } from './command-handler.ts';
import { EXIT_OK } from './exit-codes.ts';
import type { Output } from './output.ts';
import { readWithinTimeout } from '../sync/track-cluster.ts';
import { findReadTrack } from './select-tracks.ts';
import {
  formatCollectingNote,
  formatObjectStatuses,
  formatStatusDetail,
  formatStatusSummary,
} from './status-view.ts';
import { offConfigStatusJson, shownTrackState, statusJson } from '../sync/status-json.ts';
import { collectingTracks, type CollectingTrack } from '../sync/published-tracks.ts';
import { trackObjects } from '../sync/object-statuses.ts';
import { tracksOffConfig } from '../sync/schedule.ts';
import { readTrackState } from '../sync/track-state.ts';
import type { StateStore } from '../store/ports.ts';
import type { CommandLine } from './parse-command-line.ts';
import type { LocalContext } from '../sync/local-context.ts';

/**
 * The tracks of deleted GitTracks whose objects are being collected, that still have state:
 * off the config's and the published tracks, yet not removed from the config either, and not
 * for `driftless delete` (the next discoveries collect them).
 */
async function beingCollected(
  ctx: LocalContext,
  withState: readonly string[],
): Promise<CollectingTrack[]> {
  const collecting = await collectingTracks(ctx.config, ctx.published);
  return collecting.filter((track) => withState.includes(track.name));
}

export const statusCommand: CommandHandler = async (ctx, line, output) => {
  const named =
    line.track === undefined
      ? undefined
      : await findReadTrack(ctx.config, line.track, line.config, ctx.state);
  if (named !== undefined && named.configured === undefined) {
    const [collecting] = named.hasState ? await beingCollected(ctx, [named.name]) : [];
    return removedTrackStatus(ctx.state, named, collecting, line, output);
  }
  const tracks = named !== undefined ? [named.configured] : ctx.config.tracks;
  const entries = await Promise.all(
    tracks.map(async (track) => {
      const state = await readTrackState(ctx.state, track.name);
      // The config's `suspend: true` counts as much as a stored suspension.
      return { track: track.name, state: shownTrackState(track, state) };
    }),
  );
  // Tracks the config no longer names still hold objects: shown until deleted; those of deleted
  // GitTracks as being collected.
  const { removed, collecting } =
    line.track === undefined
      ? await tracksOffConfig(ctx.config.tracks, ctx.state, () =>
          collectingTracks(ctx.config, ctx.published),
        )
      : { removed: [], collecting: [] };
  const collectingEntries = await Promise.all(
    collecting.map(async (track) => ({
      track: track.name,
      state: await readTrackState(ctx.state, track.name),
      collecting: track,
    })),
  );
  const removedEntries = await Promise.all(
    removed.map(async (track) => ({ track, state: await readTrackState(ctx.state, track) })),
  );
  const [track] = tracks;
  if (line.objects && line.track !== undefined && track && entries[0]) {
    // The objects are read as a sync applies them: within the track's timeout.
    const covered = await readWithinTimeout(
      track,
      'status check',
      await ctx.cluster(track),
      (cluster) =>
        trackObjects(track, {
          cluster,
          artifacts: ctx.artifacts,
          state: ctx.state,
          ...(ctx.readSecret === undefined ? {} : { readSecret: ctx.readSecret }),
        }),
    );
    if (line.output === 'json') {
      // `ignored` is added after DESIGN.md's `objects`, which stays as it was: what is applied.
      output.json({ ...statusJson(entries[0].track, entries[0].state), ...covered });
    } else {
      output.print(
        formatStatusDetail(entries[0].track, entries[0].state, output.colours, new Date()),
      );
      output.print('');
      output.print(formatObjectStatuses(covered, output.colours));
    }
    return EXIT_OK;
  }
  if (line.output === 'json') {
    const documents = [
      ...entries.map(({ track, state }) => statusJson(track, state)),
      // Off the tracks the config and the sources name, as one removed from the config is.
      ...collectingEntries.map(({ track, state, collecting }) =>
        offConfigStatusJson(track, state, collecting),
      ),
      ...removedEntries.map(({ track, state }) => offConfigStatusJson(track, state, undefined)),
    ];
    output.json(line.track !== undefined ? documents[0] : documents);
  } else if (line.track !== undefined && entries[0]) {
    output.print(
      formatStatusDetail(entries[0].track, entries[0].state, output.colours, new Date()),
    );
  } else {
    output.print(
      formatStatusSummary([...entries, ...collectingEntries], output.colours, new Date()),
    );
    for (const { track } of removedEntries) {
      output.print(removedNote(track, line.config, output.colours));
    }
  }
  return EXIT_OK;
};

function removedNote(track: string, configFile: string, colours: Palette): string {
  return `${colours.yellow(track)}: removed from ${configFile} but still has state and objects; "driftless delete --track ${track}" collects it`;
}

/**
 * `status --track` of a track the config no longer names: what the store keeps of it, as the
 * list shows it (`removedFromConfig`; the track of a deleted GitTrack as being collected).
 * Deleted, it has only its history left, and says so rather than looking like a track never
 * synced.
 */
async function removedTrackStatus(
  store: StateStore,
  track: { readonly name: string; readonly hasState: boolean },
  collecting: CollectingTrack | undefined,
  line: CommandLine,
  output: Output,
): Promise<number> {
  const { name } = track;
  if (line.objects) {
    // Its objects are judged against its config (the revision, the cluster): there is none.
    const why =
      collecting === undefined
        ? `is no longer in ${line.config}`
        : `is being collected (GitTrack ${collecting.gitTrack} was deleted)`;
    throw new UsageError(
      `--objects: track "${name}" ${why}, so its objects cannot be checked; "driftless status --track ${name}" without --objects shows what the store keeps of it`,
    );
  }
  const state = await readTrackState(store, name);
  if (line.output === 'json') {
    output.json(offConfigStatusJson(name, state, collecting));
  } else if (collecting !== undefined) {
    output.print(formatStatusDetail(name, state, output.colours, new Date()));
    output.print('');
    output.print(formatCollectingNote(collecting, output.colours));
  } else if (!track.hasState) {
    output.print(
      `${output.colours.bold(name)}: not in ${line.config} and has no state (deleted); its history stays: "driftless history --track ${name}"`,
    );
  } else {
    output.print(formatStatusDetail(name, state, output.colours, new Date()));
    output.print('');
    output.print(removedNote(name, line.config, output.colours));
  }
  return EXIT_OK;
}
