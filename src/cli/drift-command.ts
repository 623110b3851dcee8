/**
 * `driftless drift`: compare each track (or one) with the revision it applied
 * — its pin after a rollback — and put back what was changed by hand, or with
 * `--detect-only` / `drift: detect` only report it (exit 1 when found).
 */
import type { Operation } from 'fast-json-patch';
import type { Track } from '../config/types.ts';
import { InterruptedError, UsageError, messageOf } from '../errors.ts';
import { noDriftFound, reconcileDrift, type DriftResult } from '../sync/reconcile-drift.ts';
import { writeBackTrack, type WriteBackResult } from '../sync/write-back.ts';
import { formatChangeset, formatCounts } from './changeset-summary.ts';
import type { CommandHandler } from './command-handler.ts';
import type { LocalContext } from '../sync/local-context.ts';
import { EXIT_DIFFERENCES, EXIT_FAILED, EXIT_OK } from './exit-codes.ts';
import type { Output } from './output.ts';
import { findTrack, inDependencyOrder, suspensionOf } from './select-tracks.ts';
import { shortRevision } from './status-view.ts';
import { formatTable } from './table.ts';

/** One track's drift check as the command saw it. */
export interface DriftRun extends DriftResult {
  /** `syncTo: git` objects whose cluster changes are in Git: committed now, or before (`commit` null). */
  readonly writtenBack: string[];
  /** The write-back commit, or null. */
  readonly commit: string | null;
  /** Write-backs refused (a Secret), fields Git changed meanwhile, a push that failed. */
  readonly writeBackErrors: { subject: string; error: string }[];
  /** Why the check could not run or record its result (cluster or store unreachable, track busy). */
  readonly error?: string;
  /** Why found drift was left in place: the track's `drift: detect`, or `--detect-only`. */
  readonly leftInPlace?: 'drift: detect' | '--detect-only';
}

/** Values longer than this are cut in the text table; `-o json` carries them whole. */
const VALUE_WIDTH = 60;

function found(run: DriftResult): boolean {
  return run.drifted.length > 0 || run.missing.length > 0;
}

/** Drift neither corrected nor written back to Git. */
function leftOver(run: DriftRun): boolean {
  const written = new Set(run.writtenBack);
  const notWritten = run.drifted.filter((d) => !written.has(d.subject));
  return !run.corrected && (notWritten.length > 0 || run.missing.length > 0);
}

/** Objects that could not be checked, and corrections the server refused: each starts with its subject. */
function errorsOf(run: DriftRun): { subject: string; error: string }[] {
  const refused = run.changeset
    .filter((entry) => entry.action === 'failed')
    .map((entry) => ({
      subject: entry.subject,
      error: entry.error ?? `${entry.subject}: correction failed`,
    }));
  return [...run.errors, ...refused, ...run.writeBackErrors];
}

function failed(run: DriftRun): boolean {
  return run.error !== undefined || errorsOf(run).length > 0;
}

/** 3 when any check or correction failed, else 1 when drift was left in place, else 0. */
export function driftExitCode(runs: readonly DriftRun[]): number {
  if (runs.some(failed)) return EXIT_FAILED;
  if (runs.some(leftOver)) return EXIT_DIFFERENCES;
  return EXIT_OK;
}

/**
 * DESIGN.md `drift -o json` for one track, extended with who changed each
 * object (`changedBy`), what could not be checked or corrected (`errors`), and
 * `error` when the check did not run at all.
 */
export function driftJson(run: DriftRun) {
  return {
    track: run.track,
    revision: run.revision,
    drifted: run.drifted.map((d) => ({
      subject: d.subject,
      patch: d.patch,
      changedBy: d.changedBy,
    })),
    missing: run.missing,
    corrected: run.corrected,
    writtenBack: run.writtenBack,
    commit: run.commit,
    errors: errorsOf(run),
    ...(run.error === undefined ? {} : { error: run.error }),
  };
}

/** An operation's value as JSON, cut to {@link VALUE_WIDTH}; `from` for move and copy. */
function valueOf(op: Operation): string {
  if ('value' in op) {
    const text = JSON.stringify(op.value) ?? 'undefined';
    return text.length > VALUE_WIDTH ? `${text.slice(0, VALUE_WIDTH - 1)}…` : text;
  }
  return 'from' in op ? `from ${op.from}` : '';
}

