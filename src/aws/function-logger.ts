/**
 * The functions' logs: one JSON object per line on stdout, which CloudWatch
 * keeps as is. Callers log facts (track, job, revision, delivery id), never
 * a request's headers or body, which may carry signatures or tokens.
 */
import { readOptionalEnv, type Environment } from '../config/env.ts';
import { jsonLogger, type Logger, type LogLevel } from '../logger.ts';
import { FUNCTION_ENV } from './function-env.ts';

const LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

/** A logger for function `name`, at `DRIFTLESS_LOG_LEVEL` (default info). */
export function functionLogger(name: string, env?: Environment): Logger {
  const wanted = readOptionalEnv(FUNCTION_ENV.logLevel, env);
  const level = LEVELS.find((candidate) => candidate === wanted) ?? 'info';
  return jsonLogger((line) => console.log(line), { level }, { function: name });
}
