/**
 * Two-way sync of a Secret (`syncTo: git`): never written to Git in plain
 * text. When the Secret's file is SOPS-encrypted in Git, the apply step —
 * the one holding the track's decryption keys — decrypts the file from the
 * stored artifact, puts the cluster's values in, and encrypts it again for
 * the same recipients (the file's own `sops` metadata), so only ciphertext
 * leaves it, in the write-back job. Anything else is refused.
 *
 * sops encrypts anew each time (a fresh data key, fresh IVs), so the same
 * values never give the same file twice. The ciphertext made for a Secret is
 * kept in the track's state, and a later check that finds the same values
 * hands it again: Git's copy from the write-back before (not synced yet)
 * then reads as already written, not as a change Git made meanwhile.
 */
import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { KubeObject } from '../cluster/kube-object.ts';
import type { Track } from '../config/types.ts';
import { DriftlessError } from '../errors.ts';
import { addSecretValues, holdsSecretValue } from '../redact.ts';
import { DecryptionError } from '../render/errors.ts';
import { DEFAULT_RENDER_LIMITS } from '../render/limits.ts';
import { rendererBinary } from '../render/renderer-binaries.ts';
import { recipientsOf, sopsDecrypt, sopsEncrypt } from '../render/sops.ts';
import type { EncryptedSource, RenderedObject } from '../render/types.ts';
import { changeOf, type WriteBackChange } from '../render/write-back-change.ts';
import type { SecretDeps } from './resolve-secrets.ts';

/** A Secret whose change cannot be written back encrypted. */
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

/**
 * The Secret's file encrypted anew with the cluster's values at `paths`, or `earlier` (made by
 * a check before, from the same file) again when it holds the same values; see the module
 * comment.
 */
export async function reencryptedSecret(
  track: Pick<Track, 'name' | 'decryption'>,
  object: RenderedObject,
  live: KubeObject,
  paths: readonly string[],
  sources: readonly EncryptedSource[],
  deps: SecretDeps,
  earlier?: ReencryptedFile,
): Promise<WriteBackChange> {
  const source = sources.find((candidate) => candidate.path === object.source.file);
  if (source === undefined) {
    throw new SecretNotWritableError(`${object.source.file} is not SOPS-encrypted in Git`);
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
  const document = documents.find((candidate) => {
    const value = candidate.toJS() as { kind?: unknown; metadata?: { name?: unknown } } | null;
    return value?.kind === 'Secret' && value.metadata?.name === object.name;
  });
  if (document === undefined) {
    throw new SecretNotWritableError(`${source.path} has no Secret ${object.name} any more`);
  }
  const liveData = (live['data'] ?? {}) as Record<string, string>;
  for (const path of paths) {
    const [field, ...rest] = path
      .split('/')
      .slice(1)
      .map((token) => token.replace(/~1/g, '/').replace(/~0/g, '~'));
    if ((field === 'data' || field === 'stringData') && rest.length === 1) {
      const key = rest[0]!;
      const value = liveData[key];
      // Written where Git keeps the key: stringData as text, data as base64.
      const asText = document.hasIn(['stringData', key]);
      if (value === undefined) {
        document.deleteIn(['stringData', key]);
        document.deleteIn(['data', key]);
      } else if (asText) {
        const text = Buffer.from(value, 'base64').toString('utf8');
        addSecretValues([text]);
        document.setIn(['stringData', key], text);
      } else {
        document.setIn(['data', key], value);
      }
    } else if (field !== undefined) {
      throw new SecretNotWritableError(`${path} of a Secret is not written back`);
    }
  }
  const metadata = (parseDocument(source.content).toJS() as { sops?: Record<string, unknown> })
    .sops;
  if (metadata === undefined) {
    throw new SecretNotWritableError(`${source.path} has no sops metadata`);
  }
  const reused =
    earlier !== undefined &&
    earlier.file === source.path &&
    earlier.base === digestOf(source.content) &&
    (await holdsSameValues(
      { ...source, content: earlier.content },
      documents.map((candidate) => candidate.toJS()),
      { ...tool, ageKeys, kmsKeys: decryption.kmsKeys },
      parseAllDocuments,
    ))
      ? earlier.content
      : undefined;
  const content =
    reused ??
    (await sopsEncrypt(
      source.path,
      'yaml',
      Buffer.from(documents.map(String).join('')),
      recipientsOf(metadata),
      tool,
    ));
  if (holdsSecretValue(plaintextOf(content, parseAllDocuments))) {
    // A key the file's encryption rule (encrypted_regex and the like) leaves in clear text.
    throw new SecretNotWritableError(
      `${source.path}: encrypted again, it would still hold a secret value in plain text (the file's sops rule does not encrypt every changed key)`,
    );
  }
  return {
    // The encrypted file is the object's own file (found by that path above).
    ...changeOf(object),
    fields: [],
    replace: { content, base: source.content },
  };
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
