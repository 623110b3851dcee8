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
