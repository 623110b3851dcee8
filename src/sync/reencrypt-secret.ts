/**
 * Two-way sync of a Secret (`syncTo: git`): never written to Git in plain
 * text. When the Secret's file is SOPS-encrypted in Git, the apply step —
 * the one holding the track's decryption keys — decrypts the file from the
 * stored artifact, puts the cluster's values in, and encrypts it again for
 * the same recipients (the file's own `sops` metadata), so only ciphertext
 * leaves it, in the write-back job. Anything else is refused. Any other
 * object of a SOPS-encrypted file (a ConfigMap) is written the same way: its
 * changed fields spliced into the encrypted file would sit there in plain
 * text and break the file's MAC, so the next fetch could not decrypt it. The
 * objects of one file changed together go into one encryption of it, each
 * object's change carrying that file.
 *
 * What the file keeps encrypted is secret whatever the object's kind, as when
 * a revision is decrypted (render/decrypt-bundle.ts): the cluster's values
 * encrypted again, a ConfigMap's too, are hidden from then on in everything
 * this process prints or stores (src/redact.ts).
 *
 * sops encrypts anew each time (a fresh data key, fresh IVs), so the same
 * values never give the same file twice. The ciphertext made for a Secret is
 * kept in the track's state (for each Secret of the file), and a later check that finds the same values
 * hands it again: Git's copy from the write-back before (not synced yet)
 * then reads as already written, not as a change Git made meanwhile.
 */
import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { Document } from 'yaml';
import type { Track } from '../config/types.ts';
import { parsePointer, valueAt } from '../apply/json-pointer.ts';
import { DriftlessError, messageOf } from '../errors.ts';
import { addSecretValues, holdsSecretValue } from '../redact.ts';
import { asText, pairValues } from '../render/decrypt-bundle.ts';
import { DecryptionError } from '../render/errors.ts';
import { DEFAULT_RENDER_LIMITS } from '../render/limits.ts';
import { rendererBinary } from '../render/renderer-binaries.ts';
import { recipientsOf, sopsDecrypt, sopsEncrypt } from '../render/sops.ts';
import type { EncryptedSource } from '../render/types.ts';
import { changeOf, type WriteBackChange } from '../render/write-back-change.ts';
import type { ChangedObject } from '../drift/write-back-changes.ts';
import type { SecretDeps } from './resolve-secrets.ts';

/** An object (a Secret, or any object of an encrypted file) whose change cannot be written back encrypted. */
export class SecretNotWritableError extends DriftlessError {
  readonly code = 'SECRET_NOT_WRITABLE';
}

/**
 * A Secret's file as a drift check encrypted it again: which file, the SHA-256 of the file it
 * was made from (as the compared revision has it), and the ciphertext. Kept in the track's
 * state (ciphertext only) by subject.
 */
export interface ReencryptedFile {
  readonly file: string;
  readonly base: string;
  readonly content: string;
}

/** What to keep of `change`, a Secret's file encrypted again, for the next check. */
export function reencryptedFileOf(change: WriteBackChange): ReencryptedFile | undefined {
  return change.replace === undefined
    ? undefined
    : { file: change.file, base: digestOf(change.replace.base), content: change.replace.content };
}

