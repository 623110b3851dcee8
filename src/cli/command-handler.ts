import type { LocalContext } from '../sync/local-context.ts';
import type { Output } from './output.ts';
import type { CommandLine } from './parse-command-line.ts';

/** Runs one command against an open context; returns the exit code. */
export type CommandHandler = (
  ctx: LocalContext,
  line: CommandLine,
  output: Output,
) => Promise<number>;
