/**
 * The fetch side of SOPS: which encrypted files of a revision the rendered
 * objects take values from. Nothing is decrypted here — the fetch step has
 * no keys — and nothing is rewritten before rendering: kustomize and the
 * plain parser carry ciphertexts through as they would any string.
 *
 * How the apply step finds its way back (render/decrypt-bundle.ts): each SOPS
 * value is `ENC[AES256_GCM,data:...,iv:...,tag:...,type:...]` with a fresh IV,
 * so a ciphertext identifies one value of one file. An object's field, or a
 * Secret data value a `secretGenerator` made from an encrypted `.env`, that
 * is such a ciphertext came from the file that holds it; a Secret data value
 * that is a whole encrypted file came from `secretGenerator` `files:`. The
 * bundle keeps those files, still encrypted, and the apply step decrypts the
 * very text SOPS wrote — so SOPS verifies its MAC even when kustomize
 * reordered, prefixed or relabelled the object.
 */
import { posix } from 'node:path';
import { RenderRefusedError } from './errors.ts';
import { isJsonObject } from './json-value.ts';
import type { EncryptedSource, RenderedObject, RevisionFile, SopsFormat } from './types.ts';

/** One SOPS ciphertext, anywhere in a text. */
const CIPHERTEXT =
  /ENC\[AES256_GCM,data:[A-Za-z0-9+/=]*,iv:[A-Za-z0-9+/=]+,tag:[A-Za-z0-9+/=]+,type:[a-z]+\]/g;
const CIPHERTEXT_MARK = 'ENC[AES256_GCM,';

/** Whether `value` is exactly one SOPS ciphertext. */
export function isCiphertext(value: string): boolean {
  return value.startsWith(CIPHERTEXT_MARK) && value.endsWith(']');
}

/** Whether `text` holds a SOPS ciphertext anywhere. */
export function holdsCiphertext(text: string): boolean {
  return text.includes(CIPHERTEXT_MARK);
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
const MARK_BYTES = Buffer.from(CIPHERTEXT_MARK);

/** Whether any file of the revision holds a SOPS ciphertext: when none does, nothing here runs. */
export function revisionHoldsCiphertext(files: readonly RevisionFile[]): boolean {
  return files.some((file) =>
    Buffer.from(file.content.buffer, file.content.byteOffset, file.content.byteLength).includes(
      MARK_BYTES,
    ),
  );
}

function decodeBase64(value: string): string | undefined {
  try {
    return utf8.decode(Buffer.from(value, 'base64'));
  } catch {
    return undefined;
  }
}

/** A core/v1 Secret: its `data` values are base64. */
export function isSecret(manifest: Readonly<Record<string, unknown>>): boolean {
  return manifest.apiVersion === 'v1' && manifest.kind === 'Secret';
}

/**
 * Each string of an object's content as the apply step will see it, with its
 * path (for messages): Secret `data` values decoded, except a ciphertext,
 * which is visited as it is (`encoded` false). The top-level `sops`
 * metadata is not content. `visit` may return a replacement (for a data
 * value: text or bytes, encoded again); undefined keeps the string.
 */
export function visitStrings(
  manifest: Record<string, unknown>,
  visit: (value: string, path: string, encoded: boolean) => unknown,
): void {
  const secret = isSecret(manifest);
  const walk = (value: unknown, path: string, inData: boolean): unknown => {
    if (typeof value === 'string') {
      // A `data` value SOPS encrypted itself (`--encrypted-regex '^(data|stringData)$'`): its
      // plaintext is the base64 text Git held, and goes back as it is.
      if (inData && isCiphertext(value)) {
        const replaced = visit(value, path, false);
        return replaced === undefined ? value : replaced;
      }
      if (inData) {
        const decoded = decodeBase64(value);
        if (decoded === undefined) return value;
        const replaced = visit(decoded, path, true);
        if (replaced === undefined) return value;
        if (Buffer.isBuffer(replaced)) return replaced.toString('base64');
        const text = typeof replaced === 'string' ? replaced : JSON.stringify(replaced);
        return Buffer.from(text).toString('base64');
      }
      const replaced = visit(value, path, false);
      return replaced === undefined ? value : replaced;
    }
    if (Array.isArray(value)) {
      value.forEach((item, index) => {
        value[index] = walk(item, `${path}[${index}]`, false);
      });
      return value;
    }
    if (isJsonObject(value)) {
      for (const [key, item] of Object.entries(value)) {
        value[key] = walk(item, path === '' ? key : `${path}.${key}`, false);
      }
    }
    return value;
  };
  for (const [key, value] of Object.entries(manifest)) {
    if (key === 'sops') continue;
    if (secret && key === 'data' && isJsonObject(value)) {
      for (const [name, item] of Object.entries(value))
        value[name] = walk(item, `data.${name}`, true);
    } else {
      manifest[key] = walk(value, key, false);
    }
  }
}

/** How SOPS wrote `file`, or undefined when it is not a SOPS file Driftless can read. */
export function sopsFormatOf(path: string, text: string): SopsFormat | undefined {
  const extension = posix.extname(path).toLowerCase();
  if (extension === '.env' || /^sops_mac=/m.test(text)) return 'dotenv';
  if (extension === '.yaml' || extension === '.yml')
    return /^sops:/m.test(text) ? 'yaml' : undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    if (!isJsonObject(parsed) || !isJsonObject(parsed.sops)) return undefined;
    // `sops encrypt --input-type binary` writes {"data": "ENC[...]", "sops": {...}}.
    const keys = Object.keys(parsed).sort().join(',');
    return keys === 'data,sops' && extension !== '.json' ? 'binary' : 'json';
  } catch {
    return undefined;
  }
}

