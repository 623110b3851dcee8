/**
 * Writing cluster changes back into the manifest files they came from
 * (two-way sync, `syncTo: git`): each object's document is found in its
 * file, and only the changed fields are rewritten — spliced into the file's
 * text at the places the `yaml` library parsed them from — so every other
 * byte stays as it was: the other documents, comments, key order, spacing,
 * long lines. js-yaml (used to read manifests fast) keeps no source ranges.
 * What is printed anew follows the file: JSON in a `.json` file, flow style
 * inside a flow collection, the document's indentation in block style (a
 * JSON file's tabs too), the file's line breaks (CRLF). A changed list is
 * printed whole.
 *
 * Not written: a local Helm chart's template (Helm renders the object from
 * it), and a field Git writes through a YAML anchor or alias, which stands
 * for other places too.
 *
 * A field Git changed since the revision the cluster was compared with is
 * left as Git has it and reported as a conflict: Git wins. What an earlier
 * write-back not synced yet wrote there is no change made in Git: the cluster
 * changed again since, and its newer value is written. An earlier write-back
 * counts so only while the revision compared with still holds what it
 * replaced (with the earlier write-backs before it put in): a revision that
 * holds anything else there came after it, with a change someone made on top,
 * and a value Git holds now that equals the one it wrote is then someone
 * else's push. Telling that from Git's ancestry would take history that
 * neither the write-back's shallow clone nor the drift check has.
 *
 * What is written must read the same under YAML 1.1 too, as kubectl
 * (go-yaml v2) reads manifests: a new string such as `yes`, `on` or `0x1F`
 * is written quoted, though YAML 1.2 would read it plain as a string.
 */
import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import {
  Composer,
  Document,
  isAlias,
  isMap,
  isNode,
  isScalar,
  isSeq,
  Pair,
  Parser,
  Scalar,
  visit,
  YAMLMap,
} from 'yaml';
import type { Node, ToStringOptions } from 'yaml';
import type { WriteBackChange } from '../render/write-back-change.ts';
import { withValueAt } from '../render/json-value.ts';

/** A field not written back, and why. */
export interface WriteBackConflict {
  readonly subject: string;
  readonly path: string;
  readonly message: string;
}

/**
 * What write-backs wrote: each field's value (by subject and JSON pointer; no value: removed;
 * the pointer `""`: an object added whole, `writeBack.include`) and each file replaced whole (a
 * SOPS-encrypted file encrypted again), oldest first. `replaced`: what Git held there before
 * (a field's value, absent when unset; a file's SHA-256), which the revision compared with must
 * still hold for the write to count as Driftless' own (see the module comment). A write
 * recorded without it (by an older version) counts whatever the revision holds.
 */
export interface OwnWrites {
  readonly fields: readonly OwnField[];
  readonly files: readonly OwnFile[];
}

/** A field an earlier write-back wrote; see {@link OwnWrites}. */
export interface OwnField {
  readonly subject: string;
  readonly path: string;
  readonly value?: unknown;
  readonly replaced?: { readonly value?: unknown };
}

/** A file an earlier write-back replaced whole; see {@link OwnWrites}. */
export interface OwnFile {
  readonly file: string;
  readonly content: string;
  readonly replaced?: string;
}

export interface ManifestEdits {
  /** New contents of the files that changed. */
  readonly files: Map<string, string>;
  /** Subjects whose changes are now in the files (including those already there). */
  readonly written: string[];
  /** What these edits wrote that Git did not have: the next write-back's `earlier`. */
  readonly wrote: { fields: OwnField[]; files: OwnFile[] };
  readonly conflicts: WriteBackConflict[];
  /** Objects that could not be written at all. */
  readonly refused: { readonly subject: string; readonly error: string }[];
}

/**
 * Applies `changes` to the files `read` returns (undefined: no such file). `earlier`: what
 * write-backs the compared revision does not hold yet wrote, which Git holding is no conflict.
 */
