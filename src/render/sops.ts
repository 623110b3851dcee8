/**
 * `sops decrypt` of one encrypted source with the real, pinned sops
 * (infra/renderers/sops): the format parsers, the data key unwrapping (age,
 * AWS KMS) and the MAC check are SOPS's own, never re-implemented.
 *
 * - The ciphertext goes to a private temporary file (it is what Git holds
 *   anyway); the plaintext only ever travels through a pipe into memory.
 * - age identities reach sops through `SOPS_AGE_KEY` in its environment only;
 *   its HOME is an empty directory, so no key file on the host is read.
 * - AWS KMS: sops gets the AWS variables of this process (the function's role
 *   credentials, a region, an endpoint override) and the network; a file
 *   without KMS recipients gets neither.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DecryptionError, RendererFailedError, RendererLimitError } from './errors.ts';
import { networkEnvironment, NO_NETWORK, runTool } from './run-tool.ts';
import type { EncryptedSource } from './types.ts';

export interface SopsOptions {
  readonly binary: string;
  /** age identities (`AGE-SECRET-KEY-1...`), one or more per entry, in `decryption.keys` order. */
  readonly ageKeys: readonly string[];
  /** KMS key ARNs the track allows (`decryption.kmsKeys`), for a helpful message. */
  readonly kmsKeys: readonly string[];
  readonly timeoutMs: number;
  /** Where AWS variables come from; default this process's environment. */
  readonly env?: NodeJS.ProcessEnv;
  /**
   * The job's deadline or interruption: sops is killed then, rather than left to run to its own
   * timeout after the job has stopped waiting for it (run-tool.ts).
   */
  readonly signal?: AbortSignal;
}

/** The AWS SDK settings sops (aws-sdk-go-v2) reads; nothing else of this process reaches it. */
const AWS_VARIABLES = [
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_REGION',
  'AWS_DEFAULT_REGION',
  'AWS_ENDPOINT_URL',
  'AWS_ENDPOINT_URL_KMS',
  'AWS_CONTAINER_CREDENTIALS_FULL_URI',
  'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
  'AWS_CONTAINER_AUTHORIZATION_TOKEN',
  'AWS_WEB_IDENTITY_TOKEN_FILE',
  'AWS_ROLE_ARN',
];

/** KMS key ARNs a SOPS file names in its metadata. */
export function kmsKeysOf(source: EncryptedSource): string[] {
  const arns = source.content.match(
    /arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:(?:key|alias)\/[A-Za-z0-9/_-]+/g,
  );
  return [...new Set(arns ?? [])];
}

/** The plaintext of `source`, in its own format; a {@link DecryptionError} naming the file otherwise. */
export async function sopsDecrypt(source: EncryptedSource, options: SopsOptions): Promise<Buffer> {
  const env = options.env ?? process.env;
  const kms = kmsKeysOf(source);
  if (options.ageKeys.length === 0 && kms.length === 0) {
    throw new DecryptionError(
      `${source.path}: is encrypted for none of the track's keys (no age key in decryption.keys, no AWS KMS recipient in the file)`,
    );
  }
  const dir = await mkdtemp(join(tmpdir(), 'driftless-sops-'));
  try {
    const file = join(dir, 'encrypted');
    await writeFile(file, source.content, { mode: 0o600 });
    const aws: Record<string, string> = {};
    if (kms.length > 0) {
      for (const name of AWS_VARIABLES) {
        const value = env[name];
        if (value) aws[name] = value;
      }
    }
    const type = source.format;
    return await runTool({
      tool: `sops decrypt ${source.path}`,
      binary: options.binary,
      args: ['decrypt', '--input-type', type, '--output-type', type, file],
      cwd: dir,
      env: {
        HOME: dir,
        PATH: '',
        ...(options.ageKeys.length > 0 ? { SOPS_AGE_KEY: options.ageKeys.join('\n') } : {}),
        ...aws,
        ...(kms.length > 0 ? networkEnvironment(env) : NO_NETWORK),
      },
      timeoutMs: options.timeoutMs,
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      // Plaintext is about as long as the ciphertext; the ciphertext bounds it.
      maxOutputBytes: Math.max(1024 * 1024, source.content.length * 2),
      describe: (text) => text.replaceAll(file, source.path).replaceAll(dir, '.'),
    });
  } catch (error) {
    if (error instanceof RendererFailedError || error instanceof RendererLimitError) {
      throw new DecryptionError(`${source.path}: ${explain(error.message, kms, options)}`, {
        cause: error,
      });
    }
    throw error;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

// An X25519 age identity: `AGE-SECRET-KEY-1` and 58 bech32 characters. Enough
// to tell which entry of decryption.keys sops could not read (a checksum typo
// passes it, and is then named as "an entry"), never to use it.
const AGE_IDENTITY = /^AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}$/;

/**
 * Whether each line of a decryption.keys entry looks like an age identity, as
 * age parses SOPS_AGE_KEY: blank and `#` lines skipped, plugin identities
 * left to sops.
 */
function readsAsAgeIdentities(entry: string): boolean {
  return entry
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .every((line) => line.startsWith('AGE-PLUGIN-') || AGE_IDENTITY.test(line));
}

/** sops's message, with what usually fixes it. */
function explain(message: string, kms: readonly string[], options: SopsOptions): string {
  const text = message.replace(/^sops decrypt [^:]+: /, '');
  // sops wraps its messages in `| ` lines; unwrapped, a phrase is on one line.
  const unwrapped = text.replace(/\s*\n\s*(?:\| )?/g, ' ');
  const unreadable = /failed to parse '[^']*' age identities(?:: (.*?)(?:\.\s|$))?/.exec(unwrapped);
  if (unreadable) {
    // Not sops's whole message: it is about SOPS_AGE_KEY, which the track never sets.
    const entries = options.ageKeys.flatMap((entry, index) =>
      readsAsAgeIdentities(entry) ? [] : [`decryption.keys[${index}]`],
    );
    const which = entries.length === 0 ? 'an entry of decryption.keys' : entries.join(', ');
    return `${which} cannot be read as an age identity${unreadable[1] ? ` (sops: ${unreadable[1]})` : ''}, so sops can use none of the track's age keys; an age key is the AGE-SECRET-KEY-1... line age-keygen prints`;
  }
  if (/MAC mismatch/i.test(text)) {
    return `the file's MAC does not match its content: a value or its metadata was changed after encryption (${text})`;
  }
  if (/0 successful groups required|failed to get the data key/i.test(text)) {
    const notListed = kms.filter((arn) => !options.kmsKeys.includes(arn));
    const kmsHint =
      notListed.length > 0
        ? `; its KMS key ${notListed.join(', ')} is not in decryption.kmsKeys, so the apply function may not use it`
        : '';
    return `none of the track's keys can decrypt it (decryption.keys holds ${options.ageKeys.length === 0 ? 'no' : 'other'} age identities${kmsHint}): ${text}`;
  }
  return text;
}

