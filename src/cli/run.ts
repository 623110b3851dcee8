/** Process entry of the `driftless` command: runs the CLI and sets the exit code. */
import { runCli } from './main.ts';

// Not a top-level await: the bundle (scripts/build-cli.ts) is CommonJS, which has none.
void runCli(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
  // Once nothing is left to run (output written, connections idle), exit rather than let Node
  // free the whole heap first: after a first sync of 500 objects that teardown took ~30 ms
  // (alternating whole-process runs, `npm run bench -- cli-process`). 'exit' listeners (the
  // code cache) still run.
  process.once('beforeExit', () => process.exit());
});
