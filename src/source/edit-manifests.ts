/**
 * Writing cluster changes back into the manifest files they came from
 * (two-way sync, `syncTo: git`): each object's document is found in its
 * file, only the changed fields are rewritten, and everything else — the
 * other documents byte for byte, comments and key order in the edited one —
 * stays as it was. The `yaml` library keeps comments, which js-yaml (used to
 * read manifests fast) does not.
 *
 * A field Git changed since the revision the cluster was compared with is
 * left as Git has it and reported as a conflict: Git wins.
 *
 * What is written must read the same under YAML 1.1 too, as kubectl
 * (go-yaml v2) reads manifests: a new string such as `yes`, `on` or `0x1F`
 * is written quoted, though YAML 1.2 would read it plain as a string.
 */
import { isDeepStrictEqual } from 'node:util';
import { Composer, CST, Document, isMap, isNode, isScalar, Parser, Scalar, visit } from 'yaml';
import type { Node } from 'yaml';
import type { WriteBackChange } from '../render/write-back-change.ts';

/** A field not written back, and why. */
export interface WriteBackConflict {
  readonly subject: string;
  readonly path: string;
  readonly message: string;
}

export interface ManifestEdits {
  /** New contents of the files that changed. */
  readonly files: Map<string, string>;
  /** Subjects whose changes are now in the files (including those already there). */
  readonly written: string[];
  readonly conflicts: WriteBackConflict[];
  /** Objects that could not be written at all. */
  readonly refused: { readonly subject: string; readonly error: string }[];
}

/** Applies `changes` to the files `read` returns (undefined: no such file). */
export function editManifests(
  read: (file: string) => string | undefined,
  changes: readonly WriteBackChange[],
): ManifestEdits {
  const files = new Map<string, string>();
  const written: string[] = [];
  const conflicts: WriteBackConflict[] = [];
  const refused: { subject: string; error: string }[] = [];
  const byFile = new Map<string, WriteBackChange[]>();
  for (const change of changes) {
    const ofFile = byFile.get(change.file);
    if (ofFile) ofFile.push(change);
    else byFile.set(change.file, [change]);
  }

  for (const [file, fileChanges] of byFile) {
    const replaced = fileChanges.find((change) => change.replace !== undefined);
    if (replaced?.replace !== undefined) {
      // An encrypted file is replaced whole, and only if Git still has it as it was compared.
      const current = read(file);
      if (current === replaced.replace.content) written.push(replaced.subject);
      else if (current === replaced.replace.base) {
        files.set(file, replaced.replace.content);
        written.push(replaced.subject);
      } else {
        conflicts.push({
          subject: replaced.subject,
          path: '',
          message: `Git changed ${file} since the revision compared with: Git wins`,
        });
      }
      continue;
    }
    const adds = fileChanges.filter((change) => change.add !== undefined);
    if (adds.length > 0) {
      // Objects new to Git: appended to their file (made when missing) as documents of their own.
      const added = addDocuments(read(file), adds, written, conflicts);
      if (added !== undefined) files.set(file, added);
    }
    const edits = fileChanges.filter((change) => change.add === undefined);
    if (edits.length === 0) continue;
    const text = files.get(file) ?? read(file);
    if (text === undefined) {
      for (const change of edits) {
        refused.push({ subject: change.subject, error: `${file} is no longer in Git` });
      }
      continue;
    }
    const parsed = parseFile(text);
    const edited = new Set<number>();
    for (const change of edits) {
      const index = documentOf(parsed.documents, change);
      if (index === undefined) {
        refused.push({
          subject: change.subject,
          error: `${file} has no document for ${change.subject} any more`,
        });
        continue;
      }
      const document = parsed.documents[index]!;
      let changed = false;
      for (const field of change.fields) {
        const outcome = editField(document, field);
        if (outcome === 'changed') changed = true;
        else if (outcome !== 'same') {
          conflicts.push({ subject: change.subject, path: field.path, message: outcome });
        }
      }
      if (changed) edited.add(index);
      written.push(change.subject);
    }
    if (edited.size > 0) files.set(file, render(parsed, edited));
  }
  return { files, written, conflicts, refused };
}