/** Who a SOPS file is encrypted for, and which of its values, as its metadata says. */
export interface SopsRecipients {
  readonly age: readonly string[];
  readonly kms: readonly string[];
  /** sops's `encrypted_regex`, `unencrypted_regex`, `encrypted_suffix` or `unencrypted_suffix`. */
  readonly selection?: { readonly flag: string; readonly value: string };
}

const SELECTIONS = [
  ['encrypted_regex', '--encrypted-regex'],
  ['unencrypted_regex', '--unencrypted-regex'],
  ['encrypted_suffix', '--encrypted-suffix'],
  ['unencrypted_suffix', '--unencrypted-suffix'],
] as const;

/** The recipients and value selection of an encrypted YAML or JSON file's `sops` metadata. */
export function recipientsOf(metadata: Readonly<Record<string, unknown>>): SopsRecipients {
  const list = (key: string, field: string): string[] => {
    const entries = metadata[key];
    return Array.isArray(entries)
      ? entries.flatMap((entry) => {
          const value = (entry as Record<string, unknown> | null)?.[field];
          return typeof value === 'string' ? [value] : [];
        })
      : [];
  };
  const selection = SELECTIONS.find(([key]) => typeof metadata[key] === 'string');
  return {
    age: list('age', 'recipient'),
    kms: list('kms', 'arn'),
    ...(selection
      ? { selection: { flag: selection[1], value: String(metadata[selection[0]]) } }
      : {}),
  };
}

/**
 * `sops encrypt` of a plaintext for `recipients` (two-way sync writing a
 * changed Secret back: encrypted for the same keys, the same values
 * encrypted). Only public recipients are needed, plus AWS access for KMS
 * ones.
 */
export async function sopsEncrypt(
  path: string,
  format: 'yaml' | 'json',
  plaintext: Buffer,
  recipients: SopsRecipients,
  options: Pick<SopsOptions, 'binary' | 'timeoutMs' | 'env'>,
): Promise<string> {
  if (recipients.age.length === 0 && recipients.kms.length === 0) {
    throw new DecryptionError(`${path}: its sops metadata names no age or AWS KMS recipient`);
  }
  const env = options.env ?? process.env;
  const aws: Record<string, string> = {};
  if (recipients.kms.length > 0) {
    for (const name of AWS_VARIABLES) {
      const value = env[name];
      if (value) aws[name] = value;
    }
  }
  // sops reads a file: the plaintext is in a private directory (0700, file 0600) for the
  // length of the run, then removed. (Node's stdin pipes are sockets, which sops cannot open.)
  const dir = await mkdtemp(join(tmpdir(), 'driftless-sops-'));
  try {
    const file = join(dir, 'plain');
    await writeFile(file, plaintext, { mode: 0o600 });
    const output = await runTool({
      tool: `sops encrypt ${path}`,
      binary: options.binary,
      args: [
        'encrypt',
        '--input-type',
        format,
        '--output-type',
        format,
        ...(recipients.age.length > 0 ? ['--age', recipients.age.join(',')] : []),
        ...(recipients.kms.length > 0 ? ['--kms', recipients.kms.join(',')] : []),
        ...(recipients.selection ? [recipients.selection.flag, recipients.selection.value] : []),
        '--filename-override',
        path,
        file,
      ],
      cwd: dir,
      env: {
        HOME: dir,
        PATH: '',
        ...aws,
        ...(recipients.kms.length > 0 ? networkEnvironment(env) : NO_NETWORK),
      },
      timeoutMs: options.timeoutMs,
      maxOutputBytes: Math.max(1024 * 1024, plaintext.length * 8),
      describe: (text) => text.replaceAll(file, path).replaceAll(dir, '.'),
    });
    return output.toString('utf8');
  } catch (error) {
    if (error instanceof RendererFailedError || error instanceof RendererLimitError) {
      throw new DecryptionError(`${path}: cannot encrypt it again: ${error.message}`, {
        cause: error,
      });
    }
    throw error;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
