/**
 * `driftless suspend`, `resume`, `delete` and `unlock`: the track's lifecycle,
 * kept in its stored state (src/sync/lifecycle.ts), so the same store that AWS
 * uses sees it without a redeploy.
 */
import { DEFAULT_TRACK_TIMEOUT_MS } from '../config/schema.ts';
import type { Track } from '../config/types.ts';
import { UsageError } from '../errors.ts';
import {
  deleteTrack,
  resumeTrack,
  suspendTrack,
  unlockTrack,
  type DeletedTrack,
} from '../sync/lifecycle.ts';
import type { LocalContext } from '../sync/local-context.ts';
import { describeBusy, LEASE_ID_LENGTH, readTrackState } from '../sync/track-state.ts';
import { errorBesideSubject } from './changeset-summary.ts';
import type { CommandHandler } from './command-handler.ts';
import { EXIT_FAILED, EXIT_OK } from './exit-codes.ts';
import { findTrack } from './select-tracks.ts';
import { syncCommand } from './sync-command.ts';

export const suspendCommand: CommandHandler = async (ctx, line, output) => {
  const track = findTrack(ctx.config, line.track ?? '', line.config);
  const result = await suspendTrack(track, { state: ctx.state });
  output.print(
    result.unchanged
      ? `${output.colours.bold(track.name)}: already suspended; nothing changed, nothing recorded`
      : `${output.colours.bold(track.name)}: suspended; webhooks, polls and drift checks leave it alone until "driftless resume --track ${track.name}"`,
  );
  return EXIT_OK;
};

export const resumeCommand: CommandHandler = async (ctx, line, output, signal) => {
  const track = findTrack(ctx.config, line.track ?? '', line.config);
  const result = await resumeTrack(track, { state: ctx.state });
  const name = output.colours.bold(track.name);
  if (result.suspended) {
    // `suspend: true` in the config outranks the stored state.
    output.print(
      result.unchanged
        ? `${name}: not suspended by "driftless suspend"; still suspended by suspend: true in ${line.config}`
        : `${name}: resumed, but still suspended by suspend: true in ${line.config}`,
    );
    return EXIT_OK;
  }
  output.print(
    result.unchanged ? `${name}: was not suspended; nothing to resume` : `${name}: resumed`,
  );
  // Synced either way, as documented: resume is also "bring the track up to date now".
  return syncCommand(ctx, { ...line, output: 'text' }, output, signal);
};

/**
 * The track to delete: the configured one, or — for a track removed from the
 * config that still has state — a stand-in with the defaults (prune, so
 * MirrorPrune collects) on the cluster it last applied to.
 */
async function trackToDelete(
  ctx: LocalContext,
  name: string,
  configFile: string,
): Promise<DeletedTrack & Pick<Track, 'cluster'>> {
  const configured = ctx.config.tracks.find((track) => track.name === name);
  if (configured) return configured;
  if (!(await ctx.state.listTracks()).includes(name))
    return findTrack(ctx.config, name, configFile);
  const state = await readTrackState(ctx.state, name);
  const cluster =
    state.cluster ?? (ctx.config.clusters.length === 1 ? ctx.config.clusters[0]?.name : undefined);
  if (cluster === undefined) {
    throw new UsageError(
      `--track: "${name}" is no longer in ${configFile} and its state does not say which cluster it applied to; put it back in the config to delete it`,
    );
  }
  return {
    name,
    cluster,
    prune: true,
    deletionPolicy: 'MirrorPrune',
    suspend: false,
    timeout: DEFAULT_TRACK_TIMEOUT_MS,
  };
}

export const deleteCommand: CommandHandler = async (ctx, line, output, signal) => {
  const track = await trackToDelete(ctx, line.track ?? '', line.config);
  const result = await deleteTrack(track, line.policy, {
    state: ctx.state,
    cluster: await ctx.cluster(track),
    ...(signal === undefined ? {} : { signal }),
  });
  if (line.output === 'json') {
    output.json(result);
  } else {
    for (const entry of result.changeset) {
      const error = errorBesideSubject(entry);
      output.print(
        `  ${entry.action.padEnd(9)} ${entry.subject}${entry.reason ? ` (${entry.reason})` : ''}${error ? `: ${error}` : ''}`,
      );
    }
    if (result.note) output.print(`  ${result.note}`);
    const name = output.colours.bold(track.name);
    output.print(
      result.result !== 'deleted'
        ? `${name}: not deleted: ${result.error}`
        : result.unchanged
          ? `${name}: nothing to delete; nothing was recorded in its history`
          : `${name}: deleted (policy ${result.policy}); its state was removed, its history kept`,
    );
  }
  return result.result === 'deleted' ? EXIT_OK : EXIT_FAILED;
};

/** A lease id as status shows it: its first hex digits, enough that it names one job's lease. */
const LEASE_ID = new RegExp(`^[0-9a-f]{${LEASE_ID_LENGTH}}[0-9a-f-]*$`);

export const unlockCommand: CommandHandler = async (ctx, line, output) => {
  const lease = line.lease ?? '';
  if (!LEASE_ID.test(lease)) {
    throw new UsageError(
      `unlock: --lease must be the lease's id as status shows it (${LEASE_ID_LENGTH} hex digits, like 3f2a9c1e), not ${JSON.stringify(lease)}`,
    );
  }
  // A track the config no longer names may still be held (a delete that died): its state says.
  const name = line.track ?? '';
  if (!(await ctx.state.listTracks()).includes(name)) findTrack(ctx.config, name, line.config);
  const result = await unlockTrack(name, lease, { state: ctx.state });
  if (line.output === 'json') {
    output.json(result);
  } else {
    output.print(
      result.lease === null
        ? `${output.colours.bold(name)}: not busy; nothing to unlock`
        : `${output.colours.bold(name)}: unlocked lease ${result.lease.lease} (${describeBusy(result.lease)}); the next sync, rollback or drift check runs at once`,
    );
  }
  return EXIT_OK;
};
