/**
 * `driftless sync` of every track reads the `tracksFrom` sources first, as
 * the schedule does in `serve` and in AWS, so a GitTrack applied with
 * kubectl (or committed) is synced by the next `driftless sync`; and once
 * more after the syncs, so each GitTrack's `.status` shows their outcome.
 */
import type { Track } from '../config/types.ts';
import { messageOf } from '../errors.ts';
import { discoverGitTracks } from '../sync/discover-git-tracks.ts';
import { discoverTrackDocuments } from '../sync/discover-tracks.ts';
import type { LocalContext } from '../sync/local-context.ts';
import { knownTracks } from '../sync/published-tracks.ts';
import type { Output } from './output.ts';

/**
 * Discovers every source and returns the tracks known afterwards. Problems go to stderr, unless
 * `quiet` (the discovery after the syncs, whose problems the one before told already).
 */
export async function discoverSources(
  ctx: LocalContext,
  output: Output,
  quiet = false,
): Promise<Track[]> {
  const log = (text: string): void => {
    if (!quiet) output.log(text);
  };
  const published = ctx.published;
  if (ctx.config.tracksFrom.length === 0 || published === undefined) return ctx.config.tracks;
  for (const source of ctx.config.tracksFrom) {
    try {
      const common = { config: ctx.config, published, state: ctx.state };
      const result =
        source.kind === 'cluster'
          ? await discoverGitTracks(source, {
              ...common,
              cluster: await ctx.cluster({ name: source.id, cluster: source.cluster }),
            })
          : await discoverTrackDocuments(source, { ...common, source: await ctx.source() });
      for (const problem of result.problems) log(`${problem.where}: ${problem.message}`);
      for (const error of result.errors) log(`tracksFrom ${source.id}: ${error}`);
      for (const track of result.collected) {
        output.log(`${track}: its GitTrack was deleted; the track's deletion policy was applied`);
      }
    } catch (error) {
      // The last published list stays in use: one unreadable source must not stop the syncs.
      log(`tracksFrom ${source.id}: not read: ${messageOf(error)}`);
    }
  }
  return knownTracks(ctx.config, published);
}
