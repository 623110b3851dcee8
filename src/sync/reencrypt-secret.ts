/**
 * Two-way sync of a Secret (`syncTo: git`): never written to Git in plain
 * text. When the Secret's file is SOPS-encrypted in Git, the apply step —
 * the one holding the track's decryption keys — decrypts the file from the
 * stored artifact, puts the cluster's values in, and encrypts it again for
 * the same recipients (the file's own `sops` metadata), so only ciphertext
 * leaves it, in the write-back job. Anything else is refused.
 */
import type { KubeObject } from '../cluster/kube-object.ts';
import type { Track } from '../config/types.ts';
import { DriftlessError } from '../errors.ts';
import { addSecretValues, holdsSecretValue } from '../redact.ts';
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

/** The Secret's file encrypted anew with the cluster's values at `paths`; see the module comment. */
export async function reencryptedSecret(
  track: Pick<Track, 'name' | 'decryption'>,
  object: RenderedObject,
  live: KubeObject,
  paths: readonly string[],
  sources: readonly EncryptedSource[],
  deps: SecretDeps,
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
  const content = await sopsEncrypt(
    source.path,
    'yaml',
    Buffer.from(documents.map(String).join('')),
    recipientsOf(metadata),
    tool,
  );
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
