/**
 * Reads a command's flags with `node:util` parseArgs and checks them against
 * the command's spec. Every mistake is a UsageError naming the flag, raised
 * before anything is read or touched (exit code 2).
 */
import { parseArgs } from 'node:util';
import {
  DELETION_POLICIES,
  isDeletionPolicy,
  type DeletionPolicy,
} from '../config/deletion-policy.ts';
import { UsageError } from '../errors.ts';
import { OPTIONS, type CommandSpec, type OptionName } from './commands.ts';

export type OutputFormat = 'text' | 'json';

/** A command's flags, validated and defaulted. */
export interface CommandLine {
  /** `-c`, default `./driftless.yaml`. */
  readonly config: string;
  readonly output: OutputFormat;
  readonly track?: string;
  readonly revision?: string;
  readonly previous: boolean;
  readonly detectOnly: boolean;
  readonly port?: number;
  /** `status --objects`. */
  readonly objects: boolean;
  /** `delete --policy`. */
  readonly policy?: DeletionPolicy;
  /** `unlock --lease`: the id status and the busy error give (checked by the command). */
  readonly lease?: string;
}

/** A usage error about a command's flags; carries the command's usage line to print after it. */
export class CommandLineError extends UsageError {
  constructor(
    message: string,
    /** `driftless sync [-c FILE] ...`. */
    readonly usage: string,
  ) {
    super(message);
  }
}

export const DEFAULT_CONFIG_FILE = './driftless.yaml';

/** `--name`, or `-c/--config` when the flag has a short form: how people recognise it. */
export function flagName(name: OptionName): string {
  const definition = OPTIONS[name];
  return 'short' in definition ? `-${definition.short}/--${name}` : `--${name}`;
}

function isOptionName(name: string): name is OptionName {
  return Object.hasOwn(OPTIONS, name);
}

/**
 * Parses `args` (what follows the command name) for `spec`.
 *
 * parseArgs runs non-strict with tokens so the checks below can word each
 * error for this CLI (its strict messages talk about positionals and `--`).
 *
 * @throws {UsageError} naming the offending flag.
 */
export function parseCommandLine(spec: CommandSpec, args: readonly string[]): CommandLine {
  const { tokens } = parseArgs({
    args: [...args],
    options: OPTIONS,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const fail = (message: string): CommandLineError =>
    new CommandLineError(`${spec.name}: ${message}`, `driftless ${spec.usage.replace(/\s+/, ' ')}`);
  const values = new Map<OptionName, string | true>();
  for (const token of tokens) {
    if (token.kind === 'option-terminator') continue;
    if (token.kind === 'positional') {
      throw fail(`unexpected argument ${JSON.stringify(token.value)}`);
    }
    const { name, rawName } = token;
    if (!isOptionName(name) || !spec.options.includes(name)) {
      throw fail(`unknown flag ${rawName}`);
    }
    if (values.has(name)) throw fail(`${flagName(name)} is given more than once`);
    if (OPTIONS[name].type === 'boolean') {
      if (token.value !== undefined) throw fail(`${flagName(name)} takes no value`);
      values.set(name, true);
      continue;
    }
    // parseArgs takes `-o=json` as the value "=json"; people mean json.
    let value = token.value;
    if (value !== undefined && token.inlineValue && !rawName.startsWith('--')) {
      value = value.replace(/^=/, '');
    }
    // Without strict mode parseArgs would take the next flag as the value
    // (`--track --revision x`); no accepted value starts with a dash.
    if (value === undefined || value === '' || (!token.inlineValue && value.startsWith('-'))) {
      throw fail(`${flagName(name)} needs a value`);
    }
    values.set(name, value);
  }

  for (const name of spec.required ?? []) {
    if (!values.has(name)) throw fail(`${flagName(name)} is required`);
  }
  for (const group of spec.exactlyOne ?? []) {
    const given = group.filter((name) => values.has(name));
    if (given.length !== 1) {
      throw fail(`give exactly one of ${group.map(flagName).join(' or ')}`);
    }
  }
  for (const [flag, needed] of spec.needs ?? []) {
    if (values.has(flag) && !values.has(needed)) {
      throw fail(`${flagName(flag)} needs ${flagName(needed)}`);
    }
  }

  const text = (name: OptionName): string | undefined => {
    const value = values.get(name);
    return typeof value === 'string' ? value : undefined;
  };
  const output = text('output') ?? 'text';
  if (output !== 'text' && output !== 'json') {
    throw fail(`${flagName('output')} must be text or json, not ${JSON.stringify(output)}`);
  }
  const portText = text('port');
  let port: number | undefined;
  if (portText !== undefined) {
    port = Number(portText);
    if (!/^\d+$/.test(portText) || port < 1 || port > 65535) {
      throw fail(`--port must be a TCP port (1-65535), not ${JSON.stringify(portText)}`);
    }
  }
  const policy = text('policy');
  if (policy !== undefined && !isDeletionPolicy(policy)) {
    throw fail(
      `--policy must be ${DELETION_POLICIES.slice(0, -1).join(', ')} or ${DELETION_POLICIES.at(-1)}, not ${JSON.stringify(policy)}`,
    );
  }
  const lease = text('lease');
  const track = text('track');
  const revision = text('revision');
  return {
    ...(lease === undefined ? {} : { lease }),
    ...(policy === undefined ? {} : { policy }),
    objects: values.has('objects'),
    config: text('config') ?? DEFAULT_CONFIG_FILE,
    output: output as OutputFormat,
    ...(track === undefined ? {} : { track }),
    ...(revision === undefined ? {} : { revision }),
    previous: values.has('previous'),
    detectOnly: values.has('detect-only'),
    ...(port === undefined ? {} : { port }),
  };
}
