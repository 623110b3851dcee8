/**
 * The write-back job (two-way sync, `syncTo: git`), run where the Git
 * credentials are (fetch): the changes a drift check found in the cluster
 * are written into the files the objects came from (source/edit-manifests.ts)
 * and committed to the track's branch as one commit, pushed with the
 * track's credentials — retried on the new head when someone pushed first,
 * never forced. The commit's own webhook then applies a revision equal to
 * the cluster: nothing changes, so nothing loops.
 *
 * What a write-back wrote is kept in the track's state until the revision
 * compared with holds it (track-state.ts unsyncedWriteBacks): a check that
 * finds the cluster changed again before that sync compares it with the
 * revision before, and Git holding the earlier write-back's values is then
 * no change made in Git — the newer value is written, not lost. Each write
 * keeps what it replaced, and counts only while the revision compared with
 * still holds that: once someone's commit on top of it is synced, the same
 * value pushed again by a person is theirs, and Git wins.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Track } from '../config/types.ts';
import { DriftlessError, InterruptedError, messageOf } from '../errors.ts';
import type { ManifestEdits, OwnWrites, WriteBackConflict } from '../source/edit-manifests.ts';
import type { CommitRequest, GitSource } from '../source/ports.ts';
import type { StateStore } from '../store/ports.ts';
import type { WriteBackJob } from './jobs.ts';
import {
  readTrackState,
  unsyncedWriteBacks,
  updateTrackState,
  type UnsyncedWriteBack,
} from './track-state.ts';

export interface WriteBackResult {
  readonly track: string;
  /** The revision the drift check compared with. */
  readonly revision: string;
  /**
   * `written-back`, `unchanged` (Git already had it all), `failed`, or `refused` (a drift check
   * that could write back none of what it found: no job ran).
   */
  readonly result: 'written-back' | 'unchanged' | 'failed' | 'refused';
  /** The commit pushed, or null. */
  readonly commit: string | null;
  /** Subjects whose changes are in Git now. */
  readonly writtenBack: string[];
  /** Fields Git changed meanwhile: Git wins, and they are reported. */
  readonly conflicts: WriteBackConflict[];
  readonly refused: { readonly subject: string; readonly error: string }[];
  readonly error?: string;
}

export interface WriteBackDeps {
  readonly source: GitSource;
  readonly state: StateStore;
  readonly now?: () => Date;
  /**
   * Aborted when the caller is asked to stop (Ctrl-C, a function's deadline, `serve`
   * stopping): the clone or push under way is cancelled, nothing more is sent, and the
   * write-back ends with its InterruptedError, recording nothing.
   */
  readonly signal?: AbortSignal;
}

/** The track cannot be written back at all. */
export class WriteBackError extends DriftlessError {
  readonly code = 'WRITE_BACK';
}

const DEFAULT_AUTHOR = { name: 'Driftless', email: 'driftless@localhost' };