export function editManifests(
  read: (file: string) => string | undefined,
  changes: readonly WriteBackChange[],
  earlier: OwnWrites = { fields: [], files: [] },
): ManifestEdits {
  const files = new Map<string, string>();
  const written: string[] = [];
  const conflicts: WriteBackConflict[] = [];
  const refused: { subject: string; error: string }[] = [];
  const wrote: ManifestEdits['wrote'] = { fields: [], files: [] };
  const byFile = new Map<string, WriteBackChange[]>();
  for (const change of changes) {
    const ofFile = byFile.get(change.file);
    if (ofFile) ofFile.push(change);
    else byFile.set(change.file, [change]);
  }

  for (const [file, fileChanges] of byFile) {
    if (fileChanges.some((change) => change.replace !== undefined)) {
      const current = read(file);
      replaceFile(file, current, earlier.files, fileChanges, {
        files,
        written,
        conflicts,
        refused,
      });
      const content = files.get(file);
      // Replaced only where Git held the file (as compared, or as a write-back wrote it).
      if (content !== undefined && current !== undefined) {
        wrote.files.push({ file, content, replaced: digestOf(current) });
      }
      continue;
    }
    const adds = fileChanges.filter((change) => change.add !== undefined);
    // Objects added by a write-back not synced yet and changed in the cluster since: edited.
    const again: WriteBackChange[] = [];
    if (adds.length > 0) {
      // Objects new to Git: appended to their file (made when missing) as documents of their own.
      const added = addDocuments(file, read(file), adds, earlier.fields, {
        written,
        wrote,
        conflicts,
        refused,
        again,
      });
      if (added !== undefined) files.set(file, added);
    }
    const edits = [...fileChanges.filter((change) => change.add === undefined), ...again];
    if (edits.length === 0) continue;
    const text = files.get(file) ?? read(file);
    if (text === undefined) {
      for (const change of edits) {
        refused.push({ subject: change.subject, error: `${file} is no longer in Git` });
      }
      continue;
    }
    if (isHelmTemplate(file, text)) {
      // Refused before its documents are looked at: a template can parse as YAML (`a: {{ x }}`
      // is a map), and its literal fields would be edited, its templated ones seen as conflicts.
      for (const change of edits) {
        refused.push({ subject: change.subject, error: helmTemplate(file, change) });
      }
      continue;
    }
    const documents = parseDocuments(text);
    const edited = new Set<number>();
    for (const change of edits) {
      const index = documentOf(documents, change);
      if (index === undefined) {
        refused.push({
          subject: change.subject,
          error: `${file} has no document for ${change.subject} any more`,
        });
        continue;
      }
      const document = documents[index]!;
      let changed = false;
      const ours = earlier.fields.filter((write) => write.subject === change.subject);
      for (const field of change.fields) {
        const outcome = editField(document, field, ours);
        if (typeof outcome === 'object') {
          changed = true;
          wrote.fields.push({
            subject: change.subject,
            path: field.path,
            ...(field.value === undefined ? {} : { value: field.value }),
            replaced: outcome.replaced === undefined ? {} : { value: outcome.replaced },
          });
        } else if (outcome !== 'same') {
          conflicts.push({ subject: change.subject, path: field.path, message: outcome });
        }
      }
      if (changed) edited.add(index);
      written.push(change.subject);
    }
    if (edited.size > 0) files.set(file, spliced(file, text, documents, edited));
  }
  return { files, written, wrote, conflicts, refused };
}

/**
 * Replaces `file` whole (a SOPS-encrypted file encrypted again), and only if Git still has it
 * as it was compared, or as the write-backs of `earlier` not synced yet left it. The objects
 * of one file come encrypted together, each change carrying the same file; a change that does
 * not (a field edit, a file encrypted for another object alone) is refused naming the file,
 * never dropped.
 */
function replaceFile(
  file: string,
  current: string | undefined,
  earlier: OwnWrites['files'],
  changes: readonly WriteBackChange[],
  into: Pick<ManifestEdits, 'files' | 'written' | 'conflicts' | 'refused'>,
): void {
  const first = changes.find((change) => change.replace !== undefined)!;
  const { content, base } = first.replace!;
  const ours = ownFile(file, base, earlier);
  const together = changes.filter(
    (change) => change.replace?.content === content && change.replace.base === base,
  );
  for (const change of changes) {
    if (together.includes(change)) continue;
    into.refused.push({
      subject: change.subject,
      error: `${file} is written whole, encrypted again with the change of ${first.subject}, which does not hold the change of ${change.subject}: not written back`,
    });
  }
  // Git holding `content` already (a write-back of the same values before): nothing to commit.
  if (current !== content) {
    if (current !== base && (ours === undefined || current !== ours)) {
      for (const change of together) {
        into.conflicts.push({
          subject: change.subject,
          path: '',
          message: `Git changed ${file} since the revision compared with: Git wins`,
        });
      }
      return;
    }
    into.files.set(file, content);
  }
  into.written.push(...together.map((change) => change.subject));
}

/**
 * What Git holds of `file` when only write-backs replaced it since the revision compared with,
 * which had it as `base`: the content the last of `earlier` made over what the revision (or the
 * write before it) held; undefined when none did.
 */
function ownFile(file: string, base: string, earlier: OwnWrites['files']): string | undefined {
  let content = base;
  let touched = false;
  for (const write of earlier) {
    if (write.file !== file) continue;
    if (write.replaced !== undefined && write.replaced !== digestOf(content)) continue;
    content = write.content;
    touched = true;
  }
  return touched ? content : undefined;
}

