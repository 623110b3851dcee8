import { splitApiVersion } from './api-version.ts';
import { InvalidManifestError } from './errors.ts';
import { findNonJsonValue, isJsonObject } from './json-value.ts';
import type { ParsedDocument } from './parse-manifest-file.ts';
import { formatSubject } from './subject.ts';
import type { JsonObject, SourceLocation } from './types.ts';

/** An object read from Git whose scope is not known yet. */
export interface CollectedObject {
  /** A private deep copy: aliases are expanded, so filling in a namespace touches nothing else. */
  readonly manifest: JsonObject & { metadata: JsonObject };
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly name: string;
  /** `metadata.namespace` as written; `''` and `null` count as absent, as in kubectl. */
  readonly writtenNamespace: string | undefined;
  readonly source: SourceLocation;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a sequence';
  return typeof value === 'object' ? 'a mapping' : `a ${typeof value}`;
}

// `kind: List` and typed lists (`ConfigMapList`, ...) carry objects in `items`;
// kubectl flattens any `*List` kind with an `items` array, and so do we.
function isList(value: JsonObject): value is JsonObject & { items: unknown[] } {
  return (
    typeof value.kind === 'string' && value.kind.endsWith('List') && Array.isArray(value.items)
  );
}

function requireString(
  value: unknown,
  field: string,
  source: SourceLocation,
  subject: string | undefined,
): string {
  if (typeof value === 'string' && value !== '') return value;
  const problem =
    value === undefined ? 'is missing' : `must be a non-empty string, not ${describe(value)}`;
  throw new InvalidManifestError(source.file, source.line, subject, `${field} ${problem}`);
}

function collectObject(value: unknown, source: SourceLocation): CollectedObject {
  if (!isJsonObject(value)) {
    throw new InvalidManifestError(
      source.file,
      source.line,
      undefined,
      `document must be a mapping (a Kubernetes object), not ${describe(value)}${
        Array.isArray(value)
          ? '; write each object as a document of its own (after ---), or as the items of a kind: List'
          : ''
      }`,
    );
  }
  const apiVersion = requireString(value.apiVersion, 'apiVersion', source, undefined);
  const kind = requireString(value.kind, 'kind', source, undefined);
  const metadata = value.metadata;
  if (!isJsonObject(metadata)) {
    const problem =
      metadata === undefined ? 'is missing' : `must be a mapping, not ${describe(metadata)}`;
    throw new InvalidManifestError(
      source.file,
      source.line,
      undefined,
      `${kind}: metadata ${problem}`,
    );
  }
  const name = requireString(metadata.name, 'metadata.name', source, `${kind}/<unnamed>`);
  const namespace = metadata.namespace;
  if (namespace !== undefined && namespace !== null && typeof namespace !== 'string') {
    throw new InvalidManifestError(
      source.file,
      source.line,
      formatSubject(kind, name),
      `metadata.namespace must be a string, not ${describe(namespace)}`,
    );
  }
  const writtenNamespace = namespace === null || namespace === '' ? undefined : namespace;
  const subject = formatSubject(kind, name, writtenNamespace);
  const groupVersion = splitApiVersion(apiVersion);
  if (groupVersion === undefined) {
    throw new InvalidManifestError(
      source.file,
      source.line,
      subject,
      `apiVersion "${apiVersion}" must be "version" or "group/version"`,
    );
  }
  const nonJson = findNonJsonValue(value);
  if (nonJson !== undefined) {
    throw new InvalidManifestError(source.file, source.line, subject, nonJson);
  }
  // The alias budget already bounded how much this clone can expand.
  const manifest = JSON.parse(JSON.stringify(value)) as JsonObject & { metadata: JsonObject };
  if (namespace === null || namespace === '') delete manifest.metadata.namespace;
  return { manifest, ...groupVersion, kind, name, writtenNamespace, source };
}

function collectValue(
  value: unknown,
  source: SourceLocation,
  itemLines: readonly number[] | undefined,
  into: CollectedObject[],
): void {
  if (isJsonObject(value) && isList(value)) {
    value.items.forEach((item, index) => {
      const line = itemLines?.[index] ?? source.line;
      // Only the outermost list's item lines are tracked; nested lists reuse their item's line.
      collectValue(item, { file: source.file, line }, undefined, into);
    });
    return;
  }
  into.push(collectObject(value, source));
}

/** Turns a file's documents into objects: flattens lists, checks the fields every object needs. */
export function collectObjects(
  file: string,
  documents: readonly ParsedDocument[],
): CollectedObject[] {
  const objects: CollectedObject[] = [];
  for (const document of documents) {
    collectValue(document.value, { file, line: document.line }, document.itemLines, objects);
  }
  return objects;
}
