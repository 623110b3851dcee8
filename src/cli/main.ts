/**
 * Entry point of the `driftless` command: dispatches to a command and maps
 * failures to the exit codes DESIGN.md fixes (2 usage, 3 operation failed).
 */
import { COMMANDS } from './commands.ts';
import { DriftlessError, NotImplementedError, UsageError } from '../errors.ts';

const EXIT_USAGE = 2;

function helpText(): string {
  const lines = COMMANDS.map((c) => `  driftless ${c.usage}\n      ${c.summary}`);
  return [
    'driftless: serverless GitOps for Kubernetes',
    '',
    'Usage:',
    ...lines,
    '',
    '-c defaults to ./driftless.yaml. Exit codes: 0 success, 1 differences left in place,',
    '2 usage or config error (nothing attempted), 3 the operation failed.',
  ].join('\n');
}

/** Runs the CLI with `argv` (without node and script) and returns the exit code. */
export async function runCli(argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${helpText()}\n`);
    return name === undefined ? EXIT_USAGE : 0;
  }
  try {
    const command = COMMANDS.find((c) => c.name === name);
    if (!command) throw new UsageError(`unknown command "${name}"; run "driftless --help"`);
    if (rest.includes('--help') || rest.includes('-h')) {
      process.stdout.write(`Usage: driftless ${command.usage}\n  ${command.summary}\n`);
      return 0;
    }
    throw new NotImplementedError(`"driftless ${command.name}" is not implemented yet`);
  } catch (error) {
    if (error instanceof UsageError || error instanceof NotImplementedError) {
      process.stderr.write(`driftless: ${error.message}\n`);
      return EXIT_USAGE;
    }
    if (error instanceof DriftlessError) {
      process.stderr.write(`driftless: ${error.message}\n`);
      return 3;
    }
    throw error;
  }
}
