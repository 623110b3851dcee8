/**
 * `driftless history`: a track's sync attempts, newest first; reads the store only, so it
 * also works for a track the config no longer names.
 */
import type { HistoryEntry } from '../store/ports.ts';
import type { CommandHandler } from './command-handler.ts';
import { EXIT_OK } from './exit-codes.ts';
import { findReadTrack } from './select-tracks.ts';
import { shortRevision } from './status-view.ts';
import { formatTable } from './table.ts';

/** DESIGN.md's fields first, then whatever else the entry recorded (e.g. `error`). */
export function historyJson(entry: HistoryEntry) {
  const { revision, appliedAt, result, trigger, ...rest } = entry;
  return { revision, appliedAt, result, trigger, ...rest };
}

export const historyCommand: CommandHandler = async (ctx, line, output) => {
  // Also a track deleted and then removed from the config: its history stays for audit.
  const track = await findReadTrack(ctx.config, line.track ?? '', line.config, ctx.state);
  const entries = await ctx.state.listHistory(track.name);
  if (line.output === 'json') {
    output.json(entries.map(historyJson));
    return EXIT_OK;
  }
  if (entries.length === 0) {
    output.print(`${track.name}: no history yet`);
    return EXIT_OK;
  }
  const { colours } = output;
  const rows = entries.map((entry) => [
    entry.appliedAt,
    shortRevision(entry.revision),
    entry.result === 'failed' ? colours.red(entry.result) : entry.result,
    entry.trigger,
    typeof entry.error === 'string' ? entry.error : '',
  ]);
  output.print(formatTable(['APPLIED AT', 'REVISION', 'RESULT', 'TRIGGER', 'ERROR'], rows));
  return EXIT_OK;
};
