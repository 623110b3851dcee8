/**
 * One commit pushed to a branch, for two-way sync's write-back: a shallow
 * clone of the branch in a fresh directory, the edits, a commit, a push with
 * the track's credentials (over HTTPS, or over SSH through
 * SshTransport.httpClient). A push refused because the branch moved (someone
 * pushed first) is retried on the new head, the edits made again from the
 * files as they are there; nothing is ever force-pushed. isomorphic-git does
 * this whole job (clone, commit, push); the hand-written reader is for the
 * fast read paths only.
 *
 * Asked to stop (the job's signal: Ctrl-C, a function's deadline, `serve`
 * stopping), the request under way is cancelled by the remote's client and
 * nothing more is sent: the call fails with the signal's InterruptedError.
 * A push whose answer was cut off may still have moved the branch; a later
 * write-back (the job's retry, the next drift check) then finds Git holding
 * the change already.
 *
 * A failure is reported as a push (WriteBackPushError, git-errors.ts) naming
 * the repository and the branch: a missing branch, credentials that may read
 * but not write, a host that refused or could not be reached.
 */
import * as fs from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import git, { type HttpClient } from 'isomorphic-git';
import { throwIfInterrupted } from '../../errors.ts';
import type { CommitRequest, CommitResult } from '../ports.ts';
import { branchMoved, translatePushError, type PushErrorContext } from './git-errors.ts';

/** Pushes refused because the branch moved: tried again this often on the new head. */
const PUSH_ATTEMPTS = 5;

/** Where to push: the repository's HTTP(S) URL and client, or the SSH adapter's. */
export interface PushRemote {
  readonly url: string;
  readonly http: HttpClient;
  readonly onAuth?: () => { username?: string; password?: string };
}

/**
 * The repository as people know it, for messages: the SSH adapter's URL
 * carries the SSH location encoded in its path (index.ts); an HTTPS URL
 * never holds credentials (they go through `onAuth`), and any user part is
 * dropped all the same.
 */
function shownRepository(url: string): string {
  const ssh = /^https:\/\/ssh\.invalid\/(.+)$/.exec(url);
  if (ssh) return decodeURIComponent(ssh[1]!);
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, '$1');
}

/**
 * One exchange with the remote, not begun once `signal` is aborted; when it fails after the
 * abort, with the signal's InterruptedError rather than the cancelled request's own error.
 */
async function exchange<T>(signal: AbortSignal | undefined, step: () => Promise<T>): Promise<T> {
  throwIfInterrupted(signal);
  try {
    return await step();
  } catch (error) {
    throwIfInterrupted(signal);
    throw error;
  }
}

/** Commits the request's edits to its branch and pushes them; see the module comment. */
export async function pushCommit(
  target: PushRemote,
  request: CommitRequest,
  cacheDir: string,
  signal?: AbortSignal,
): Promise<CommitResult> {
  const remote = {
    fs,
    http: target.http,
    url: target.url,
    ...(target.onAuth ? { onAuth: target.onAuth } : {}),
  };
  const ref = request.branch;
  const context: PushErrorContext = {
    repository: shownRepository(target.url),
    branch: ref,
    authenticated: target.onAuth !== undefined,
  };
  /** A read of the branch (clone, fetch), its failure worded as the push's. */
  const readBranch = async (step: () => Promise<unknown>): Promise<void> => {
    try {
      await exchange(signal, step);
    } catch (error) {
      throw translatePushError(error, context, 'read');
    }
  };

  await mkdir(cacheDir, { recursive: true });
  const dir = await mkdtemp(join(cacheDir, 'write-back-'));
  try {
    await readBranch(() =>
      git.clone({ ...remote, dir, ref, singleBranch: true, depth: 1, noTags: true }),
    );
    for (let attempt = 1; ; attempt++) {
      const read = async (path: string): Promise<string | undefined> =>
        readFile(join(dir, path), 'utf8').catch(() => undefined);
      const files = await request.edit(read);
      if (files.size === 0) return { commit: null, attempts: attempt };
      for (const [path, content] of files) {
        await mkdir(dirname(join(dir, path)), { recursive: true });
        await writeFile(join(dir, path), content);
        await git.add({ fs, dir, filepath: path });
      }
      const commit = await git.commit({
        fs,
        dir,
        message: request.message,
        author: { name: request.author.name, email: request.author.email },
      });
      try {
        await exchange(signal, () => git.push({ ...remote, dir, ref, remoteRef: ref }));
        return { commit, attempts: attempt };
      } catch (error) {
        if (!branchMoved(error) || attempt >= PUSH_ATTEMPTS) {
          throw translatePushError(error, context, 'push');
        }
        // Someone pushed first: start again from their head.
        await readBranch(() =>
          git.fetch({ ...remote, dir, ref, singleBranch: true, depth: 1, tags: false }),
        );
        const head = await git.resolveRef({ fs, dir, ref: `refs/remotes/origin/${ref}` });
        await git.writeRef({ fs, dir, ref: `refs/heads/${ref}`, value: head, force: true });
        await git.checkout({ fs, dir, ref, force: true });
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
