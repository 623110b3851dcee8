import { CORE_SCHEMA, loadAll, YAMLException } from 'js-yaml';
import { ConfigError } from './config-error.ts';

/**
 * Parses every YAML document of a file, keeping empty ones as `null` so
 * document indexes in messages match what the user counts.
 *
 * YAML 1.2 core schema: `on`/`yes` stay strings and dates stay text, so a
 * value means what it looks like.
 *
 * @throws {ConfigError} with the line and column of a syntax error.
 */
export function readYamlDocuments(text: string, fileName: string): unknown[] {
  try {
    return loadAll(text, { filename: fileName, schema: CORE_SCHEMA });
  } catch (error) {
    if (!(error instanceof YAMLException)) throw error;
    const line = error.mark ? error.mark.line + 1 : undefined;
    const column = error.mark ? error.mark.column + 1 : undefined;
    throw new ConfigError(
      [{ file: fileName, path: '', message: `invalid YAML: ${error.reason}`, line, column }],
      { cause: error },
    );
  }
}
