/**
 * `driftless rollback`: apply a stored revision — the previous one or one
 * named by sha (prefix) — prune to it and pin the track there. Reads only the
 * artifact store and the cluster: it works while the Git host is down.
 */
import { runOnTrack } from './run-on-track.ts';
import type { Track } from '../config/types.ts';
import type { SyncResult } from '../sync/apply-revision.ts';
import { resolveRollbackTarget, rollbackTrack, type RollbackTarget } from '../sync/rollback.ts';
import { formatChangeset } from './changeset-summary.ts';
import type { CommandHandler } from './command-handler.ts';
import type { LocalContext } from '../sync/local-context.ts';
import { EXIT_FAILED, EXIT_OK } from './exit-codes.ts';
import type { Output } from './output.ts';
import type { CommandLine } from './parse-command-line.ts';
import { findTrack } from './select-tracks.ts';
import { shortRevision } from './status-view.ts';
import { formatSyncResult, syncJson } from './sync-command.ts';

/** What `--revision` / `--previous` ask for; the parser already made sure exactly one is given. */
export function rollbackTarget(line: Pick<CommandLine, 'revision' | 'previous'>): RollbackTarget {
  return line.previous ? { previous: true } : { revision: line.revision ?? '' };
}

function rollbackOne(
  ctx: LocalContext,
  track: Track,
  revision: string,
  output: Output,
  signal: AbortSignal | undefined,
): Promise<SyncResult> {
  return runOnTrack(ctx, track, output, { label: 'rolling back', revision, signal }, async (deps) =>
    rollbackTrack(
      track,
      { type: 'rollback', track: track.name, revision },
      { ...deps, cluster: await ctx.cluster(track) },
    ),
  );
}

/** The text report of a rollback: where the track is pinned now, then the changeset. */
export function formatRollbackResult(result: SyncResult, output: Output): string {
  const { colours } = output;
  const pinnedHere = result.revision !== null && result.state.pinned === result.revision;
  if (result.result === 'failed') {
    const report = formatSyncResult(result, output);
    return pinnedHere
      ? `${report}\n${colours.yellow('pinned')} at ${shortRevision(result.revision)} all the same; ` +
          `fix the cause and roll back again, or run "driftless unpin --track ${result.track}"`
      : report;
  }
  const lines = [
    `${colours.bold(result.track)}: ${colours.green('rolled back')} to ${shortRevision(result.revision)} ` +
      `and ${colours.yellow('pinned')}; run "driftless unpin --track ${result.track}" to follow Git again`,
  ];
  if (result.changeset.length > 0) lines.push(formatChangeset(result.changeset, colours));
  return lines.join('\n');
}

export const rollbackCommand: CommandHandler = async (ctx, line, output, signal) => {
  const track = findTrack(ctx.config, line.track ?? '', line.config);
  // RollbackTargetError (not stored, ambiguous, no previous) lists the stored revisions; it
  // reaches main as a failed operation, exit 3: the command line itself was fine.
  const revision = await resolveRollbackTarget(track, rollbackTarget(line), ctx);
  output.log(`${track.name}: rolling back to ${revision}`);
  const result = await rollbackOne(ctx, track, revision, output, signal);
  if (line.output === 'json') output.json(syncJson(result));
  else output.print(formatRollbackResult(result, output));
  return result.result === 'failed' ? EXIT_FAILED : EXIT_OK;
};