/** What the rendered objects hold that came from SOPS: ciphertexts and whole encrypted files. */
interface EncryptedContent {
  /** Ciphertext -> the first object and path holding it, for messages. */
  readonly ciphertexts: Map<string, string>;
  /** Secret data values holding a ciphertext inside a longer text (a `files:` generator input). */
  readonly embedded: Map<string, string>;
}

function encryptedContentOf(objects: readonly RenderedObject[]): EncryptedContent {
  const ciphertexts = new Map<string, string>();
  const embedded = new Map<string, string>();
  for (const object of objects) {
    visitStrings(object.manifest as Record<string, unknown>, (value, path, encoded) => {
      if (!holdsCiphertext(value)) return undefined;
      const where = `${object.subject} ${path}`;
      if (isCiphertext(value)) {
        if (!ciphertexts.has(value)) ciphertexts.set(value, where);
      } else if (encoded) {
        if (!embedded.has(value)) embedded.set(value, where);
      } else {
        ciphertexts.set(value, where); // reported below: part of a string, not a value of its own
      }
      return undefined;
    });
  }
  return { ciphertexts, embedded };
}

/** Why SOPS values cannot be used as rendered, or undefined. */
export interface SopsRenderOptions {
  /** Whether the track has `decryption:` set. */
  readonly decryption: boolean;
  readonly trackName: string;
}

/**
 * The encrypted files `objects` take values from, for the bundle. Refuses
 * SOPS values on a track without `decryption:`, and values no file of the
 * revision holds (they could never be decrypted).
 */
export function encryptedSourcesOf(
  files: readonly RevisionFile[],
  objects: readonly RenderedObject[],
  options: SopsRenderOptions,
): EncryptedSource[] {
  const content = encryptedContentOf(objects);
  if (content.ciphertexts.size === 0 && content.embedded.size === 0) return [];
  const sources: EncryptedSource[] = [];
  const covered = new Set<string>();
  for (const file of files) {
    let text: string;
    try {
      text = utf8.decode(file.content);
    } catch {
      continue;
    }
    if (!holdsCiphertext(text)) continue;
    const format = sopsFormatOf(file.path, text);
    if (format === undefined) continue;
    const inFile = text.match(CIPHERTEXT) ?? [];
    const used = content.embedded.has(text) || inFile.some((c) => content.ciphertexts.has(c));
    if (!used) continue;
    if (content.embedded.has(text)) covered.add(text);
    for (const ciphertext of inFile) covered.add(ciphertext);
    sources.push({ path: file.path, format, content: text });
  }
  const first = sources[0];
  if (!options.decryption) {
    const where = first?.path ?? [...content.ciphertexts.values(), ...content.embedded.values()][0];
    throw new RenderRefusedError(
      where ?? 'revision',
      `is encrypted with SOPS, but track "${options.trackName}" has no decryption: set decryption: {provider: sops, keys: [<age key ref>]} (or kmsKeys for AWS KMS)`,
    );
  }
  for (const [ciphertext, where] of content.ciphertexts) {
    if (covered.has(ciphertext)) continue;
    throw new RenderRefusedError(
      where,
      isCiphertext(ciphertext)
        ? 'holds a SOPS-encrypted value that no encrypted file of the revision holds (copied from elsewhere, or its file was re-encrypted); it could never be decrypted'
        : 'holds SOPS ciphertext inside a longer string; encrypted values must be whole values',
    );
  }
  for (const [text, where] of content.embedded) {
    if (!covered.has(text)) {
      throw new RenderRefusedError(
        where,
        'holds an encrypted file that is not in the revision; it could never be decrypted',
      );
    }
  }
  return sources.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}
