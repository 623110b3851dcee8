/**
 * Resolves secret references for the local CLI: `env:` through the one env
 * helper, `file:` from disk. The AWS stores belong to the deployed functions
 * and are not reachable from here yet.
 */
import { readFile } from 'node:fs/promises';
import { readEnv, type Environment } from './env.ts';
import { formatSecretRef, type SecretRef } from './secret-ref.ts';
import { DriftlessError, NotImplementedError } from '../errors.ts';
import { expandHome } from './expand-home.ts';

/** A referenced secret could not be read (missing file, unreadable). The value never appears. */
export class SecretUnavailableError extends DriftlessError {
  readonly code = 'SECRET_UNAVAILABLE';
}

/**
 * The value of `ref`. One trailing line break is dropped: secret files are
 * usually written with `echo`, and `user:password\n` would not authenticate.
 *
 * @throws {MissingEnvError} for an unset `env:` variable.
 * @throws {SecretUnavailableError} for a `file:` that cannot be read.
 * @throws {NotImplementedError} for `aws-secretsmanager:` and `aws-ssm:`.
 */
export async function readSecret(ref: SecretRef, env: Environment = process.env): Promise<string> {
  switch (ref.scheme) {
    case 'env':
      return readEnv(ref.name, env);
    case 'file': {
      const path = expandHome(ref.path, env);
      try {
        return (await readFile(path, 'utf8')).replace(/\r?\n$/, '');
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        const reason = code === 'ENOENT' ? 'file does not exist' : (error as Error).message;
        throw new SecretUnavailableError(`secret ${formatSecretRef(ref)}: ${reason}`, {
          cause: error,
        });
      }
    }
    case 'aws-secretsmanager':
    case 'aws-ssm':
      throw new NotImplementedError(
        `secret ${formatSecretRef(ref)}: AWS secret stores are not supported by the CLI yet; use env: or file:`,
      );
  }
}

/**
 * `read()` — a secret read for the config field `field` (`webhooks.github.secret`,
 * `dashboard.tokens[0]`): a failure names the field first, so a missing variable or file points
 * at the line of driftless.yaml to look at. The error keeps its type (and exit code).
 */
export async function readSecretFor(field: string, read: () => Promise<string>): Promise<string> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof Error && !error.message.startsWith(`${field}: `)) {
      error.message = `${field}: ${error.message}`;
    }
    throw error;
  }
}
