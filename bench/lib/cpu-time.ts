/**
 * CPU time of processes, from /proc: to show where the machine's cores went
 * while something was measured (a server-bound figure shows its server's
 * processes using most of the cores).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** Clock ticks per second, the unit of /proc/<pid>/stat's CPU times. */
let ticksPerSecond: number | undefined;

function clockTicks(): number {
  ticksPerSecond ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
  return ticksPerSecond;
}

/** User plus system CPU time of process `pid` so far, in milliseconds. */
export function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces) in parentheses: utime is the 14th
  // field of the line, stime the 15th, i.e. the 12th and 13th after ") ".
  const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicks();
}

/** This process' own CPU time so far (all threads), in milliseconds. */
export function ownCpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/**
 * Runs `work` and reports how many cores, on average over its wall time,
 * the processes `pids` and this process used meanwhile.
 */
export async function coresDuring<T>(
  pids: readonly number[],
  work: () => Promise<T>,
): Promise<{ value: T; ms: number; othersCores: number; ownCores: number }> {
  const othersBefore = pids.reduce((sum, pid) => sum + processCpuMs(pid), 0);
  const ownBefore = ownCpuMs();
  const start = performance.now();
  const value = await work();
  const ms = performance.now() - start;
  const others = pids.reduce((sum, pid) => sum + processCpuMs(pid), 0) - othersBefore;
  const own = ownCpuMs() - ownBefore;
  return { value, ms, othersCores: others / ms, ownCores: own / ms };
}
