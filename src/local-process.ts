/**
 * Which process holds a track's apply lease, precisely enough to tell later, from another
 * process, that it is gone: a `driftless sync` killed with `kill -9` (or lost with its
 * terminal) left the lease held until it lapsed (twice the track's timeout plus a minute) —
 * 5 to 21 minutes in which every sync, rollback and drift check of the track was refused,
 * though nothing ran. A process that can see the holder's process table (same kernel boot,
 * same PID namespace) and finds no such process takes the lease over at once.
 *
 * The kernel's boot id and the PID namespace make "the same process table" exact: a pid
 * means nothing on another machine, in another container on the same machine (its own PID
 * namespace) or after a reboot. Off Linux, where /proc cannot be read, and in Lambda, no
 * identity is recorded and the lease only lapses, as before.
 * A reused pid reads as alive: the safe way round (the lease lapses as before).
 */
import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';

export interface ProcessIdentity {
  /** The Linux kernel's boot id: another value, another machine or another boot. */
  readonly boot: string;
  /** The PID namespace (`pid:[4026531836]`): another value, another process table. */
  readonly pidNamespace: string;
  readonly pid: number;
  /** For people asking who holds a track; not part of the match. */
  readonly host: string;
}

let current: ProcessIdentity | null | undefined;

/**
 * This process, or undefined where the kernel does not say (not Linux, no /proc) — and in a
 * Lambda sandbox, where nothing is gained (a sandbox runs one job at a time, in one process)
 * and a VM restored from a snapshot could share another's boot id and pids.
 */
export function currentProcess(): ProcessIdentity | undefined {
  if (current === undefined) {
    current = process.env['AWS_LAMBDA_FUNCTION_NAME'] ? null : readIdentity(process.pid);
  }
  return current ?? undefined;
}

function readIdentity(pid: number): ProcessIdentity | null {
  try {
    return {
      boot: readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim(),
      pidNamespace: readlinkSync('/proc/self/ns/pid'),
      pid,
      host: hostname(),
    };
  } catch {
    return null;
  }
}

/** What this process can tell of `holder`'s process: `gone`, `running`, or `unknown`. */
export type HolderSeen = 'gone' | 'running' | 'unknown';

/**
 * `gone` only when `holder` is certainly gone: it ran where this process can see its process
 * table, and no process has its pid any more; `running` when such a process exists there (a
 * reused pid too: the safe way round); `unknown` for anything else (another machine, another
 * namespace, no identity either side, this very process).
 */
export function seeHolder(holder: ProcessIdentity | undefined): HolderSeen {
  const here = currentProcess();
  if (holder === undefined || here === undefined) return 'unknown';
  if (holder.boot !== here.boot || holder.pidNamespace !== here.pidNamespace) return 'unknown';
  // Only a real pid: 0 and negative numbers name process groups.
  if (!Number.isInteger(holder.pid) || holder.pid <= 0 || holder.pid === here.pid) {
    return 'unknown';
  }
  try {
    // Signal 0 sends nothing: it only asks whether the process exists.
    process.kill(holder.pid, 0);
    return 'running';
  } catch (error) {
    // EPERM: it exists, owned by someone else.
    return (error as NodeJS.ErrnoException).code === 'ESRCH' ? 'gone' : 'running';
  }
}

/** True only when `holder` is certainly gone ({@link seeHolder}). */
export function isGoneHere(holder: ProcessIdentity | undefined): boolean {
  return seeHolder(holder) === 'gone';
}
