/**
 * Small process helpers shared by the harness: free loopback ports, child
 * processes whose output is kept for error messages, and polling until ready.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { closeSync, createWriteStream, openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** Asks the kernel for a free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('could not read the port of a probe server'));
      });
    });
  });
}

/** A started child process with the tail of its output, for error messages. */
export interface ManagedProcess {
  readonly name: string;
  readonly child: ChildProcess;
  /** The last lines the process printed (stdout and stderr interleaved). */
  outputTail(): string;
  /** Resolves once the process has exited. */
  readonly exited: Promise<number | null>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
}

export interface StartOptions extends Omit<SpawnOptions, 'stdio'> {
  /** Also append everything the process prints to this file. */
  logFile?: string;
  /** Start in its own process group and let it outlive this process (cluster:up). */
  detached?: boolean;
}

const TAIL_BYTES = 8192;

/** Spawns `command` and keeps its output; throws if it cannot be spawned at all. */
export function startProcess(
  name: string,
  command: string,
  args: readonly string[],
  options: StartOptions = {},
): ManagedProcess {
  const { logFile, detached, ...spawnOptions } = options;
  if (detached) {
    // A detached process outlives us, so it cannot write into our pipes:
    // it writes straight into its log file, and the tail is read from there.
    if (!logFile) throw new Error(`${name}: a detached process needs a logFile`);
    const fd = openSync(logFile, 'a');
    const child = spawn(command, args, {
      ...spawnOptions,
      detached: true,
      stdio: ['ignore', fd, fd],
    });
    closeSync(fd);
    child.unref();
    return manage(name, child, () => readTail(logFile));
  }
  const log = logFile ? createWriteStream(logFile, { flags: 'a' }) : undefined;
  const child = spawn(command, args, { ...spawnOptions, stdio: ['ignore', 'pipe', 'pipe'] });
  let tail = '';
  const keep = (chunk: Buffer): void => {
    tail = (tail + chunk.toString('utf8')).slice(-TAIL_BYTES);
    log?.write(chunk);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  child.on('exit', () => log?.end());
  return manage(name, child, () => tail);
}

function readTail(file: string): string {
  try {
    return readFileSync(file, 'utf8').slice(-TAIL_BYTES);
  } catch {
    return '';
  }
}

function manage(name: string, child: ChildProcess, outputTail: () => string): ManagedProcess {
  let spawnError = '';
  const exited = new Promise<number | null>((resolve) => {
    child.on('exit', (code) => resolve(code));
    child.on('error', (error) => {
      spawnError = `\nspawn error: ${error.message}`;
      resolve(null);
    });
  });
  return {
    name,
    child,
    outputTail: () => outputTail() + spawnError,
    exited,
    async stop(graceMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * Polls `probe` until it returns true, the process dies, or `timeoutMs` passes.
 * Throws with the process' last output so a failure to start explains itself.
 */
export async function waitUntilReady(
  process: ManagedProcess,
  probe: () => Promise<boolean>,
  timeoutMs: number,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  let died = false;
  void process.exited.then(() => {
    died = true;
  });
  while (performance.now() < deadline) {
    if (died) {
      throw new Error(
        `${process.name} exited (code ${process.child.exitCode}) before it was ready:\n${process.outputTail()}`,
      );
    }
    if (await probe().catch(() => false)) return;
    await sleep(100);
  }
  throw new Error(`${process.name} was not ready within ${timeoutMs} ms:\n${process.outputTail()}`);
}
