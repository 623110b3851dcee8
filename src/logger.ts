/**
 * Structured logs of `driftless serve`: one JSON object per line, so a log
 * shipper can read them without parsing prose. Callers pass facts (track,
 * revision, deliveryId, ...), never a request's headers or body: those may
 * carry a signature or a token. Known secret values are redacted from every
 * line (redact.ts), whatever a caller passed.
 */
import { redactSecrets } from './redact.ts';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** Facts of a log line; `undefined` values are left out. */
export type LogFields = Readonly<Record<string, unknown>>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** A logger that adds `fields` to every line. */
  child(fields: LogFields): Logger;
}

const RANK: Readonly<Record<LogLevel, number>> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface JsonLoggerOptions {
  /** Lines below this level are dropped; default `info`. */
  readonly level?: LogLevel;
  readonly now?: () => Date;
}

/** An Error becomes its message: stacks and causes may quote request data. */
function plain(value: unknown): unknown {
  return value instanceof Error ? value.message : value;
}

/** A logger writing JSON lines through `write` (stderr in the CLI). */
export function jsonLogger(
  write: (line: string) => void,
  options: JsonLoggerOptions = {},
  base: LogFields = {},
): Logger {
  const threshold = RANK[options.level ?? 'info'];
  const now = options.now ?? (() => new Date());
  const log = (level: LogLevel, msg: string, fields: LogFields = {}): void => {
    if (RANK[level] < threshold) return;
    // time, level and msg first, and not overridable: a field named `msg` must not hide the message.
    const line: Record<string, unknown> = { time: now().toISOString(), level, msg };
    for (const [key, value] of Object.entries({ ...base, ...fields })) {
      if (value !== undefined && !Object.hasOwn(line, key)) line[key] = plain(value);
    }
    write(redactSecrets(JSON.stringify(line)));
  };
  return {
    debug: (msg, fields) => log('debug', msg, fields),
    info: (msg, fields) => log('info', msg, fields),
    warn: (msg, fields) => log('warn', msg, fields),
    error: (msg, fields) => log('error', msg, fields),
    child: (fields) => jsonLogger(write, options, { ...base, ...fields }),
  };
}

/** A logger that drops everything, for callers that do not care. */
export const silentLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  child: () => silentLogger,
};
