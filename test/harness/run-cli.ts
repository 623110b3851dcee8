/**
 * The `driftless` command run in this process over a context of the test's
 * own (store, fakes or the test cluster), its output captured.
 */
import { runCli } from '../../src/cli/main.ts';
import type { LocalContext } from '../../src/sync/local-context.ts';

export interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** A `driftless(...args)` that opens `context()` for each run, with no environment. */
export function cliOver(context: () => LocalContext): (...args: string[]) => Promise<CliRun> {
  return async (...args) => {
    let stdout = '';
    let stderr = '';
    const code = await runCli(args, {
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: (text: string) => (stderr += text) },
      env: {},
      openLocalContext: async () => context(),
    });
    return { code, stdout, stderr };
  };
}

/** What `driftless status <args> -o json` prints, parsed; the command must exit 0. */
export async function statusJsonOf(
  driftless: (...args: string[]) => Promise<CliRun>,
  ...args: string[]
): Promise<unknown> {
  const run = await driftless('status', ...args, '-o', 'json');
  if (run.code !== 0) throw new Error(`driftless status exited ${run.code}: ${run.stderr}`);
  return JSON.parse(run.stdout);
}
