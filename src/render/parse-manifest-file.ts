import { constructFromEvents, parseEvents, YAMLException } from 'js-yaml';
import { DriftlessError, messageOf } from '../errors.ts';
import { ManifestParseError } from './errors.ts';
import { lineIndex } from './line-index.ts';
import { scanEvents, type AliasBudget } from './scan-events.ts';
import { MANIFEST_SCHEMA } from './yaml-schema.ts';
import type { RevisionFile } from './types.ts';

/** One non-empty document of a manifest file. */
export interface ParsedDocument {
  readonly value: unknown;
  /** 1-based line where the document's content starts. */
  readonly line: number;
  /** 1-based lines of the elements of a top-level `items:` list, when there is one. */
  readonly itemLines: readonly number[] | undefined;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
const lenientUtf8 = new TextDecoder('utf-8');

function decode(file: RevisionFile): string {
  try {
    return utf8.decode(file.content);
  } catch (error) {
    // Locate the first undecodable byte through the replacement character it becomes.
    const text = lenientUtf8.decode(file.content);
    const offset = Math.max(0, text.indexOf('\uFFFD'));
    const lineStart = text.lastIndexOf('\n', offset - 1) + 1;
    const line = lineIndex(text)(offset);
    throw new ManifestParseError(
      file.path,
      line,
      offset - lineStart + 1,
      'file is not valid UTF-8',
      {
        cause: error,
      },
    );
  }
}

/**
 * Parses one `.yaml`/`.yml`/`.json` file (JSON is read as YAML, which it is a
 * subset of, so duplicate keys and positions are handled the same way) into
 * its non-empty documents. Empty documents, including the one a trailing
 * `---` produces, are dropped, as kubectl does.
 */
export function parseManifestFile(
  file: RevisionFile,
  budget: AliasBudget,
  maxDepth: number,
): ParsedDocument[] {
  const source = decode(file);
  const lineOf = lineIndex(source);
  try {
    const events = parseEvents(source, { filename: file.path, maxDepth });
    const positions = scanEvents(events, { source, file: file.path, budget, maxDepth, lineOf });
    const values = constructFromEvents(events, {
      source,
      filename: file.path,
      schema: MANIFEST_SCHEMA,
    });
    const documents: ParsedDocument[] = [];
    values.forEach((value, index) => {
      if (value === null || value === undefined) return;
      const position = positions[index];
      documents.push({
        value,
        line: lineOf(position?.start ?? 0),
        itemLines: position?.itemStarts?.map(lineOf),
      });
    });
    return documents;
  } catch (error) {
    if (error instanceof DriftlessError) throw error;
    if (error instanceof YAMLException) {
      const line = error.mark === undefined ? 1 : error.mark.line + 1;
      const column = error.mark === undefined ? 1 : error.mark.column + 1;
      const reason =
        error.reason === 'duplicated mapping key' && error.mark !== undefined
          ? duplicatedKeyReason(source, error.mark.position)
          : error.reason;
      throw new ManifestParseError(file.path, line, column, reason, { cause: error });
    }
    // js-yaml documents that other errors (e.g. a stack overflow) can escape too.
    const reason = messageOf(error);
    throw new ManifestParseError(file.path, 1, 1, reason, { cause: error });
  }
}

/**
 * `duplicated mapping key "name"`: js-yaml says which line, not which key, and a long mapping
 * may hold several on it. The key is read from the source where js-yaml points.
 */
function duplicatedKeyReason(source: string, position: number): string {
  // js-yaml points inside a quoted key, past its opening quote.
  const start = /["']/.test(source[position - 1] ?? '') ? position - 1 : position;
  const end = source.indexOf('\n', start);
  const rest = source.slice(start, end === -1 ? undefined : end);
  const key = /^\s*(?:"([^"]*)"|'([^']*)'|([^\s:#,{}[\]][^:#,{}[\]]*?))\s*:/.exec(rest);
  const name = key?.[1] ?? key?.[2] ?? key?.[3];
  return name === undefined
    ? 'duplicated mapping key'
    : `duplicated mapping key ${JSON.stringify(name)}`;
}
