import { DriftlessError } from '../errors.ts';

/** The environment as a plain map, so tests and callers can pass their own. */
export type Environment = Readonly<Record<string, string | undefined>>;

/** A required environment variable is unset or empty. */
export class MissingEnvError extends DriftlessError {
  readonly code = 'ENV_MISSING';
  /** Name of the variable that is missing. */
  readonly variable: string;

  constructor(variable: string) {
    super(`environment variable ${variable} is not set`);
    this.variable = variable;
  }
}

/**
 * Reads a required environment variable.
 *
 * The only place Driftless reads `process.env` (DESIGN.md): every other module
 * receives values or goes through here, so a missing variable is always
 * reported by name instead of surfacing later as `undefined`. An empty value
 * counts as missing because it is almost always a deployment mistake.
 *
 * @throws {MissingEnvError} when the variable is unset or empty.
 */
export function readEnv(name: string, env: Environment = process.env): string {
  const value = env[name];
  if (value === undefined || value === '') throw new MissingEnvError(name);
  return value;
}

/** Reads an optional environment variable; unset and empty both yield `undefined`. */
export function readOptionalEnv(name: string, env: Environment = process.env): string | undefined {
  const value = env[name];
  return value === undefined || value === '' ? undefined : value;
}