/**
 * `text` (undefined: a new file) with a document per object of `adds` that
 * it does not hold yet; undefined when nothing was added.
 */
function addDocuments(
  text: string | undefined,
  adds: readonly WriteBackChange[],
  written: string[],
  conflicts: WriteBackConflict[],
): string | undefined {
  const documents = text === undefined ? [] : parseFile(text).documents;
  let out = text ?? '';
  for (const change of adds) {
    if (documentOf(documents, change) !== undefined) {
      // Someone added it to Git meanwhile: Git has it, Git wins.
      conflicts.push({
        subject: change.subject,
        path: '',
        message: `${change.file} already holds it`,
      });
      continue;
    }
    const document = new Document(change.add);
    quoteForYaml11(document);
    out = out === '' ? String(document) : `${out.replace(/\n*$/, '\n')}---\n${String(document)}`;
    written.push(change.subject);
  }
  return out === (text ?? '') ? undefined : out;
}

interface ParsedFile {
  /** The file's CST tokens, whose text is kept as it was. */
  readonly tokens: ReturnType<Parser['parse']> extends Iterable<infer T> ? T[] : never;
  readonly documents: Document.Parsed[];
}

function parseFile(text: string): ParsedFile {
  const tokens = [...new Parser().parse(text)];
  const documents = [...new Composer().compose(tokens)];
  return { tokens, documents };
}

/** The document holding the object: same kind, name and (when written) namespace. */
function documentOf(
  documents: readonly Document.Parsed[],
  change: WriteBackChange,
): number | undefined {
  const index = documents.findIndex((document) => {
    const value = document.toJS() as Record<string, unknown> | null;
    if (value === null || typeof value !== 'object') return false;
    const metadata = (value['metadata'] ?? {}) as Record<string, unknown>;
    const namespace = metadata['namespace'];
    return (
      value['kind'] === change.kind &&
      metadata['name'] === change.name &&
      (namespace === undefined || namespace === change.namespace)
    );
  });
  return index < 0 ? undefined : index;
}

/** `changed`, `same` (Git already has the cluster's value), or why the field is left. */
function editField(
  document: Document.Parsed,
  field: WriteBackChange['fields'][number],
): 'changed' | 'same' | string {
  // RFC 6901: `~1` is `/`, `~0` is `~`.
  const path = pathIn(
    document,
    field.path
      .split('/')
      .slice(1)
      .map((token) => token.replace(/~1/g, '/').replace(/~0/g, '~')),
  );
  const node = document.getIn(path, true);
  const current = isNode(node) ? node.toJSON() : node;
  if (isDeepStrictEqual(current, field.value)) return 'same';
  if (!isDeepStrictEqual(current, field.base)) {
    return typeof current === 'string' && current.includes('${')
      ? 'Git sets it with a ${variable}: not written back'
      : 'Git changed it since the revision compared with: Git wins';
  }
  if (field.value === undefined) document.deleteIn(path);
  else setField(document, path, field.value);
  return 'changed';
}

/**
 * The path as the document needs it: list indexes are numbers, map keys
 * strings, also the key `80` (a number would be another key, `80: …`).
 */
function pathIn(document: Document.Parsed, tokens: readonly string[]): (string | number)[] {
  const path: (string | number)[] = [];
  for (const token of tokens) {
    const isIndex = /^\d+$/.test(token) && !isMap(document.getIn(path, true));
    path.push(isIndex ? Number(token) : token);
  }
  return path;
}

/**
 * Sets the field at `path` to `value`: a scalar in place, keeping its
 * comments and style, anything else as a new node. New strings and keys
 * that YAML 1.1 would read as another type are quoted.
 */
