/** Process entry of the `driftless` command: runs the CLI and sets the exit code. */
import { runCli } from './main.ts';

process.exitCode = await runCli(process.argv.slice(2));
