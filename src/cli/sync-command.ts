/** `driftless sync`: every track in dependency order, or one, with trigger `manual`. */
import { discoverSources } from './discover-sources.ts';
import { runOnTrack } from './run-on-track.ts';
import type { ChangeSetEntry } from '../apply/changeset.ts';
import type { Track } from '../config/types.ts';
import { conditionOf } from '../sync/track-state.ts';
import { UsageError } from '../errors.ts';
import { syncTrack, type SyncResult } from '../sync/sync-track.ts';
import { formatChangeset } from './changeset-summary.ts';
import type { CommandHandler } from './command-handler.ts';
import type { LocalContext } from '../sync/local-context.ts';
import { EXIT_FAILED, EXIT_OK } from './exit-codes.ts';
import type { Output } from './output.ts';
import { findTrack, inDependencyOrder, suspensionOf } from './select-tracks.ts';
import { shortRevision } from './status-view.ts';
import { statusJson } from '../sync/status-json.ts';

/**
 * DESIGN.md `sync -o json` for one track; `error` added when the sync failed, `warning` when a
 * newer commit failed while the track is pinned (that sync is `pinned` and exits 0). A pinned
 * track's revision is its pin, as the text says: the revision fetched meanwhile was not applied.
 */
export function syncJson(result: SyncResult) {
  return {
    track: result.track,
    revision: result.result === 'pinned' ? result.state.pinned : result.revision,
    result: result.result,
    changeset: result.changeset satisfies ChangeSetEntry[],
    status: statusJson(result.track, result.state),
    ...(result.error === undefined ? {} : { error: result.error }),
    ...(result.warning === undefined ? {} : { warning: result.warning }),
  };
}

function syncOne(
  ctx: LocalContext,
  track: Track,
  revision: string | undefined,
  output: Output,
  signal: AbortSignal | undefined,
): Promise<SyncResult> {
  return runOnTrack(
    ctx,
    track,
    output,
    { label: 'applying', revision: null, signal },
    async (deps) => {
      const [cluster, source] = await Promise.all([ctx.cluster(track), ctx.source()]);
      return syncTrack(
        track,
        { ...(revision === undefined ? {} : { revision }), trigger: 'manual' },
        { ...deps, cluster, source },
      );
    },
  );
}

/**
 * The note that files of the synced revision were skipped as holding no Kubernetes object
 * (its FilesParsed message), or undefined. Said on every sync of it: a file skipped by mistake
 * (`Kind:` written for `kind:`) leaves its objects out, and prune deletes them.
 */
function skippedFilesNote(result: SyncResult): string | undefined {
  const parsed = conditionOf(result.state, 'FilesParsed');
  if (result.revision === null || parsed?.status !== 'True') return undefined;
  const about = parsed.message.startsWith(`revision ${result.revision} `);
  return about && / skipped \(/.test(parsed.message) ? parsed.message : undefined;
}

/**
 * Why a failed sync failed, less what its changeset's lines show: the whole error when no object
 * failed (a health wait, a refusal, a fetch), else what is left of it once each failed object's
 * error is taken out (an interruption, objects held back), or undefined when nothing is.
 */
function unshownReason(result: SyncResult): string | undefined {
  if (!result.error) return undefined;
  // describeFailures (apply/changeset.ts) joins these with "; ", an object's subject for an error it lacks.
  const shown = new Set(
    result.changeset
      .filter((entry) => entry.action === 'failed')
      .map((entry) => entry.error ?? entry.subject),
  );
  if (shown.size === 0) return result.error;
  let rest = result.error;
  for (const error of shown) rest = withoutPart(rest, error);
  return rest === '' ? undefined : rest;
}

/** `text`, a "; "-joined list, without its part `part` (which may hold "; " itself). */
function withoutPart(text: string, part: string): string {
  const separator = '; ';
  for (let at = text.indexOf(part); at !== -1; at = text.indexOf(part, at + 1)) {
    const end = at + part.length;
    const starts = at === 0 || text.slice(at - separator.length, at) === separator;
    const ends = end === text.length || text.startsWith(separator, end);
    if (!starts || !ends) continue;
    if (at === 0) return text.slice(Math.min(text.length, end + separator.length));
    return text.slice(0, at - separator.length) + text.slice(end);
  }
  return text;
}

/** The text report of one track's sync. */
export function formatSyncResult(result: SyncResult, output: Output): string {
  const { colours } = output;
  const at = shortRevision(result.revision);
  const lines: string[] = [];
  switch (result.result) {
    case 'applied':
      lines.push(`${colours.bold(result.track)}: ${colours.green('applied')} ${at}`);
      break;
    case 'unchanged':
      lines.push(`${colours.bold(result.track)}: unchanged at ${at}`);
      break;
    case 'pinned':
      lines.push(
        `${colours.bold(result.track)}: ${colours.yellow('pinned')} at ${shortRevision(result.state.pinned)}; ` +
          `run "driftless unpin --track ${result.track}" to follow Git again`,
      );
      break;
    case 'superseded':
      // Another sync (a webhook's, a schedule's) resolved a newer revision meanwhile.
      lines.push(
        `${colours.bold(result.track)}: superseded at ${at}; a revision resolved later is desired`,
      );
      break;
    case 'failed': {
      const reason = unshownReason(result);
      lines.push(
        `${colours.bold(result.track)}: ${colours.red('failed')}${result.revision ? ` at ${at}` : ''}` +
          (reason === undefined ? '' : `: ${reason}`),
      );
      break;
    }
  }
  // A failure the result does not turn on (a newer commit's, while pinned): said, not failed.
  if (result.warning !== undefined) {
    lines.push(`${colours.bold(result.track)}: ${colours.yellow('warning')}: ${result.warning}`);
  }
  if (result.changeset.length > 0) lines.push(formatChangeset(result.changeset, colours));
  return lines.join('\n');
}

export const syncCommand: CommandHandler = async (ctx, line, output, signal) => {
  let tracks: Track[];
  if (line.track !== undefined) {
    const track = findTrack(ctx.config, line.track, line.config);
    const suspended = await suspensionOf(track, ctx.state, line.config);
    if (suspended !== undefined) {
      throw new UsageError(`track "${track.name}" is suspended (${suspended}); nothing was synced`);
    }
    tracks = [track];
  } else {
    tracks = [];
    for (const track of inDependencyOrder(await discoverSources(ctx, output))) {
      const suspended = await suspensionOf(track, ctx.state, line.config);
      if (suspended !== undefined) output.log(`${track.name}: suspended (${suspended}); skipped`);
      else tracks.push(track);
    }
  }
  const results: SyncResult[] = [];
  for (const track of tracks) {
    const result = await syncOne(ctx, track, line.revision, output, signal);
    results.push(result);
    const skipped = skippedFilesNote(result);
    if (skipped !== undefined) output.log(`${track.name}: ${skipped}`);
    if (line.output === 'text') output.print(formatSyncResult(result, output));
  }
  // The GitTracks' `.status` now shows these syncs.
  if (line.track === undefined) await discoverSources(ctx, output, true);
  if (line.output === 'json') {
    const documents = results.map(syncJson);
    output.json(line.track !== undefined ? documents[0] : documents);
  } else if (tracks.length === 0) {
    output.print(`${line.config} has no tracks to sync`);
  }
  return results.some((r) => r.result === 'failed') ? EXIT_FAILED : EXIT_OK;
};