function setField(document: Document.Parsed, path: (string | number)[], value: unknown): void {
  const node = document.getIn(path, true);
  if (isScalar(node) && (value === null || typeof value !== 'object')) {
    node.value = value;
    quoteIfNeeded(node);
    return;
  }
  const created = document.createNode(value);
  quoteForYaml11(created);
  // Keys the path adds are new too (keys already there are kept as they are).
  const keys = path.map((segment) =>
    typeof segment === 'string' ? quoteIfNeeded(new Scalar(segment)) : segment,
  );
  document.setIn(keys, created);
}

/**
 * Plain scalars that YAML 1.1 resolves to something other than a string:
 * bool, null, int (octal `0755`, `0x`/`0o`/`0b`, `_` separators,
 * sexagesimal `1:20`, and Go's `strconv` forms that go-yaml v2 accepts),
 * float (`1e3`, `.5`, `.inf`, `.nan`), timestamp and the merge key `<<`.
 * Case-insensitive where quoting costs nothing.
 */
const YAML_1_1_NOT_STRINGS: readonly RegExp[] = [
  /^(?:y|yes|n|no|true|false|on|off)$/i,
  /^(?:~|null)?$/i,
  /^[-+]?(?:[0-9][0-9_]*)?(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?$/,
  /^[-+]?0(?:[xX][0-9a-fA-F_]+|[oO][0-7_]+|[bB][01_]+)$/,
  /^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$/,
  /^[-+]?\.(?:inf|nan)$/i,
  /^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::?[0-9]{2})?))?)?$/,
  /^<<$/,
];

/** `scalar`, double-quoted when it is a string YAML 1.1 would not read plain as one. */
function quoteIfNeeded(scalar: Scalar): Scalar {
  const { type, value } = scalar;
  if (
    typeof value === 'string' &&
    (type === undefined || type === Scalar.PLAIN) &&
    YAML_1_1_NOT_STRINGS.some((pattern) => pattern.test(value))
  ) {
    scalar.type = Scalar.QUOTE_DOUBLE;
  }
  return scalar;
}

/** Quotes the strings (keys and values) of a new node as `quoteIfNeeded` does. */
function quoteForYaml11(node: Node | Document): void {
  visit(node, {
    Scalar: (_key, scalar) => {
      quoteIfNeeded(scalar);
    },
  });
}

/**
 * The file again: untouched documents (and what lies between them) as they
 * were written, edited ones as the library prints them. A first document's
 * leading comments are separate tokens but part of its printed form.
 */
function render(parsed: ParsedFile, edited: ReadonlySet<number>): string {
  let out = '';
  let pending = '';
  let index = 0;
  for (const token of parsed.tokens) {
    if (token.type !== 'document') {
      pending += CST.stringify(token);
      continue;
    }
    if (edited.has(index)) {
      // Flow collections keep their spacing: `{a: b}` or `{ a: b }`, as the document has them.
      const printed = parsed.documents[index]!.toString({
        flowCollectionPadding: flowPadded(token),
      });
      // Comments before the first document print with it; blank lines and the like stay.
      out += index === 0 ? pending.replace(/^(?:[ \t]*#.*\n)+/, '') : pending;
      out += printed;
    } else {
      out += pending + CST.stringify(token);
    }
    pending = '';
    index++;
  }
  return out + pending;
}

/** Whether the document writes flow collections padded, `{ a: b }`, rather than `{a: b}`. */
function flowPadded(token: CST.Document): boolean {
  let padded = false;
  CST.visit(token, (item) => {
    const collection = item.value;
    if (collection?.type !== 'flow-collection') return undefined;
    const first = collection.items[0];
    if (first === undefined || (first.key == null && first.value == null)) return undefined;
    padded = first.start[0]?.type === 'space';
    return CST.visit.BREAK;
  });
  return padded;
}
