import { readFile } from 'node:fs/promises';
import { ConfigError } from './config-error.ts';
import { parseConfig } from './parse-config.ts';
import type { Config } from './types.ts';

/**
 * Reads and validates a `driftless.yaml` (see {@link parseConfig}).
 *
 * @param file path as the user gave it (`-c`); messages repeat it verbatim.
 * @throws {ConfigError} when the file is missing, unreadable or invalid.
 */
export async function loadConfig(file: string): Promise<Config> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const message =
      code === 'ENOENT'
        ? 'file does not exist'
        : code === 'EISDIR'
          ? 'is a directory, not a file'
          : `cannot be read: ${(error as Error).message}`;
    throw new ConfigError([{ file, path: '', message }], { cause: error });
  }
  return parseConfig(text, file);
}
