/** Process entry of the `driftless` command: runs the CLI and sets the exit code. */
import { runCli } from './main.ts';

// Not a top-level await: the bundle (scripts/build-cli.ts) is CommonJS, which has none.
void runCli(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
