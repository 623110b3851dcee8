/**
 * Base class of every error Driftless raises on purpose.
 *
 * One subclass per kind of failure, each with a stable `code` that callers,
 * logs and JSON output can match on without parsing messages (the Powertools
 * convention). The original error, when there is one, travels as `cause`.
 */
export abstract class DriftlessError extends Error {
  /** Stable, machine-readable identifier of the kind of failure. */
  abstract readonly code: string;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The user asked for something malformed: a bad flag, a bad config value. Exit code 2. */
export class UsageError extends DriftlessError {
  readonly code = 'USAGE';
}

/** A feature the DESIGN.md contract names but this build does not implement yet. Exit code 2. */
export class NotImplementedError extends DriftlessError {
  readonly code = 'NOT_IMPLEMENTED';
}

/** The message of anything thrown: an Error's message, or the thrown value as text. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