/** The SHA-256 of a file's text: what a write-back kept of the file it replaced. */
function digestOf(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** Whether `file` is a local chart's template (`{{ ... }}`): Helm renders the object from it. */
function isHelmTemplate(file: string, text: string): boolean {
  return /(?:^|\/)templates\//.test(file) && text.includes('{{');
}

/** Why an object rendered from the Helm template `file` is not written back. */
function helmTemplate(file: string, change: WriteBackChange): string {
  return `${file} is a Helm template, not ${change.subject} as applied: objects rendered by Helm or kustomize cannot be written back; change it in the chart or its values`;
}

/** The line break of `text`: `\r\n` when it has any (a file written on Windows), else `\n`. */
function lineBreakOf(text: string): string {
  return text.includes('\r\n') ? '\r\n' : '\n';
}

/** Whether `file` is JSON, to be kept JSON. */
function isJsonFile(file: string): boolean {
  return /\.json$/i.test(file);
}

/** Printing options for what is written anew: no folding of long lines, whatever their length. */
const PRINT: ToStringOptions = { lineWidth: 0 };

/**
 * `text` (undefined: a new file) with a document per object of `adds` that
 * it does not hold yet; undefined when nothing was added. An object a
 * write-back of `earlier` added (not synced yet) and the cluster changed
 * since goes to `into.again`, as the changes of its fields.
 */
function addDocuments(
  file: string,
  text: string | undefined,
  adds: readonly WriteBackChange[],
  earlier: OwnWrites['fields'],
  into: Pick<ManifestEdits, 'written' | 'wrote' | 'conflicts' | 'refused'> & {
    readonly again: WriteBackChange[];
  },
): string | undefined {
  const documents = text === undefined ? [] : parseDocuments(text);
  let out = text ?? '';
  for (const change of adds) {
    const index = documentOf(documents, change);
    if (index !== undefined) {
      // Written there by an earlier write-back not synced yet (the drift check still compares
      // with the revision before it): already done, or its fields changed in the cluster since
      // (each written as any field is, Git winning those someone changed). Else someone added
      // it meanwhile: Git wins.
      const inGit = documents[index]!.toJS() as unknown;
      const ours = earlier.filter((write) => write.subject === change.subject);
      if (isDeepStrictEqual(inGit, change.add)) into.written.push(change.subject);
      else if (ownValue({ path: '' }, ours) !== undefined) {
        const { add, ...rest } = change;
        into.again.push({ ...rest, fields: differences(inGit, add) });
      } else {
        into.conflicts.push({
          subject: change.subject,
          path: '',
          message: `${file} already holds it, not as the cluster has it: Git wins`,
        });
      }
      continue;
    }
    if (isJsonFile(file)) {
      // A JSON file holds one object: no second document can follow it.
      if (out !== '') {
        into.refused.push({
          subject: change.subject,
          error: `${file} is a JSON file holding an object already; writeBack.path must name a file of its own for each object`,
        });
        continue;
      }
      out = `${JSON.stringify(change.add, null, 2)}\n`;
    } else {
      const document = new Document(change.add);
      quoteForYaml11(document);
      // Breaking lines as the file does.
      const eol = lineBreakOf(out);
      const printed = document.toString(PRINT).replace(/\n/g, eol);
      out = out === '' ? printed : `${out.replace(/(?:\r?\n)*$/, eol)}---${eol}${printed}`;
    }
    into.written.push(change.subject);
    // Kept as Driftless' own until synced: the whole object, where Git had none.
    into.wrote.fields.push({ subject: change.subject, path: '', value: change.add, replaced: {} });
  }
  return out === (text ?? '') ? undefined : out;
}

/**
 * The fields by which `after` differs from `before`, as JSON pointers with `after`'s value
 * (absent: removed): maps compared key by key, anything else (a list) whole.
 */
function differences(before: unknown, after: unknown, path = ''): WriteBackChange['fields'] {
  const isMapValue = (value: unknown): value is Record<string, unknown> =>
    value !== null && typeof value === 'object' && !Array.isArray(value);
  if (isDeepStrictEqual(before, after)) return [];
  if (!isMapValue(before) || !isMapValue(after)) {
    return [{ path, ...(after === undefined ? {} : { value: after }) }];
  }
  const keys = [...new Set([...Object.keys(after), ...Object.keys(before)])];
  return keys.flatMap((key) =>
    differences(before[key], after[key], `${path}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`),
  );
}

/** The file's documents, each node knowing where in `text` it was written (its `range`). */
function parseDocuments(text: string): Document.Parsed[] {
  return [...new Composer().compose(new Parser().parse(text))];
}

/** The document holding the object: same kind, name and (when written) namespace. */
function documentOf(
  documents: readonly Document.Parsed[],
  change: WriteBackChange,
): number | undefined {
  const index = documents.findIndex((document) => {
    // Not YAML (a Helm template): no object written in it.
    if (document.errors.length > 0) return false;
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

/**
 * What Git held in the field it changed (absent: unset), `same` (Git already has the cluster's
 * value), or why the field is left. `ours`: the object's fields earlier write-backs not synced
 * yet wrote.
 */
function editField(
  document: Document.Parsed,
  field: WriteBackChange['fields'][number],
  ours: OwnWrites['fields'],
): { readonly replaced: unknown } | 'same' | string {
  const path = pathIn(document, tokensOf(field.path));
  const shared = sharedNode(document, path);
  if (shared !== undefined) return shared;
  const node = document.getIn(path, true);
  const current = isNode(node) ? node.toJSON() : valueless(document, path) ? null : node;
  if (isDeepStrictEqual(current, field.value)) return 'same';
  const written = ownValue(field, ours);
  if (
    !isDeepStrictEqual(current, field.base) &&
    !(written !== undefined && isDeepStrictEqual(current, written.value))
  ) {
    return typeof current === 'string' && current.includes('${')
      ? 'Git sets it with a ${variable}: not written back'
      : 'Git changed it since the revision compared with: Git wins';
  }
  if (field.value === undefined) document.deleteIn(path);
  else setField(document, path, field.value);
  return { replaced: current };
}

/** A JSON pointer's tokens (RFC 6901: `~1` is `/`, `~0` is `~`). */
function tokensOf(pointer: string): string[] {
  return pointer
    .split('/')
    .slice(1)
    .map((token) => token.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/**
 * What Git holds at `field.path` when only write-backs changed it since the revision compared
 * with: that revision's value (`field.base`) with each of `ours` written at, above or below the
 * path put in, oldest first — each only when made over what it holds there by then (its
 * `replaced`; see the module comment); undefined when none of them was.
 */
function ownValue(
  field: Pick<WriteBackChange['fields'][number], 'path' | 'base'>,
  ours: OwnWrites['fields'],
): { readonly value: unknown } | undefined {
  const at = tokensOf(field.path);
  let value = field.base;
  let touched = false;
  for (const write of ours) {
    const tokens = tokensOf(write.path);
    const common = Math.min(tokens.length, at.length);
    if (tokens.slice(0, common).some((token, index) => token !== at[index])) continue;
    // Above the path (or at it): what it wrote there. Below: put into the value.
    const above = tokens.length <= at.length;
    const below = tokens.slice(at.length);
    if (write.replaced !== undefined) {
      const held = above ? value : below.reduce(stepInto, value);
      const over = above
        ? at.slice(tokens.length).reduce(stepInto, write.replaced.value)
        : write.replaced.value;
      if (!isDeepStrictEqual(held, over)) continue;
    }
    value = above
      ? at.slice(tokens.length).reduce(stepInto, write.value)
      : withValueAt(value, below, write.value);
    touched = true;
  }
  return touched ? { value } : undefined;
}

/** The value under `token` of a map, or undefined. */
function stepInto(value: unknown, token: string): unknown {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)[token]
    : undefined;
}

/**
 * Whether `path` is a key Git writes without a value (`{a, b: x}`, `? a`): null,
 * as every YAML reader takes it, though the library holds no node for it.
 */
function valueless(document: Document.Parsed, path: readonly (string | number)[]): boolean {
  return document.getIn(path, true) === undefined && document.hasIn(path);
}

/**
 * Why the field at `path` is not written back when Git writes it once for
 * several places, else undefined: through an alias (`*x`) — the field's own
 * node, a map or list holding it, or a merge key (`<<: *x`) it comes from —
 * or in a node anchored (`&x`) and aliased elsewhere, which would change
 * there too (or leave an alias to nothing).
 */
function sharedNode(
  document: Document.Parsed,
  path: readonly (string | number)[],
): string | undefined {
  const aliased = new Set<string>();
  visit(document, {
    Alias: (_key, alias) => {
      aliased.add(alias.source);
    },
  });
  const refused = (how: string) =>
    `Git writes it ${how}: a YAML anchor and its aliases share one value, so it is not written back; change it in Git`;
  for (let depth = 0; depth <= path.length; depth++) {
    const node = document.getIn(path.slice(0, depth), true);
    // Written without a value: nothing shared, nothing below it.
    if (valueless(document, path.slice(0, depth))) return undefined;
    if (node === undefined) {
      // Not written here: a merge key of the map above may bring it.
      const parent = depth > 0 ? document.getIn(path.slice(0, depth - 1), true) : undefined;
      return isMap(parent) && merged(document, parent, path[depth - 1]!)
        ? refused('through a merge key (<<: *alias)')
        : undefined;
    }
    if (isAlias(node)) return refused(`through the alias *${node.source}`);
    if (!isNode(node)) return undefined;
    if (node.anchor !== undefined && aliased.has(node.anchor)) {
      return refused(`with the anchor &${node.anchor}, used by *${node.anchor}`);
    }
  }
  // What the field holds is replaced or removed with it.
  let inside: string | undefined;
  const target = document.getIn(path, true);
  if (isNode(target)) {
    visit(target, {
      Alias: (_key, alias) => {
        inside = `holding the alias *${alias.source}`;
        return visit.BREAK;
      },
      Node: (_key, node) => {
        if (node.anchor === undefined || !aliased.has(node.anchor)) return undefined;
        inside = `holding the anchor &${node.anchor}, used by *${node.anchor}`;
        return visit.BREAK;
      },
    });
  }
  return inside === undefined ? undefined : refused(inside);
}

/** Whether `map` gets `key` from a map its merge key (`<<: *x`, `<<: [*x, *y]`) names. */
function merged(
  document: Document.Parsed,
  map: YAMLMap,
  key: string | number,
  seen = new Set<YAMLMap>([map]),
): boolean {
  return map.items.some((pair) => {
    if (!isScalar(pair.key) || pair.key.value !== '<<') return false;
    const sources = isSeq(pair.value) ? pair.value.items : [pair.value];
    return sources.some((source) => {
      const from = isAlias(source) ? source.resolve(document) : source;
      if (!isMap(from) || seen.has(from)) return false;
      seen.add(from);
      return from.has(key) || merged(document, from, key, seen);
    });
  });
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
function setField(document: Document.Parsed, fieldPath: (string | number)[], value: unknown): void {
  const node = document.getIn(fieldPath, true);
  if (isScalar(node) && (value === null || typeof value !== 'object')) {
    node.value = value;
    quoteIfNeeded(node);
    return;
  }
  // A key on the way that Git leaves empty (`annotations:`) or holding a scalar is given the
  // rest of the path as its value: the library sets nothing below a scalar.
  let path = fieldPath;
  let nested = value;
  for (let depth = 1; depth < fieldPath.length; depth++) {
    const step = document.getIn(fieldPath.slice(0, depth), true);
    if (step === undefined) break;
    if (isScalar(step)) {
      path = fieldPath.slice(0, depth);
      nested = fieldPath
        .slice(depth)
        .reduceRight((inner: unknown, key) => ({ [String(key)]: inner }), value);
      break;
    }
  }
  const created = document.createNode(nested);
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

/** Text that replaces `[from, to)` of the file: an insertion when both are equal. */
interface Splice {
  readonly from: number;
  readonly to: number;
  readonly text: string;
}

/**
 * The file with the edited documents' changes spliced in: only the text of
 * the fields that changed is replaced, every other byte stays.
 */
function spliced(
  file: string,
  text: string,
  documents: readonly Document.Parsed[],
  edited: ReadonlySet<number>,
): string {
  // Compared with the file as parsed before the edits, node by node.
  const original = parseDocuments(text);
  const splices: Splice[] = [];
  for (const index of edited) {
    const before = original[index]!.contents;
    const after = documents[index]!.contents;
    if (!isMap(before) || !isMap(after)) continue;
    const splicer = new Splicer(text, layoutOf(file, text, before));
    splicer.map(before, after);
    splices.push(...splicer.splices);
  }
  // By position; an insertion before a removal that starts where it is (sort is stable).
  splices.sort((a, b) => a.from - b.from || a.to - b.to);
  // What is printed anew breaks its lines as the file does.
  const eol = lineBreakOf(text);
  let out = '';
  let at = 0;
  for (const splice of splices) {
    out += text.slice(at, splice.from) + splice.text.replace(/\n/g, eol);
    at = splice.to;
  }
  return out + text.slice(at);
}

/** How a document is written, so that what is printed anew looks like its neighbours. */
interface Layout {
  /** A JSON file: everything printed as JSON. */
  readonly json: boolean;
  /** One level of block collections (spaces), or of a JSON document's lines (spaces or tabs). */
  readonly indent: string;
  /** Whether a block list under a key is indented (`key:\n  - a`) or not (`key:\n- a`). */
  readonly indentSeq: boolean;
  /** Whether flow collections are padded, `{ a: b }`, rather than `{a: b}`. */
  readonly flowPadding: boolean;
}

/** The layout of `root`'s document, read from the first collections that show it. */
function layoutOf(file: string, text: string, root: YAMLMap): Layout {
  const column = (offset: number) => offset - lineStart(text, offset);
  let indent: string | undefined;
  let indentSeq: boolean | undefined;
  let flowPadding: boolean | undefined;
  visit(root, {
    Pair: (_key, pair, path) => {
      const parent = path.at(-1);
      const keyAt = isScalar(pair.key) ? pair.key.range?.[0] : undefined;
      if (!isMap(parent) || parent.flow || keyAt === undefined) return;
      const value = pair.value;
      if (indent === undefined && isMap(value) && !value.flow) {
        const first = value.items[0]?.key;
        const at = isScalar(first) ? first.range?.[0] : undefined;
        if (at !== undefined && column(at) > column(keyAt)) {
          indent = ' '.repeat(column(at) - column(keyAt));
        }
      }
      if (indentSeq === undefined && isSeq(value) && !value.flow && value.range) {
        indentSeq = column(value.range[0]) > column(keyAt);
      }
    },
    Node: (_key, node) => {
      if (flowPadding !== undefined || !(isMap(node) || isSeq(node))) return;
      if (node.flow && node.items.length > 0 && node.range) {
        flowPadding = text[node.range[0] + 1] === ' ';
      }
    },
  });
  const json = isJsonFile(file);
  if (json) {
    // A pretty-printed JSON document: its first key is on a line of its own, indented.
    const first = root.items[0]?.key;
    const at = isScalar(first) ? first.range?.[0] : undefined;
    const start = root.range?.[0];
    if (at !== undefined && start !== undefined && lineStart(text, at) > start) {
      // As written, tabs included: what the key's line has more than the `{` line.
      const outer = text.slice(lineStart(text, start), start);
      const inner = text.slice(lineStart(text, at), at);
      if (inner.startsWith(outer) && /^[ \t]+$/.test(inner.slice(outer.length))) {
        indent = inner.slice(outer.length);
      }
    }
  }
  return {
    json,
    indent: indent ?? '  ',
    indentSeq: indentSeq ?? true,
    flowPadding: flowPadding ?? false,
  };
}

/** Where the line holding `offset` starts. */
function lineStart(text: string, offset: number): number {
  return text.lastIndexOf('\n', offset - 1) + 1;
}

/** Where the line holding `offset - 1` ends, after its line break (or the end of the text). */
function lineEnd(text: string, offset: number): number {
  if (offset > 0 && text[offset - 1] === '\n') return offset;
  const at = text.indexOf('\n', offset);
  return at < 0 ? text.length : at + 1;
}

/** Where the line break ending the line of `offset - 1` starts (`\r\n` or `\n`), or the text's end. */
function lineBreak(text: string, offset: number): number {
  let at = lineEnd(text, offset);
  if (text[at - 1] === '\n') at -= 1;
  if (text[at - 1] === '\r') at -= 1;
  return at;
}

/** A pair's key as a value (`data`, `80`), to match the pairs of two versions of a map. */
function keyOf(pair: Pair): unknown {
  return isScalar(pair.key) ? pair.key.value : pair.key;
}

/** Where a pair's key starts in the file. */
function keyStart(pair: Pair): number {
  return (pair.key as Node).range![0];
}

/** Where a pair starts in the file: at its key, or at the `?` of an explicit key (`? a`). */
function pairStart(text: string, pair: Pair): number {
  const start = keyStart(pair);
  const indicator = /\?[ \t]+$/.exec(text.slice(lineStart(text, start), start));
  return indicator === null ? start : start - indicator[0].length;
}

/** Where a pair's text ends in the file: after its value, or its key when it has none. */
function pairEnd(pair: Pair): number {
  const keyEnd = (pair.key as Node).range![1];
  const value = isNode(pair.value) ? pair.value.range?.[1] : undefined;
  return Math.max(keyEnd, value ?? keyEnd);
}

/**
 * The comments (`# …`) of `text`, a stretch of YAML holding no scalar (what lies between a
 * key and its value), each without the spacing before it.
 */
function commentsIn(text: string): string[] {
  return text.split(/\r?\n/).flatMap((line) => {
    const comment = /(?:^|[ \t])(#.*?)[ \t]*$/.exec(line);
    return comment === null ? [] : [comment[1]!];
  });
}

/** `text` with each line after the first indented by `lead` more (empty lines stay empty). */
function indented(text: string, lead: string): string {
  return text.replace(/\n(?=[^\n])/g, `\n${lead}`);
}

/** `value` as JSON on one line, spaced as people write it: `{"a": "1", "b": [1, 2]}`. */
function jsonLine(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(jsonLine).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}: ${jsonLine(v)}`);
    return `{${entries.join(', ')}}`;
  }
  return JSON.stringify(value ?? null);
}

/**
 * The splices that turn one document's root map, as parsed, into the same
 * map edited: changed values replaced where they are written, removed pairs
 * cut out with their lines, new pairs added after a map's last one.
 */
class Splicer {
  readonly splices: Splice[] = [];

  constructor(
    private readonly text: string,
    private readonly layout: Layout,
  ) {}

  /**
   * Splices for `after`, the edited version of `before`; false (nothing
   * spliced) when no pair of `before` stays to place the others by: the
   * caller then writes the map whole.
   */
  map(before: YAMLMap, after: YAMLMap): boolean {
    const now = new Map(after.items.map((pair) => [keyOf(pair), pair]));
    if (after.items.length === 0 || !before.items.some((pair) => now.has(keyOf(pair)))) {
      return false;
    }
    const kept = new Set(before.items.map(keyOf));
    let removed: Pair[] = [];
    for (const pair of before.items) {
      const edited = now.get(keyOf(pair));
      if (edited === undefined) {
        removed.push(pair);
        continue;
      }
      if (removed.length > 0) this.remove(before, removed);
      removed = [];
      this.value(before, pair, edited.value);
    }
    if (removed.length > 0) this.remove(before, removed);
    const added = after.items.filter((pair) => !kept.has(keyOf(pair)));
    if (added.length > 0) this.add(before, added);
    return true;
  }

  /** Splices for the value of `pair` (in `map`, as parsed), now `value`. */
  private value(map: YAMLMap, pair: Pair, value: unknown): void {
    const was = pair.value;
    // A key still without a value (`{a, b: x}`): nothing to write, `a` stays as it is.
    if (was == null && value == null) return;
    // The same node when it kept its place in the file; a new one has no range.
    if (isNode(was) && isNode(value) && was.range && value.range?.[0] === was.range[0]) {
      if (isMap(was) && isMap(value) && was.items.length > 0 && this.map(was, value)) return;
      if (isScalar(was) && isScalar(value)) {
        if (was.value === value.value && was.type === value.type) return;
      } else if (isDeepStrictEqual(was.toJSON(), value.toJSON())) return;
    }
    this.replace(map, pair, isNode(value) ? value : new Scalar(value));
  }

  /** Replaces the value of `pair` (in `map`, as parsed) with `value`. */
  private replace(map: YAMLMap, pair: Pair, value: Node): void {
    const { text, layout } = this;
    const key = pair.key as Node;
    const keyEnd = key.range![1];
    const was = (isNode(pair.value) ? pair.value.range : undefined) ?? undefined;
    if (map.flow || layout.json) {
      const printed = this.flow(value, this.lead(keyStart(pair)), this.multiline(map));
      if (was !== undefined && was[1] > was[0]) {
        this.splices.push({ from: was[0], to: was[1], text: printed });
      } else {
        // No value written (`{a}`, `{a: }`): the key gets one.
        this.splices.push({ from: keyEnd, to: pairEnd(pair), text: `: ${printed}` });
      }
      return;
    }
    const to = pairEnd(pair);
    // What follows the value on its line (a comment) must stay after it, not inside a block.
    const rest = lineBreak(text, to);
    const trailing = text.slice(to, rest);
    const endsLine = trailing.trim() === '';
    const start = pairStart(text, pair);
    let from = keyEnd;
    let printed: string;
    // Comments written between an explicit key and its value, kept on lines before the pair.
    let comments = '';
    if (start < keyStart(pair) || !/^[ \t]*:/.test(text.slice(keyEnd))) {
      // An explicit key (`? a`, its value on a `: …` line of its own): the pair is printed anew,
      // `a: value`, since a value spliced in after the key would make `a: value` the key.
      from = start;
      const lead = this.lead(start);
      printed = indented(this.block(this.fresh(key, false), value, endsLine), lead);
      const between = text.slice(keyEnd, was?.[0] ?? to);
      comments = commentsIn(between)
        .map((comment) => `${comment}\n${lead}`)
        .join('');
    } else {
      // Printed as a pair of the same column: `k: value`, or `k:` and indented lines.
      printed = indented(
        this.block(new Scalar('k'), value, endsLine).slice(1),
        this.lead(keyStart(pair)),
      );
      if (
        printed.startsWith(': ') &&
        was !== undefined &&
        was[1] > was[0] &&
        lineStart(text, was[0]) === lineStart(text, keyStart(pair))
      ) {
        // On the key's line: the key, its colon and spacing stay as written.
        from = was[0];
        printed = printed.slice(2);
      }
    }
    let end = to;
    if (!endsLine && printed.includes('\n')) {
      // `key: old # why` turning into several lines: the comment goes to the key's line.
      end = rest;
      const [first, ...lines] = printed.split('\n');
      printed = [`${first} ${trailing.trim()}`, ...lines].join('\n');
    } else if (!endsLine) {
      // An empty value's range may take the spacing before a comment (`a: # why`): the
      // spacing stays, else the value would run into the comment (`a: 3# why`, a string).
      while (end > from && /[ \t]/.test(text[end - 1]!)) end--;
    }
    // A block value's text ends with its line break: so does the new one's.
    if (text[end - 1] === '\n') printed += '\n';
    this.splices.push({ from, to: end, text: comments + printed });
  }

  /** Cuts out `pairs`, consecutive pairs of `map`, some of which stay. */
  private remove(map: YAMLMap, pairs: readonly Pair[]): void {
    const { text } = this;
    const first = map.items.indexOf(pairs[0]!);
    const last = first + pairs.length - 1;
    const next = map.items[last + 1];
    const start = pairStart(text, pairs[0]!);
    if (map.flow || this.layout.json) {
      // With the comma before them, or after them when they come first.
      const previous = map.items[first - 1];
      if (previous !== undefined) {
        this.splices.push({ from: pairEnd(previous), to: pairEnd(pairs.at(-1)!), text: '' });
      } else if (next !== undefined) {
        this.splices.push({ from: start, to: pairStart(text, next), text: '' });
      }
      return;
    }
    if (text.slice(lineStart(text, start), start).trim() === '') {
      // Whole lines, with their comments.
      const from = lineStart(text, start);
      this.splices.push({ from, to: lineEnd(text, pairEnd(pairs.at(-1)!)), text: '' });
    } else if (next !== undefined) {
      // The first pair of a list item (`- name: a`): the next pair takes its place.
      this.splices.push({ from: start, to: pairStart(text, next), text: '' });
    }
  }

  /** Adds `pairs` after the last pair of `map` (as parsed), on lines of their own in block style. */
  private add(map: YAMLMap, pairs: readonly Pair[]): void {
    const { text } = this;
    const last = map.items.at(-1)!;
    const end = pairEnd(last);
    if (map.flow || this.layout.json) {
      const multiline = this.multiline(map);
      const lead = this.lead(keyStart(last));
      const separator = multiline ? `,\n${lead}` : ', ';
      const printed = pairs.map((pair) => {
        const value = isNode(pair.value) ? pair.value : new Scalar(pair.value);
        const key = this.layout.json
          ? JSON.stringify(String(keyOf(pair)))
          : this.flow(pair.key as Node, lead, false);
        return `${separator}${key}: ${this.flow(value, lead, multiline)}`;
      });
      this.splices.push({ from: end, to: end, text: printed.join('') });
      return;
    }
    const lead = this.lead(pairStart(text, map.items[0]!));
    const lines = pairs.map((pair) => {
      const value = isNode(pair.value) ? pair.value : new Scalar(pair.value);
      return lead + indented(this.block(pair.key as Node, value, true), lead);
    });
    const at = lineEnd(text, end);
    const added = lines.join('\n');
    // At the very end of a file without a final line break, the break comes first.
    const ownLine = at === text.length && !text.endsWith('\n');
    this.splices.push({ from: at, to: at, text: ownLine ? `\n${added}` : `${added}\n` });
  }

  /**
   * What goes before a line printed at the column of `offset`: spaces, and
   * in a JSON file the tabs of the line as written there.
   */
  private lead(offset: number): string {
    const before = this.text.slice(lineStart(this.text, offset), offset);
    return before.replace(this.layout.json ? /[^\t]/g : /./g, ' ');
  }

  /** Whether a flow map is written over several lines (its last key not on its `{` line). */
  private multiline(map: YAMLMap): boolean {
    const last = map.items.at(-1);
    return (
      last !== undefined && lineStart(this.text, keyStart(last)) > (map.range?.[0] ?? Infinity)
    );
  }

  /**
   * `key: value` in block style at column 0, without its final line break.
   * `blockScalars`: whether a string may print as a `|` block (nothing follows it on its line).
   */
  private block(key: Node, value: Node, blockScalars: boolean): string {
    const map = new YAMLMap();
    map.items.push(new Pair(key, this.fresh(value, blockScalars)));
    const document = new Document();
    document.contents = map;
    const { indent, indentSeq, flowPadding } = this.layout;
    return document
      .toString({
        ...PRINT,
        indent: indent.length,
        indentSeq,
        flowCollectionPadding: flowPadding,
      })
      .replace(/\n$/, '');
  }

  /**
   * `value` as it is written inside a flow collection: JSON in a JSON file
   * (over indented lines when `multiline`, continuing after `lead`), else YAML
   * flow style.
   */
  private flow(value: Node, lead: string, multiline: boolean): string {
    const { json, indent, flowPadding } = this.layout;
    if (json) {
      const plain: unknown = value.toJSON();
      return multiline ? indented(JSON.stringify(plain, null, indent), lead) : jsonLine(plain);
    }
    const map = new YAMLMap();
    map.flow = true;
    map.items.push(new Pair(new Scalar('k'), this.fresh(value, false)));
    const document = new Document();
    document.contents = map;
    const printed = document.toString({ ...PRINT, flowCollectionPadding: flowPadding });
    // `{k: value}` (padded or not), on one line: the value alone.
    return printed.replace(/^\{ ?k: /, '').replace(/ ?\}\n$/, '');
  }

  /**
   * A scalar without the comments of the one it replaces (they stay in the
   * file where they are), in its style; a string of several lines in a
   * `|` block only where `blockScalars` allows, else double-quoted.
   */
  private fresh(value: Node, blockScalars: boolean): Node {
    if (!isScalar(value)) return value;
    const scalar = new Scalar(value.value);
    scalar.type = value.type;
    if (typeof value.value === 'string' && value.value.includes('\n')) {
      const block = value.type === Scalar.BLOCK_LITERAL || value.type === Scalar.BLOCK_FOLDED;
      if (!blockScalars) scalar.type = Scalar.QUOTE_DOUBLE;
      else if (!block) scalar.type = Scalar.BLOCK_LITERAL;
    }
    return scalar;
  }
}
