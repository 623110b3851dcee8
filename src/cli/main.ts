/**
 * Entry point of the `driftless` command: parses the command line, opens the
 * context, dispatches to a command and maps failures to the exit codes
 * DESIGN.md fixes (2 usage or config — nothing attempted; 3 operation failed).
 *
 * Only what every command line needs is imported statically, so `driftless
 * --help` and usage errors run nothing else; the context (config, store,
 * clusters) and each command's code are imported when a command runs (in the
 * bundle, scripts/build-cli.ts, a module behind a dynamic import runs on its
 * first import).
 */
import { ConfigError } from '../config/config-error.ts';
import { redactSecrets } from '../redact.ts';
import { readOptionalEnv } from '../config/env.ts';
import {
  DriftlessError,
  InterruptedError,
  NotImplementedError,
  UsageError,
  messageOf,
} from '../errors.ts';
import type { CommandHandler } from './command-handler.ts';
import { COMMANDS, type CommandName } from './commands.ts';
import type { OpenLocalContext } from '../sync/local-context.ts';
import type { SignalSource } from './interrupts.ts';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE } from './exit-codes.ts';
import { Output, type CliIo } from './output.ts';
import { CommandLineError, parseCommandLine } from './parse-command-line.ts';

/** Each command's handler, imported on demand so a command loads only its own code. */
const HANDLERS: Record<CommandName, () => Promise<CommandHandler>> = {
  sync: async () => (await import('./sync-command.ts')).syncCommand,
  diff: async () => (await import('./diff-command.ts')).diffCommand,
  drift: async () => (await import('./drift-command.ts')).driftCommand,
  rollback: async () => (await import('./rollback-command.ts')).rollbackCommand,
  unpin: async () => (await import('./unpin-command.ts')).unpinCommand,
  suspend: async () => (await import('./lifecycle-commands.ts')).suspendCommand,
  resume: async () => (await import('./lifecycle-commands.ts')).resumeCommand,
  delete: async () => (await import('./lifecycle-commands.ts')).deleteCommand,
  unlock: async () => (await import('./lifecycle-commands.ts')).unlockCommand,
  status: async () => (await import('./status-command.ts')).statusCommand,
  history: async () => (await import('./history-command.ts')).historyCommand,
  render: async () => (await import('./render-command.ts')).renderCommand,
  serve: async () => (await import('./serve-command.ts')).serveCommand,
};

/** The real context: config loading, store and cluster connections, imported on first use. */
const openRealContext: OpenLocalContext = async (configFile, env) =>
  (await import('../sync/local-context.ts')).openLocalContext(configFile, env);

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

/** What {@link runCli} may be given instead of the real process and services. */
export interface CliDependencies extends Partial<CliIo> {
  /** Builds the context from the config file; tests pass fakes of the ports. */
  readonly openLocalContext?: OpenLocalContext;
  /** Where SIGINT and SIGTERM come from: the process, or a test's emitter (interrupts.ts). */
  readonly signals?: SignalSource;
}

/** `driftless: ` before every line, so each line of a multi-line error is recognisable in logs. */
function reportError(io: CliIo, message: string): void {
  const text = message
    .split('\n')
    .map((line) => `driftless: ${line}`)
    .join('\n');
  io.stderr.write(`${text}\n`);
}

/** `{"track": …, "error": …}` on stdout: `-o json` prints one JSON document, whatever happens. */
function printJsonError(io: CliIo, json: { readonly track?: string }, message: string): void {
  io.stdout.write(redactSecrets(`${JSON.stringify({ ...json, error: message }, null, 2)}\n`));
}

function exitCodeOf(error: unknown): number {
  // ConfigError is a DriftlessError too: test it first, a bad config attempted nothing.
  if (error instanceof ConfigError) return EXIT_USAGE;
  if (error instanceof UsageError || error instanceof NotImplementedError) return EXIT_USAGE;
  return EXIT_FAILED;
}

/**
 * Runs the CLI with `argv` (without node and script) and returns the exit code.
 * Never throws: an unexpected error is reported like any failure (exit 3),
 * since exit 1 means "differences found" to scripts.
 */
export async function runCli(
  argv: readonly string[],
  dependencies: CliDependencies = {},
): Promise<number> {
  const stdout = dependencies.stdout ?? process.stdout;
  // Whether the result went out: a command that fails before printing it, asked for JSON,
  // still prints one JSON document (its error).
  let printed = false;
  const io: CliIo = {
    stdout: {
      isTTY: stdout.isTTY,
      write: (text: string) => {
        printed = true;
        return stdout.write(text);
      },
    },
    stderr: dependencies.stderr ?? process.stderr,
    env: dependencies.env ?? process.env,
  };
  let json: { readonly track?: string } | undefined;
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.stdout.write(`${helpText()}\n`);
    return name === undefined ? EXIT_USAGE : EXIT_OK;
  }
  try {
    const command = COMMANDS.find((c) => c.name === name);
    if (!command) throw new UsageError(`unknown command "${name}"; run "driftless --help"`);
    if (rest.includes('--help') || rest.includes('-h')) {
      io.stdout.write(`Usage: driftless ${command.usage}\n  ${command.summary}\n`);
      return EXIT_OK;
    }
    const line = parseCommandLine(command, rest);
    if (line.output === 'json') json = line.track === undefined ? {} : { track: line.track };
    const handler = await HANDLERS[command.name]();
    const ctx = await (dependencies.openLocalContext ?? openRealContext)(line.config, io.env);
    const output = new Output(io);
    const interrupts = command.stopsCleanly
      ? (await import('./interrupts.ts')).listenForInterrupts(output, dependencies.signals)
      : undefined;
    try {
      const code = await handler(ctx, line, output, interrupts?.signal);
      return interrupts?.exitCode(code) ?? code;
    } catch (error) {
      // Stopped before it began (the lease not taken yet): nothing to record.
      if (interrupts === undefined || !(error instanceof InterruptedError)) throw error;
      reportError(io, error.message);
      if (json !== undefined && !printed) printJsonError(io, json, error.message);
      return interrupts.exitCode(EXIT_FAILED);
    } finally {
      interrupts?.dispose();
      ctx.close();
    }
  } catch (error) {
    reportError(io, messageOf(error));
    if (json !== undefined && !printed) printJsonError(io, json, messageOf(error));
    if (error instanceof CommandLineError) io.stderr.write(`usage: ${error.usage}\n`);
    if (!(error instanceof DriftlessError) && error instanceof Error && error.stack) {
      // Not one of ours: likely a bug, and the stack is what a report needs.
      if (readOptionalEnv('DRIFTLESS_DEBUG', io.env) !== undefined)
        io.stderr.write(`${error.stack}\n`);
    }
    return exitCodeOf(error);
  }
}
