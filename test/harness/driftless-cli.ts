/**
 * The driftless command as a child process, as a user runs it: the CLI's
 * source through tsx (what `npm run build` bundles into the installed bin),
 * in a working directory with its own driftless.yaml and environment.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const CLI = fileURLToPath(new URL('../../src/cli/run.ts', import.meta.url));
export const TSX = import.meta.resolve('tsx');

export interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `driftless ...args` in `cwd` with `env`; resolves with its exit code and output. */
export function runDriftless(
  args: readonly string[],
  options: { readonly cwd: string; readonly env: NodeJS.ProcessEnv },
): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', TSX, CLI, ...args],
      { cwd: options.cwd, env: options.env },
      (error, stdout, stderr) => {
        resolve({
          code: error ? (typeof error.code === 'number' ? error.code : -1) : 0,
          stdout,
          stderr,
        });
      },
    );
  });
}
