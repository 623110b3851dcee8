/**
 * A drift check and the write-back it asks for, run one after the other in
 * this process, as `driftless drift` does (and as the apply and fetch
 * functions do through the queue).
 */
import type { Track } from '../../src/config/types.ts';
import type { CommitRequest } from '../../src/source/ports.ts';
import { reconcileDrift, type DriftResult } from '../../src/sync/reconcile-drift.ts';
import type { SyncDeps } from '../../src/sync/sync-track.ts';
import { writeBackTrack, type WriteBackResult } from '../../src/sync/write-back.ts';
import { runGit, type GitRepository } from './git-server.ts';

export async function driftAndWriteBack(
  track: Track,
  deps: SyncDeps,
): Promise<{ drift: DriftResult; written: WriteBackResult }> {
  const drift = await reconcileDrift(track, { type: 'drift', track: track.name }, deps);
  const written = await writeBackTrack(
    track,
    {
      type: 'writeBack',
      track: track.name,
      revision: drift.revision!,
      changes: drift.writeBack,
      trigger: 'manual',
    },
    { source: deps.source, state: deps.state },
  );
  return { drift, written };
}

/**
 * A write-back commit of `files` (path -> content) to `main` that calls `beforeEdit` once the
 * branch is cloned: where a test makes the host fall silent, so that only the push meets it.
 */
export function commitAfter(
  beforeEdit: () => void,
  files: Readonly<Record<string, string>>,
): CommitRequest {
  return {
    branch: 'main',
    author: { name: 'Driftless', email: 'driftless@localhost' },
    message: 'driftless: write back',
    edit: async () => {
      beforeEdit();
      return new Map(Object.entries(files));
    },
  };
}

/** `path` as the repository's `main` holds it: what a write-back committed there. */
export function fileOnMain(repo: GitRepository, path: string): Promise<string> {
  return runGit(['--git-dir', repo.bareDir, 'show', `main:${path}`]);
}

/** The commit the repository's `main` is at. */
export async function headOfMain(repo: GitRepository): Promise<string> {
  return (await runGit(['--git-dir', repo.bareDir, 'rev-parse', 'main'])).trim();
}
