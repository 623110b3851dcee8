/**
 * The apply side of SOPS: a bundle whose objects hold ciphertexts -> the same
 * objects with plaintext, in memory only. Each encrypted source the fetch
 * step kept (render/sops-sources.ts) is decrypted once by the real `sops`
 * (render/sops.ts), which checks its MAC: a tampered value or metadata fails
 * the revision naming the file. Then every ciphertext in an object is
 * replaced by the plaintext of that very ciphertext, a Secret data value
 * that is a whole encrypted file by the file's plaintext, and the `sops`
 * metadata is dropped.
 *
 * The plaintexts come back too, so that everything this process prints or
 * stores can hide them (src/redact.ts).
 */
import { loadAll } from 'js-yaml';
import { mapWithLimit } from '../map-with-limit.ts';
import { DecryptionError } from './errors.ts';
import { isJsonObject } from './json-value.ts';
import { holdsCiphertext, isCiphertext, isSecret, visitStrings } from './sops-sources.ts';
import type { EncryptedSource, RenderedBundle } from './types.ts';
import { MANIFEST_SCHEMA } from './yaml-schema.ts';

/** Decrypts one source with the real sops: its plaintext, in the source's own format. */
export type DecryptSource = (source: EncryptedSource) => Promise<Buffer>;

export interface DecryptedBundle {
  readonly bundle: RenderedBundle;
  /** Every plaintext put in, for redaction. */
  readonly secretValues: readonly string[];
}

/** How many sops processes run at once. */
const CONCURRENCY = 4;

/** Ciphertext -> plaintext of one decrypted source, and the whole plaintext. */
interface Decrypted {
  readonly values: Map<string, unknown>;
  readonly whole: Buffer;
}

function parseDocuments(text: string, format: 'yaml' | 'json', path: string): unknown[] {
  try {
    return format === 'json'
      ? [JSON.parse(text) as unknown]
      : loadAll(text, null, { schema: MANIFEST_SCHEMA });
  } catch (error) {
    throw new DecryptionError(`${path}: cannot be read as ${format}`, { cause: error });
  }
}

/** Pairs each ciphertext of `encrypted` with the value at the same place in `plain`. */
export function pairValues(encrypted: unknown, plain: unknown, values: Map<string, unknown>): void {
  if (typeof encrypted === 'string') {
    if (isCiphertext(encrypted) && plain !== undefined) values.set(encrypted, plain);
    return;
  }
  if (Array.isArray(encrypted)) {
    if (!Array.isArray(plain)) return;
    encrypted.forEach((item, index) => pairValues(item, plain[index], values));
    return;
  }
  if (isJsonObject(encrypted) && isJsonObject(plain)) {
    for (const [key, item] of Object.entries(encrypted)) {
      if (key !== 'sops') pairValues(item, plain[key], values);
    }
  }
}

function dotenvValues(text: string): Map<string, string> {
  const entries = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const match = /^([^#=\s][^=]*)=(.*)$/.exec(line);
    if (match) entries.set(match[1]!, match[2]!);
  }
  return entries;
}

async function decryptSource(source: EncryptedSource, decrypt: DecryptSource): Promise<Decrypted> {
  const whole = await decrypt(source);
  const values = new Map<string, unknown>();
  const plain = whole.toString('utf8');
  switch (source.format) {
    case 'yaml':
    case 'json': {
      const encrypted = parseDocuments(source.content, source.format, source.path);
      const decrypted = parseDocuments(plain, source.format, source.path);
      encrypted.forEach((document, index) => pairValues(document, decrypted[index], values));
      break;
    }
    case 'dotenv': {
      const decrypted = dotenvValues(plain);
      for (const [key, value] of dotenvValues(source.content)) {
        if (isCiphertext(value) && decrypted.has(key)) values.set(value, decrypted.get(key));
      }
      break;
    }
    case 'binary': {
      const data = (JSON.parse(source.content) as { data?: unknown }).data;
      if (typeof data === 'string') values.set(data, plain);
      break;
    }
  }
  return { values, whole };
}

/** Plaintext as a Secret value or a field: strings as they are, numbers and booleans as SOPS typed them. */
export function asText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/**
 * `bundle` with its SOPS values decrypted; a bundle without encrypted sources
 * comes back as it is.
 */
export async function decryptBundle(
  bundle: RenderedBundle,
  decrypt: DecryptSource,
): Promise<DecryptedBundle> {
  const sources = bundle.encryptedSources ?? [];
  if (sources.length === 0) return { bundle, secretValues: [] };
  const decrypted = await mapWithLimit(sources, CONCURRENCY, (source) =>
    decryptSource(source, decrypt),
  );
  const values = new Map<string, unknown>();
  const wholeFiles = new Map<string, Buffer>();
  sources.forEach((source, index) => {
    const { values: own, whole } = decrypted[index]!;
    for (const [ciphertext, plain] of own) values.set(ciphertext, plain);
    wholeFiles.set(source.content, whole);
  });
  const secretValues = new Set<string>();

  const objects = bundle.objects.map((object) => {
    const manifest = structuredClone(object.manifest) as Record<string, unknown>;
    delete manifest.sops;
    if (isSecret(manifest)) dropDotenvMetadata(manifest);
    visitStrings(manifest, (value, path, encoded) => {
      if (!holdsCiphertext(value)) return undefined;
      const whole = encoded ? wholeFiles.get(value) : undefined;
      if (whole !== undefined) {
        secretValues.add(whole.toString('utf8'));
        return whole; // bytes as they are: a keystore is no text
      }
      if (values.has(value)) {
        const plain = values.get(value);
        secretValues.add(asText(plain));
        // A Secret's `data` value encrypted itself: its plaintext is base64; hide the text too.
        if (
          !encoded &&
          path.startsWith('data.') &&
          isSecret(manifest) &&
          typeof plain === 'string'
        ) {
          secretValues.add(Buffer.from(plain, 'base64').toString('utf8'));
        }
        // Numbers and booleans (SOPS type:int/float/bool) go back typed, except as Secret data.
        return encoded ? asText(plain) : plain;
      }
      throw new DecryptionError(
        `${object.subject} ${path}: holds a SOPS-encrypted value that none of the revision's encrypted files decrypts to`,
      );
    });
    return { ...object, manifest: manifest as typeof object.manifest };
  });
  const rest: RenderedBundle = { ...bundle, objects };
  delete (rest as { encryptedSources?: unknown }).encryptedSources;
  return { bundle: rest, secretValues: [...secretValues] };
}

/**
 * A `secretGenerator` over an encrypted `.env` also makes keys of its SOPS
 * metadata lines (`sops_mac`, `sops_version`, `sops_age__...`); they are not
 * the user's data.
 */
function dropDotenvMetadata(manifest: Record<string, unknown>): void {
  const data = manifest.data;
  if (!isJsonObject(data) || !('sops_mac' in data) || !('sops_version' in data)) return;
  for (const key of Object.keys(data)) if (key.startsWith('sops_')) delete data[key];
}
