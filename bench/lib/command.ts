/** Runs a peer command (kubectl, git) and reports how it ended, without a shell. */
import { spawn } from 'node:child_process';

export interface CommandResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface CommandOptions {
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
  /** Exit codes that are not failures; default [0]. */
  readonly okCodes?: readonly number[];
}

/** Runs `command args`; rejects with its stderr when it exits with a code not in `okCodes`. */
export function runCommand(
  command: string,
  args: readonly string[],
  options: CommandOptions = {},
): Promise<CommandResult> {
  const okCodes = options.okCodes ?? [0];
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      env: options.env ?? process.env,
      cwd: options.cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      const result = {
        code,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      };
      if (code !== null && okCodes.includes(code)) resolve(result);
      else
        reject(
          new Error(`${command} ${args.join(' ')} exited ${code}:\n${result.stderr.slice(-2000)}`),
        );
    });
  });
}
