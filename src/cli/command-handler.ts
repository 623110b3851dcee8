import type { CliContext } from './context.ts';
import type { Output } from './output.ts';
import type { CommandLine } from './parse-command-line.ts';

/** Runs one command against an open context; returns the exit code. */
export type CommandHandler = (
  ctx: CliContext,
  line: CommandLine,
  output: Output,
) => Promise<number>;
