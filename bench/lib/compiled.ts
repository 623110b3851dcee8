/**
 * The project compiled with tsc, the way `npm run build` compiles it, into
 * `.driftless/bench/dist` (git-ignored, and inside the checkout so Node finds
 * node_modules from there) rather than over the project's own `dist/`.
 */
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { REPO_ROOT } from '../../test/harness/testbin.ts';
import { runCommand } from './command.ts';

export const COMPILED_DIR = join(REPO_ROOT, '.driftless', 'bench', 'dist');

let built: Promise<string> | undefined;

/**
 * Compiles once per bench run and returns the compiled CLI entry. Type
 * errors elsewhere in the tree (work in progress) do not stop tsc emitting;
 * only a missing output is a failure.
 */
export function compiledCli(): Promise<string> {
  built ??= (async () => {
    const tsc = join(REPO_ROOT, 'node_modules', '.bin', 'tsc');
    const result = await runCommand(tsc, ['-p', 'tsconfig.build.json', '--outDir', COMPILED_DIR], {
      cwd: REPO_ROOT,
      okCodes: [0, 1, 2],
    });
    const entry = join(COMPILED_DIR, 'src', 'cli', 'run.js');
    await access(entry).catch(() => {
      throw new Error(`tsc produced no ${entry}:\n${result.stdout.slice(-2000)}`);
    });
    if (result.code !== 0) {
      process.stderr.write(
        `# tsc reported errors but emitted the build:\n${result.stdout.slice(-1000)}\n`,
      );
    }
    return entry;
  })();
  return built;
}
