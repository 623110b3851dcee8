/**
 * Runs a renderer binary (kustomize, helm) the way a revision deserves: as
 * untrusted input. The child gets a minimal environment (no credentials of
 * ours, no Git, no proxy that works), a time limit, and an output limit; its
 * stderr is kept for the error message and nothing else.
 */
import { spawn } from 'node:child_process';
import { RendererFailedError, RendererLimitError } from './errors.ts';
import { interruptionOf, type InterruptedError } from '../errors.ts';

export interface ToolRun {
  /** `kustomize` or `helm`: names the tool in errors. */
  readonly tool: string;
  readonly binary: string;
  readonly args: readonly string[];
  readonly cwd: string;
  /** The child's environment (with Go runtime settings added): nothing of this process's leaks in. */
  readonly env: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  readonly maxOutputBytes: number;
  /** Rewrites a message (stderr) before it reaches an error, e.g. to drop temporary paths. */
  readonly describe?: (text: string) => string;
  /**
   * Aborted when the caller is asked to stop (Ctrl-C): the tool and what it started are killed
   * and the run rejects with the InterruptedError. The tool runs in a process group of its own,
   * so a terminal's Ctrl-C alone does not reach it.
   */
  readonly signal?: AbortSignal;
}

/** What a renderer allowed on the network needs of this process's environment: proxies and CA bundle. */
const NETWORK_VARIABLES = [
  'HTTPS_PROXY',
  'HTTP_PROXY',
  'NO_PROXY',
  'https_proxy',
  'http_proxy',
  'no_proxy',
  'SSL_CERT_FILE',
];

/** The proxy and CA variables set in this process, for a renderer allowed on the network. */
export function networkEnvironment(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const picked: Record<string, string> = {};
  for (const name of NETWORK_VARIABLES) {
    const value = env[name];
    if (value !== undefined) picked[name] = value;
  }
  return picked;
}

/**
 * For a renderer that must not reach the network: a proxy nobody listens on,
 * so any connection it attempts fails at once.
 */
export const NO_NETWORK: Readonly<Record<string, string>> = {
  HTTPS_PROXY: 'http://127.0.0.1:9',
  HTTP_PROXY: 'http://127.0.0.1:9',
  NO_PROXY: '',
};

/**
 * Go's garbage collector, tuned for a short-lived renderer: no collection
 * until the heap nears the limit. A typical render finishes before that
 * (about 8% faster for a 200-object chart); a huge one is still collected,
 * well inside the fetch function's memory.
 */
const GO_RUNTIME: Readonly<Record<string, string>> = { GOGC: 'off', GOMEMLIMIT: '384MiB' };

/** Stderr kept for messages: the start of a failure says what failed. */
const MAX_STDERR_BYTES = 64 * 1024;

/** Runs the tool; resolves with its stdout, or rejects with a typed error naming what went wrong. */
export function runTool(run: ToolRun): Promise<Buffer> {
  const describe = run.describe ?? ((text: string) => text);
  return new Promise((resolve, reject) => {
    const child = spawn(run.binary, run.args, {
      cwd: run.cwd,
      env: { ...GO_RUNTIME, ...run.env },
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group, so a timeout also ends what it started (git, plugins).
      detached: true,
    });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let stdoutBytes = 0;
    let stderrBytes = 0;
    let stopped: RendererLimitError | InterruptedError | undefined;
    const stop = (error: RendererLimitError | InterruptedError): void => {
      if (stopped) return;
      stopped = error;
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    const limit =
      run.timeoutMs >= 1000 ? `${Math.round(run.timeoutMs / 1000)} s` : `${run.timeoutMs} ms`;
    const timer = setTimeout(
      () => stop(new RendererLimitError(run.tool, `did not finish within ${limit}`)),
      run.timeoutMs,
    );
    const onAbort = (): void => stop(interruptionOf(run.signal)!);
    if (run.signal?.aborted) onAbort();
    else run.signal?.addEventListener('abort', onAbort, { once: true });
    const settled = (): void => {
      clearTimeout(timer);
      run.signal?.removeEventListener('abort', onAbort);
    };
    child.stdout.on('data', (chunk: Buffer) => {
      stdoutBytes += chunk.byteLength;
      if (stdoutBytes > run.maxOutputBytes) {
        stop(
          new RendererLimitError(
            run.tool,
            `output exceeds the limit of ${run.maxOutputBytes} bytes per revision`,
          ),
        );
        return;
      }
      stdout.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderrBytes < MAX_STDERR_BYTES) stderr.push(chunk);
      stderrBytes += chunk.byteLength;
    });
    child.on('error', (error) => {
      settled();
      reject(
        new RendererFailedError(run.tool, describe(`cannot run ${run.binary}: ${error.message}`)),
      );
    });
    child.on('close', (code, signal) => {
      settled();
      if (stopped) return reject(stopped);
      if (code === 0) return resolve(Buffer.concat(stdout));
      const text = Buffer.concat(stderr).toString('utf8').trim();
      const status = signal ? `was stopped by ${signal}` : `exited with ${code}`;
      reject(new RendererFailedError(run.tool, describe(text === '' ? status : text)));
    });
  });
}