/** One row per patch operation; the subject and who changed it on the object's first row only. */
function driftedTable(run: DriftRun): string {
  const rows = run.drifted.flatMap((object) =>
    object.patch.map((op, index) => [
      index === 0 ? object.subject : '',
      op.op,
      op.path,
      valueOf(op),
      index === 0 ? object.changedBy.join(', ') || '-' : '',
    ]),
  );
  return formatTable(['DRIFTED', 'OP', 'PATH', 'VALUE IN GIT', 'CHANGED BY'], rows);
}

/** The text report of one track's drift check. */
export function formatDriftRun(run: DriftRun, output: Output): string {
  const { colours } = output;
  const name = colours.bold(run.track);
  if (run.error !== undefined) return `${name}: ${colours.red('failed')}: ${run.error}`;
  if (run.revision === null) return `${name}: never applied; no drift to check`;
  const at = shortRevision(run.revision);
  if (!found(run)) {
    const head = `${name}: no drift at ${at}`;
    // Objects new to Git (writeBack.include) are written back, or refused, with no drift found.
    const lines =
      run.errors.length === 0
        ? [head]
        : [
            `${head} in the objects checked; ${colours.red(`${run.errors.length} could not be checked`)}`,
            ...run.errors.map((e) => colours.red(e.error)),
          ];
    return [...lines, ...writtenBack(run, output), ...writeBackErrors(run, output)].join('\n');
  }
  const counts = [
    run.drifted.length > 0 ? `${run.drifted.length} drifted` : '',
    run.missing.length > 0 ? `${run.missing.length} missing` : '',
  ].filter(Boolean);
  const lines = [`${name}: ${colours.yellow('drift')} at ${at}: ${counts.join(', ')}`];
  if (run.drifted.length > 0) lines.push(driftedTable(run));
  if (run.missing.length > 0) {
    lines.push(
      formatTable(
        ['MISSING'],
        run.missing.map((subject) => [subject]),
      ),
    );
  }
  lines.push(...writtenBack(run, output));
  if (run.corrected) {
    // The objects are listed above: the counts say what was done to them.
    lines.push(`${colours.green('corrected')}: ${formatCounts(run.changeset, colours)}`);
  } else if (run.changeset.length > 0) {
    lines.push(`${colours.red('correction failed')}:`, formatChangeset(run.changeset, colours));
  } else if (leftOver(run)) {
    lines.push(colours.yellow(`left in place (${run.leftInPlace ?? 'not corrected'})`));
  }
  // Refused corrections are in the changeset table already; these are objects not checked.
  lines.push(...run.errors.map((e) => colours.red(e.error)));
  lines.push(...writeBackErrors(run, output));
  return lines.join('\n');
}

/** The write-back commit pushed, if any, and what it holds; or that Git already held it all. */
function writtenBack(run: DriftRun, { colours }: Output): string[] {
  if (run.commit === null) {
    // An `unchanged` write-back (the values were committed before): the drift shown above is
    // settled though nothing was committed, which is why the run exits 0.
    const n = run.writtenBack.length;
    return n === 0 ? [] : [`already in Git: ${n} object${n === 1 ? '' : 's'}; nothing to commit`];
  }
  return [
    `${colours.green('written back')} to Git: ${run.writtenBack.join(', ')} in ${shortRevision(run.commit)}`,
  ];
}

/**
 * Write-backs refused, in conflict or failed, each prefixed with its subject
 * unless it names it already (the drift check's refusals do).
 */
function writeBackErrors(run: DriftRun, { colours }: Output): string[] {
  return run.writeBackErrors.map(({ subject, error }) =>
    colours.red(error.startsWith(`${subject}: `) ? error : `${subject}: ${error}`),
  );
}