/** The branch write-backs go to: `writeBack.branch`, else the track's reference. */
export function writeBackBranch(track: Pick<Track, 'reference' | 'writeBack'>): string | undefined {
  const branch = track.writeBack?.branch ?? track.reference;
  return branch?.replace(/^refs\/heads\//, '');
}

/** Runs a write-back job; see the module comment. */
export async function writeBackTrack(
  track: Track,
  job: WriteBackJob,
  deps: WriteBackDeps,
): Promise<WriteBackResult> {
  const now = deps.now ?? (() => new Date());
  const base = { track: track.name, revision: job.revision };
  const branch = writeBackBranch(track);
  let edits: ManifestEdits = {
    files: new Map(),
    written: [],
    wrote: { fields: [], files: [] },
    conflicts: [],
    refused: [],
  };
  // What the drift check refused comes first, then what editing the files refuses.
  const refused = () => [...(job.refused ?? []), ...edits.refused];
  let result: WriteBackResult;
  try {
    if (branch === undefined || deps.source.commit === undefined) {
      throw new WriteBackError(
        `track "${track.name}": no branch to write back to (writeBack.branch), or a source that cannot push`,
      );
    }
    const earlier = ownWritesOf(
      unsyncedWriteBacks(
        (await readTrackState(deps.state, track.name)).unsyncedWriteBacks,
        job.revision,
      ),
    );
    const subjects = job.changes.map((change) => change.subject);
    const request: CommitRequest = {
      branch,
      author: track.writeBack?.author ?? DEFAULT_AUTHOR,
      message: [
        `driftless: write back ${subjects.length === 1 ? subjects[0] : `${subjects.length} objects`} from the cluster`,
        '',
        ...subjects.map((subject) => `- ${subject}`),
        '',
        `Track: ${track.name}`,
        `Compared with: ${job.revision}`,
      ].join('\n'),
      edit: async (read) => {
        // Loaded on the first write-back: the YAML library is for this alone.
        const { editManifests } = await import('../source/edit-manifests.ts');
        const files = new Map<string, string | undefined>();
        for (const change of job.changes) {
          if (!files.has(change.file)) files.set(change.file, await read(change.file));
        }
        edits = editManifests((file) => files.get(file), job.changes, earlier);
        return edits.files;
      },
    };
    const pushed = await deps.source.commit(track, request, { signal: deps.signal });
    result = {
      ...base,
      result: pushed.commit === null ? 'unchanged' : 'written-back',
      commit: pushed.commit,
      writtenBack: edits.written,
      conflicts: edits.conflicts,
      refused: refused(),
    };
  } catch (error) {
    // Stopped, not failed: nothing is recorded; the job's retry (AWS) or the next drift check
    // finds the change again.
    if (error instanceof InterruptedError) throw error;
    result = {
      ...base,
      result: 'failed',
      commit: null,
      writtenBack: [],
      conflicts: edits.conflicts,
      refused: refused(),
      error: messageOf(error),
    };
  }
  await recordWriteBack(deps.state, result, now());
  if (result.commit !== null) {
    await recordUnsynced(deps.state, track.name, job.revision, {
      commit: result.commit,
      ...edits.wrote,
    });
  }
  return result;
}

/** What `writeBacks` wrote, oldest first. */
function ownWritesOf(writeBacks: readonly UnsyncedWriteBack[]): OwnWrites {
  return {
    fields: writeBacks.flatMap((writeBack) => writeBack.fields),
    files: writeBacks.flatMap((writeBack) => writeBack.files),
  };
}

/**
 * Keeps `pushed` in the track's state until a sync applies it; those the compared `revision`
 * holds already are dropped.
 */
function recordUnsynced(
  state: StateStore,
  track: string,
  revision: string,
  pushed: UnsyncedWriteBack,
): Promise<unknown> {
  return updateTrackState(state, track, (current) => {
    // Bounded: a write-back commit that reaches the cluster only inside a later commit (someone
    // pushed on top before the sync) is never the compared revision, so nothing settles it
    // (though it no longer counts as Driftless' own once that commit is compared with).
    current.unsyncedWriteBacks = [
      ...unsyncedWriteBacks(current.unsyncedWriteBacks, revision),
      { ...pushed, comparedWith: revision },
    ].slice(-MAX_UNSYNCED_WRITE_BACKS);
  });
}

/** The history entry of a write-back: see docs/cli.md (history). */
function recordWriteBack(state: StateStore, result: WriteBackResult, at: Date): Promise<void> {
  return state.appendHistory(result.track, {
    revision: result.commit ?? result.revision,
    appliedAt: at.toISOString(),
    result: result.result,
    trigger: 'write-back',
    writtenBack: result.writtenBack,
    ...(result.conflicts.length > 0 ? { conflicts: result.conflicts } : {}),
    ...(result.refused.length > 0 ? { refused: result.refused } : {}),
    ...(result.error === undefined ? {} : { error: result.error }),
  });
}

/** How many of a track's newest history entries are searched for its newest write-back entry. */
const REFUSAL_LOOKBACK = 50;

/** The most unsynced write-backs kept: older ones are forgotten (their values then count as Git's). */
const MAX_UNSYNCED_WRITE_BACKS = 20;

/**
 * Records a drift check that found changes to write back and had to refuse them all (a Secret
 * in plain text, an object kustomize renders): no write-back job follows to record them. A
 * refusal stays until someone acts, and each check finds it again: the same refusals of the
 * same revision as the track's newest write-back entry (among its last
 * {@link REFUSAL_LOOKBACK} entries) are not recorded again.
 */
export async function recordRefusedWriteBack(
  track: string,
  revision: string,
  refused: WriteBackResult['refused'],
  deps: Pick<WriteBackDeps, 'state' | 'now'>,
): Promise<void> {
  // The newest write-back entry, not the newest entry: each interval's sync and drift check
  // record theirs between two checks that refuse the same.
  const newest = (await deps.state.listHistory(track, REFUSAL_LOOKBACK)).find(
    (entry) => entry.trigger === 'write-back',
  );
  if (
    newest?.trigger === 'write-back' &&
    newest.result === 'refused' &&
    newest.revision === revision &&
    isDeepStrictEqual(newest['refused'], refused)
  ) {
    return;
  }
  const result: WriteBackResult = {
    track,
    revision,
    result: 'refused',
    commit: null,
    writtenBack: [],
    conflicts: [],
    refused,
    // What `driftless history` shows in its ERROR column.
    error: `nothing written back: ${refused.map((entry) => entry.error).join('; ')}`,
  };
  await recordWriteBack(deps.state, result, (deps.now ?? (() => new Date()))());
}