function digestOf(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** What the encrypted objects of a drift check give to write back: a change each, or why not. */
export interface ReencryptedObjects {
  readonly changes: WriteBackChange[];
  /** Objects not written back, and why (naming the file). */
  readonly refused: { readonly subject: string; readonly reason: string }[];
}

/**
 * The changed `objects` (Secrets, and the other objects of encrypted files) as their files
 * encrypted anew with the cluster's values, one change per object. The objects of one file go
 * into one encryption of it (decrypted once, every object's values put in, encrypted once),
 * and each of their changes carries that same file: a file encrypted for each object would
 * hold only that object's values, and writing one would lose the others'. `earlier` (by
 * subject) is what checks before made, handed again when it holds the same values; see the
 * module comment.
 */
export async function reencryptedObjects(
  track: Pick<Track, 'name' | 'decryption'>,
  objects: readonly ChangedObject[],
  sources: readonly EncryptedSource[],
  deps: SecretDeps,
  earlier: Readonly<Record<string, ReencryptedFile>> = {},
): Promise<ReencryptedObjects> {
  const changes: WriteBackChange[] = [];
  const refused: { subject: string; reason: string }[] = [];
  const byFile = new Map<string, ChangedObject[]>();
  for (const changed of objects) {
    const file = changed.object.source.file;
    byFile.set(file, [...(byFile.get(file) ?? []), changed]);
  }
  for (const [file, group] of byFile) {
    const refusedHere = new Set<string>();
    const refuse = (subject: string, reason: string) => {
      refusedHere.add(subject);
      refused.push({ subject, reason });
    };
    try {
      changes.push(...(await reencryptedFile(track, file, group, sources, deps, earlier, refuse)));
    } catch (error) {
      // Nothing of the file is written: each object not refused for a reason of its own is
      // refused for this one, none left out.
      for (const { object } of group) {
        if (!refusedHere.has(object.subject)) refuse(object.subject, messageOf(error));
      }
    }
  }
  return { changes, refused };
}

/**
 * The changes of `group`, the changed objects of `file`, as that file encrypted anew once with
 * the values of all those `refuse` is not told of. Throws when the file cannot be written at all.
 */
async function reencryptedFile(
  track: Pick<Track, 'name' | 'decryption'>,
  file: string,
  group: readonly ChangedObject[],
  sources: readonly EncryptedSource[],
  deps: SecretDeps,
  earlier: Readonly<Record<string, ReencryptedFile>>,
  refuse: (subject: string, reason: string) => void,
): Promise<WriteBackChange[]> {
  const source = sources.find((candidate) => candidate.path === file);
  if (source === undefined) {
    throw new SecretNotWritableError(`${file} is not SOPS-encrypted in Git`);
  }
  if (source.format !== 'yaml') {
    throw new SecretNotWritableError(`${source.path}: only YAML files are encrypted again`);
  }
  const decryption = track.decryption;
  if (decryption === undefined || deps.readSecret === undefined) {
    throw new SecretNotWritableError(`track "${track.name}" cannot decrypt ${source.path} here`);
  }
  const read = deps.readSecret;
  const ageKeys = await Promise.all(decryption.keys.map((ref) => read(ref)));
  addSecretValues(ageKeys);
  const binary = rendererBinary('sops', `track ${track.name} (write-back)`, deps.env);
  const tool = {
    binary,
    timeoutMs: DEFAULT_RENDER_LIMITS.rendererTimeoutMs,
    ...(deps.env === undefined ? {} : { env: deps.env }),
  };
  const plaintext = await sopsDecrypt(source, { ...tool, ageKeys, kmsKeys: decryption.kmsKeys });
  // Loaded here: the comment-keeping YAML library is for write-back alone.
  const { parseAllDocuments, parseDocument } = await import('yaml');
  const documents = parseAllDocuments(plaintext.toString('utf8'));
  const written: ChangedObject[] = [];
  for (const changed of group) {
    const refusal = putValues(source.path, documents, changed);
    if (refusal === undefined) written.push(changed);
    else refuse(changed.object.subject, refusal);
  }
  if (written.length === 0) return [];
  const metadata = (parseDocument(source.content).toJS() as { sops?: Record<string, unknown> })
    .sops;
  if (metadata === undefined) {
    throw new SecretNotWritableError(`${source.path} has no sops metadata`);
  }
  const values = documents.map((document) => document.toJS());
  let content: string | undefined;
  // What a check before made of this file as it is now, one candidate per ciphertext.
  const candidates = new Set(
    group
      .map(({ object }) => earlier[object.subject])
      .filter((made) => made?.file === source.path && made.base === digestOf(source.content))
      .map((made) => made!.content),
  );
  for (const candidate of candidates) {
    const options = { ...tool, ageKeys, kmsKeys: decryption.kmsKeys };
    const encrypted = { ...source, content: candidate };
    if (await holdsSameValues(encrypted, values, options, parseAllDocuments)) {
      content = candidate;
      break;
    }
  }
  content ??= await sopsEncrypt(
    source.path,
    'yaml',
    Buffer.from(documents.map(String).join('')),
    recipientsOf(metadata),
    tool,
  );
  addSecretValues(encryptedValues(content, values, parseAllDocuments));
  if (holdsSecretValue(plaintextOf(content, parseAllDocuments))) {
    // A key the file's encryption rule (encrypted_regex and the like) leaves in clear text.
    throw new SecretNotWritableError(
      `${source.path}: encrypted again, it would still hold a secret value in plain text (the file's sops rule does not encrypt every changed key)`,
    );
  }
  const replace = { content, base: source.content };
  // The encrypted file is each object's own file (found by that path above).
  return written.map(({ object }) => ({ ...changeOf(object), fields: [], replace }));
}

/**
 * Puts the cluster's values of `changed` at its changed paths into its document of `documents`
 * (the decrypted `file`); why not, when it cannot be written back (then nothing is put in).
 */
function putValues(
  file: string,
  documents: readonly Document.Parsed[],
  changed: ChangedObject,
): string | undefined {
  const { object } = changed;
  const document = documents.find((candidate) => {
    const value = candidate.toJS() as {
      kind?: unknown;
      metadata?: { name?: unknown; namespace?: unknown };
    } | null;
    const namespace = value?.metadata?.namespace;
    return (
      value?.kind === object.kind &&
      value.metadata?.name === object.name &&
      (namespace === undefined || namespace === object.namespace)
    );
  });
  if (document === undefined) return `${file} has no ${object.kind} ${object.name} any more`;
  if (object.kind === 'Secret') return putSecretValues(file, document, changed);
  for (const path of changed.paths) {
    const tokens = parsePointer(path);
    const value = valueAt(changed.live, tokens);
    // Removed: deleteIn throws on a map missing on the way.
    if (value === undefined) {
      if (document.hasIn(tokens)) document.deleteIn(tokens);
    } else document.setIn(tokens, value);
  }
  return undefined;
}

/**
 * Puts a Secret's changed `data` and `stringData` keys into its `document`; why not, when
 * another field changed (then nothing is put in).
 */
function putSecretValues(
  file: string,
  document: Document.Parsed,
  { live, paths }: ChangedObject,
): string | undefined {
  const keys: { field: string; key: string }[] = [];
  for (const path of paths) {
    const [field, ...rest] = path
      .split('/')
      .slice(1)
      .map((token) => token.replace(/~1/g, '/').replace(/~0/g, '~'));
    if ((field === 'data' || field === 'stringData') && rest.length === 1) {
      keys.push({ field, key: rest[0]! });
    } else if (field !== undefined) {
      // Checked before any value is put in: a Secret is written back whole or not at all.
      return `${file}: ${path} of a Secret is not written back`;
    }
  }
  const liveData = (live['data'] ?? {}) as Record<string, string>;
  for (const { key } of keys) {
    const value = liveData[key];
    // Written where Git keeps the key: stringData as text, data as base64.
    const asText = document.hasIn(['stringData', key]);
    if (value === undefined) {
      // Removed in the cluster: from wherever Git keeps it (deleteIn throws on a missing map).
      for (const field of ['stringData', 'data']) {
        if (document.hasIn([field, key])) document.deleteIn([field, key]);
      }
    } else if (asText) {
      const text = Buffer.from(value, 'base64').toString('utf8');
      addSecretValues([text]);
      document.setIn(['stringData', key], text);
    } else {
      // Secret whether or not the file's rule encrypts it: one left in clear text is refused.
      addSecretValues([value, Buffer.from(value, 'base64').toString('utf8')]);
      document.setIn(['data', key], value);
    }
  }
  return undefined;
}

/**
 * Whether `encrypted` decrypts to `values` (each document's). An earlier ciphertext the keys
 * no longer open is simply not reused.
 */
async function holdsSameValues(
  encrypted: EncryptedSource,
  values: readonly unknown[],
  options: Parameters<typeof sopsDecrypt>[1],
  parseAllDocuments: (typeof import('yaml'))['parseAllDocuments'],
): Promise<boolean> {
  let plaintext: Buffer;
  try {
    plaintext = await sopsDecrypt(encrypted, options);
  } catch (error) {
    if (error instanceof DecryptionError) return false;
    throw error;
  }
  const decrypted = parseAllDocuments(plaintext.toString('utf8')).map((document) =>
    document.toJS(),
  );
  return isDeepStrictEqual(decrypted, values);
}

/**
 * The plaintext of each value `content` (a SOPS-encrypted YAML file) holds encrypted, `values`
 * being its documents decrypted.
 */
function encryptedValues(
  content: string,
  values: readonly unknown[],
  parseAllDocuments: (typeof import('yaml'))['parseAllDocuments'],
): string[] {
  const paired = new Map<string, unknown>();
  parseAllDocuments(content).forEach((document, index) =>
    pairValues(document.toJS(), values[index], paired),
  );
  return [...paired.values()].map(asText);
}

/**
 * What of a SOPS-encrypted YAML file is readable without the keys: the file without its
 * `sops` metadata (the encrypted data keys, the MAC) and without its `ENC[...]` values.
 */
function plaintextOf(
  content: string,
  parseAllDocuments: (typeof import('yaml'))['parseAllDocuments'],
): string {
  return parseAllDocuments(content)
    .map((document) => {
      document.delete('sops');
      return String(document);
    })
    .join('')
    .replace(/ENC\[[^\]]*\]/g, '');
}