async function checkOne(
  ctx: LocalContext,
  track: Track,
  detectOnly: boolean,
  signal: AbortSignal | undefined,
): Promise<DriftRun> {
  const leftInPlace =
    track.drift === 'detect'
      ? ('drift: detect' as const)
      : detectOnly
        ? ('--detect-only' as const)
        : undefined;
  try {
    const cluster = await ctx.cluster(track);
    const result = await reconcileDrift(
      track,
      { type: 'drift', track: track.name, detectOnly, trigger: 'manual' },
      {
        cluster,
        artifacts: ctx.artifacts,
        state: ctx.state,
        ...(ctx.readSecret === undefined ? {} : { readSecret: ctx.readSecret }),
        ...(signal === undefined ? {} : { signal }),
      },
    );
    const written = await writeBack(ctx, track, result, signal);
    return { ...result, ...written, ...(leftInPlace === undefined ? {} : { leftInPlace }) };
  } catch (error) {
    // The check could not run (cluster unreachable, another job holds the track): report the
    // track as failed and go on, so one bad cluster does not hide the others' drift.
    return {
      ...noDriftFound(track.name, null),
      writtenBack: [],
      commit: null,
      writeBackErrors: [],
      error: messageOf(error),
    };
  }
}

/** The write-back the check asks for, run here: the CLI holds the Git credentials too. */
async function writeBack(
  ctx: LocalContext,
  track: Track,
  result: DriftResult,
  signal: AbortSignal | undefined,
): Promise<Pick<DriftRun, 'writtenBack' | 'commit' | 'writeBackErrors'>> {
  const refused = result.writeBackRefused.map((r) => ({ subject: r.subject, error: r.error }));
  if (result.writeBack.length === 0 || result.revision === null) {
    return { writtenBack: [], commit: null, writeBackErrors: refused };
  }
  let done: WriteBackResult;
  try {
    done = await writeBackTrack(
      track,
      {
        type: 'writeBack',
        track: track.name,
        revision: result.revision,
        changes: result.writeBack,
        ...(refused.length > 0 ? { refused } : {}),
        trigger: 'manual',
      },
      { source: await ctx.source(), state: ctx.state, ...(signal === undefined ? {} : { signal }) },
    );
  } catch (error) {
    if (!(error instanceof InterruptedError)) throw error;
    // Stopped before it pushed (Ctrl-C): the check's report stands, with why nothing went to Git;
    // the next check finds the change again.
    return {
      writtenBack: [],
      commit: null,
      writeBackErrors: [...refused, { subject: track.name, error: error.message }],
    };
  }
  return {
    writtenBack: done.writtenBack,
    commit: done.commit,
    writeBackErrors: [
      // The check's refusals included (writeBackTrack records them with its own).
      ...done.refused,
      // A conflict over the whole object or file has no path.
      ...done.conflicts.map((c) => ({
        subject: c.subject,
        error: c.path === '' ? c.message : `${c.path}: ${c.message}`,
      })),
      ...(done.error === undefined ? [] : [{ subject: track.name, error: done.error }]),
    ],
  };
}

/**
 * The tracks to check. A suspended track is left alone unless only asked to
 * look (`--detect-only`): correcting it would change a cluster someone froze.
 */
async function selectTracks(
  ctx: LocalContext,
  track: string | undefined,
  configFile: string,
  detectOnly: boolean,
  output: Output,
): Promise<Track[]> {
  if (track !== undefined) {
    const selected = findTrack(ctx.config, track, configFile);
    const suspended = detectOnly ? undefined : await suspensionOf(selected, ctx.state, configFile);
    if (suspended !== undefined) {
      throw new UsageError(
        `track "${selected.name}" is suspended (${suspended}); nothing was checked ` +
          '(--detect-only checks it without changing anything)',
      );
    }
    return [selected];
  }
  const selected: Track[] = [];
  for (const t of inDependencyOrder(ctx.config.tracks)) {
    const suspended = detectOnly ? undefined : await suspensionOf(t, ctx.state, configFile);
    if (suspended !== undefined) output.log(`${t.name}: suspended (${suspended}); skipped`);
    else selected.push(t);
  }
  return selected;
}

export const driftCommand: CommandHandler = async (ctx, line, output, signal) => {
  const tracks = await selectTracks(ctx, line.track, line.config, line.detectOnly, output);
  const runs: DriftRun[] = [];
  for (const track of tracks) {
    const run = await checkOne(ctx, track, line.detectOnly, signal);
    runs.push(run);
    if (line.output === 'text') output.print(formatDriftRun(run, output));
  }
  if (line.output === 'json') {
    const documents = runs.map(driftJson);
    output.json(line.track !== undefined ? documents[0] : documents);
  } else if (tracks.length === 0) {
    output.print(`${line.config} has no tracks to check`);
  }
  return driftExitCode(runs);
};
