/**
 * A lock file for short critical sections on a local filesystem, valid across
 * processes. Node has no flock(), so the lock is a file created with link(),
 * which either creates the name or fails with EEXIST — atomically, with the
 * holder's details already inside (a crash can never leave an empty lock).
 *
 * A lock whose holder died (same host, process gone) or that is older than
 * `staleMs` is broken. Breaking renames the lock to a private name first and
 * checks it moved the stale one; holding the lock for milliseconds, as the
 * fs store does, keeps the lease far from expiring under a live holder.
 * The lock file's steps are synchronous calls, as the fs store's are (it says
 * why); only the wait between attempts yields.
 */
import { randomBytes } from 'node:crypto';
import { linkSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { StoreUnavailableError } from './errors.ts';

/** Bounds of {@link withFileLock}. */
export interface FileLockOptions {
  /** Give up (StoreUnavailableError) when the lock was not taken within this time. Default 10 s. */
  readonly timeoutMs?: number;
  /** A lock older than this is broken whoever holds it. Default 30 s. */
  readonly staleMs?: number;
}

interface LockRecord {
  readonly token: string;
  readonly pid: number;
  readonly host: string;
  /** ms since the epoch. */
  readonly at: number;
}

function errorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error
    ? String((error as { code: unknown }).code)
    : undefined;
}

function readLock(path: string): LockRecord | undefined {
  try {
    const parsed: unknown = JSON.parse(readFileSync(path, 'utf8'));
    if (typeof parsed === 'object' && parsed !== null && 'token' in parsed) {
      return parsed as LockRecord;
    }
    // Written by something else: unreadable, so only its age could tell.
    return { token: '', pid: -1, host: '', at: 0 };
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    if (error instanceof SyntaxError) return { token: '', pid: -1, host: '', at: 0 };
    throw error;
  }
}

function processIsGone(pid: number): boolean {
  if (pid <= 0) return true;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return errorCode(error) === 'ESRCH';
  }
}

function isStale(record: LockRecord, staleMs: number): boolean {
  if (Date.now() - record.at > staleMs) return true;
  return record.host === hostname() && record.pid !== process.pid && processIsGone(record.pid);
}

/** Removes the lock at `path` if it is still the stale one read before. */
function breakLock(path: string, stale: LockRecord): void {
  const moved = `${path}.broken-${randomBytes(6).toString('hex')}`;
  try {
    renameSync(path, moved);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return; // someone else broke or released it
    throw error;
  }
  const record = readLock(moved);
  if (record !== undefined && record.token !== stale.token) {
    // Between reading and renaming, the stale lock was replaced by a live
    // one: put that back. If a third process took the free name meanwhile,
    // the live holder's lease is the only guard left (documented above).
    ignoreFailure(() => linkSync(moved, path));
  }
  ignoreFailure(() => unlinkSync(moved));
}

/** Runs a clean-up step whose failure changes nothing for the caller. */
export function ignoreFailure(step: () => void): void {
  try {
    step();
  } catch {
    // a lock waits for a stale-lock check; a temporary file stays, skipped by listings
  }
}

/**
 * Runs `critical` while holding the lock file `path` (its directory must
 * exist). Throws StoreUnavailableError when the lock cannot be taken within
 * the timeout; errors of `critical` pass through, and the lock is released
 * in every case.
 */
export async function withFileLock<T>(
  path: string,
  critical: () => Promise<T>,
  options: FileLockOptions = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const staleMs = options.staleMs ?? 30_000;
  const record: LockRecord = {
    token: randomBytes(12).toString('hex'),
    pid: process.pid,
    host: hostname(),
    at: Date.now(),
  };
  const candidate = `${path}.${record.token}`;
  try {
    // How long to wait, by the monotonic clock; the lock's own `at` is wall time, read by others.
    const deadline = performance.now() + timeoutMs;
    for (let attempt = 0; ; attempt++) {
      // Stamped afresh each attempt: the lease runs from taking the lock, not from queuing.
      writeFileSync(candidate, JSON.stringify({ ...record, at: Date.now() }));
      try {
        linkSync(candidate, path);
        break;
      } catch (error) {
        if (errorCode(error) !== 'EEXIST') throw error;
      }
      const holder = readLock(path);
      if (holder !== undefined && isStale(holder, staleMs)) {
        breakLock(path, holder);
        continue;
      }
      if (performance.now() >= deadline) {
        throw new StoreUnavailableError(
          `${path}: lock held by process ${holder?.pid ?? '?'} on ${holder?.host ?? '?'} for more than ${timeoutMs} ms`,
        );
      }
      // Jittered backoff: contenders in one process must not retry in lockstep.
      await sleep(1 + Math.random() * Math.min(50, 2 ** attempt));
    }
  } finally {
    ignoreFailure(() => unlinkSync(candidate));
  }

  try {
    return await critical();
  } finally {
    let holder: LockRecord | undefined;
    try {
      holder = readLock(path);
    } catch {
      holder = undefined; // unreadable: not ours to remove
    }
    if (holder?.token === record.token) ignoreFailure(() => unlinkSync(path));
  }
}
