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
  formatHeldNote,
  formatObjectStatuses,
  formatStatusDetail,
  formatStatusSummary,
} from './status-view.ts';
import {
  offConfigStatusJson,
  shownTrackState,
  statusJson,
  type KeptBySource,
} from '../sync/status-json.ts';
import { keptTracks } from '../sync/published-tracks.ts';
import { trackObjects } from '../sync/object-statuses.ts';
import { tracksOffConfig } from '../sync/schedule.ts';
import { readTrackState } from '../sync/track-state.ts';
import type { StateStore } from '../store/ports.ts';
import type { CommandLine } from './parse-command-line.ts';
import type { LocalContext } from '../sync/local-context.ts';

/**
 * What a source keeps of a track off the config that still has state: the track of a deleted
 * GitTrack whose objects are being collected (the next discoveries collect it), or one whose
 * document is refused for now (it syncs again once mended). Neither is removed from the config,
 * and neither is for `driftless delete`.
 */
async function keptBySource(ctx: LocalContext, name: string): Promise<KeptBySource | undefined> {
  const { collecting, held } = await keptTracks(ctx.config, ctx.published);
  const being = collecting.find((track) => track.name === name);
  if (being !== undefined) return { collecting: being };
  const kept = held.find((track) => track.name === name);
  return kept === undefined ? undefined : { held: kept };
}

export const statusCommand: CommandHandler = async (ctx, line, output) => {
  const named =
    line.track === undefined
      ? undefined
      : await findReadTrack(ctx.config, line.track, line.config, ctx.state);
  if (named !== undefined && named.configured === undefined) {
    const kept = named.hasState ? await keptBySource(ctx, named.name) : undefined;
    return removedTrackStatus(ctx.state, named, kept, line, output);
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
  // GitTracks as being collected, those of refused documents as held.
  const { removed, collecting, held } =
    line.track === undefined
      ? await tracksOffConfig(ctx.config.tracks, ctx.state, () =>
          keptTracks(ctx.config, ctx.published),
        )
      : { removed: [], collecting: [], held: [] };
  const kept: KeptBySource[] = [
    ...collecting.map((track) => ({ collecting: track })),
    ...held.map((track) => ({ held: track })),
  ];
  const keptEntries = await Promise.all(
    kept.map(async (by) => {
      const name = (by.collecting ?? by.held).name;
      return { track: name, state: await readTrackState(ctx.state, name), ...by };
    }),
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
      (cluster, signal) =>
        trackObjects(track, {
          cluster,
          signal,
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
      ...keptEntries.map(({ track, state, ...by }) => offConfigStatusJson(track, state, by)),
      ...removedEntries.map(({ track, state }) => offConfigStatusJson(track, state, undefined)),
    ];
    output.json(line.track !== undefined ? documents[0] : documents);
  } else if (line.track !== undefined && entries[0]) {
    output.print(
      formatStatusDetail(entries[0].track, entries[0].state, output.colours, new Date()),
    );
  } else {
    output.print(formatStatusSummary([...entries, ...keptEntries], output.colours, new Date()));
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
 * list shows it (`removedFromConfig`; the track of a deleted GitTrack as being collected, one
 * whose document is refused for now as held). Deleted, it has only its history left, and says so
 * rather than looking like a track never synced.
 */
async function removedTrackStatus(
  store: StateStore,
  track: { readonly name: string; readonly hasState: boolean },
  kept: KeptBySource | undefined,
  line: CommandLine,
  output: Output,
): Promise<number> {
  const { name } = track;
  if (line.objects) {
    // Its objects are judged against its config (the revision, the cluster): there is none.
    const why =
      kept?.collecting !== undefined
        ? `is being collected (GitTrack ${kept.collecting.gitTrack} was deleted)`
        : kept?.held !== undefined
          ? `is held: ${kept.held.document ?? 'the document that gave it'} is refused for now`
          : `is no longer in ${line.config}`;
    throw new UsageError(
      `--objects: track "${name}" ${why}, so its objects cannot be checked; "driftless status --track ${name}" without --objects shows what the store keeps of it`,
    );
  }
  const state = await readTrackState(store, name);
  if (line.output === 'json') {
    output.json(offConfigStatusJson(name, state, kept));
  } else if (kept !== undefined) {
    output.print(formatStatusDetail(name, state, output.colours, new Date()));
    output.print('');
    output.print(
      kept.collecting !== undefined
        ? formatCollectingNote(kept.collecting, output.colours)
        : formatHeldNote(kept.held, output.colours),
    );
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
