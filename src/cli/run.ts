/** Process entry of the `driftless` command: runs the CLI and sets the exit code. */
import { EXIT_INTERRUPTED } from './exit-codes.ts';
import { runCli } from './main.ts';

// A reader that stops early (`driftless history | head -1`) closes the pipe, and the next write
// fails with EPIPE — an 'error' event that, unhandled, killed the process with a stack trace and
// exit code 1, which scripts read as "differences found". The rest of the output has nowhere to
// go: drop it, as a shell's SIGPIPE does for other commands, and let the command finish and exit
// with its own code (a sync or rollback is never cut short half-way by its reader leaving).
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
  });
}

// Not a top-level await: the bundle (scripts/build-cli.ts) is CommonJS, which has none.
void runCli(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
  if (code === EXIT_INTERRUPTED.SIGINT || code === EXIT_INTERRUPTED.SIGTERM) {
    // Stopped by Ctrl-C or SIGTERM, with what it did recorded: a step that only read (a Git
    // fetch, say) may still be under way, unobserved; it must not keep the process up.
    // Exit once what was written to stdout and stderr is out.
    process.stdout.write('', () => process.stderr.write('', () => process.exit()));
    return;
  }
  // Once nothing is left to run (output written, connections idle), exit rather than let Node
  // free the whole heap first: after a first sync of 500 objects that teardown took ~30 ms
  // (alternating whole-process runs, `npm run bench -- cli-process`). 'exit' listeners (the
  // code cache) still run.
  process.once('beforeExit', () => process.exit());
});
