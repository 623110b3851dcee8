/**
 * The functions' logs: one JSON object per line on stdout, which CloudWatch
 * keeps as is. Callers log facts (track, job, revision, delivery id), never
 * a request's headers or body, which may carry signatures or tokens.
 *
 * Why not Powertools for AWS Lambda's Logger, when its Metrics writes the
 * functions' metrics (function-metrics.ts): it would replace no code. These
 * lines come from the same jsonLogger as the CLI's and serve's (which stays
 * for them), behind the Logger interface the whole core logs through; what
 * is Lambda's own is the few lines below. Taking it would add code instead —
 * an adapter from that interface (`info(msg, fields)`, `child(fields)`) to
 * Powertools' (`info(msg, ...extra)`, `createChild`), a log formatter calling
 * redactDeep on every line's attributes (redact.ts: it must hide secret
 * values learned while the function runs) and an error formatter dropping
 * stacks and causes, which may quote request data (Powertools writes both)
 * — for features no function uses (Lambda context fields, sampling, log
 * buffering, correlation ids). Measured with serverless.yml's esbuild
 * settings (2026-11-25): Logger 2.36.0 adds 18 KB to each bundle on top of
 * Metrics' 13 KB (the fetch bundle is over its 2 MB goal already) and
 * ~6 ms of module init when constructed at init, as `handler` exports are.
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
