/**
 * SOPS fixtures made by the real tools: age keys from the pinned
 * `age-keygen` (test/testbin/age) and files encrypted by the pinned `sops`
 * (infra/renderers/sops). No test carries a pre-encrypted blob: each one
 * encrypts what it needs, for keys it just generated.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { rendererBinaries } from './renderers.ts';
import { binaryFromVariable, buildComponents, isExecutable } from './testbin.ts';

const run = promisify(execFile);

let ageKeygenPath: Promise<string> | undefined;

/** The pinned age-keygen (`DRIFTLESS_AGE_KEYGEN` wins when set). */
export function ageKeygen(): Promise<string> {
  ageKeygenPath ??= (async () => {
    const explicit = binaryFromVariable('DRIFTLESS_AGE_KEYGEN', process.env);
    if (explicit) return explicit;
    const dir = (await buildComponents(['age'])).get('age');
    const path = dir === undefined ? '' : join(dir, 'age-keygen');
    if (!isExecutable(path))
      throw new Error(`test/testbin/build.sh age reported ${dir}, but ${path} is missing`);
    return path;
  })();
  return ageKeygenPath;
}

export interface AgeKey {
  /** `age1...`: what files are encrypted for. */
  readonly recipient: string;
  /** The `AGE-SECRET-KEY-1...` line: what decrypts them. */
  readonly identity: string;
}

/** A fresh age key pair from the real age-keygen. */
export async function generateAgeKey(): Promise<AgeKey> {
  const { stdout } = await run(await ageKeygen(), []);
  const identity = stdout.split('\n').find((line) => line.startsWith('AGE-SECRET-KEY-1'));
  const recipient = /# public key: (age1\S+)/.exec(stdout)?.[1];
  if (identity === undefined || recipient === undefined)
    throw new Error('age-keygen printed no key');
  return { recipient, identity };
}

export interface SopsEncryptOptions {
  readonly format: 'yaml' | 'json' | 'dotenv' | 'binary';
  /** age recipients to encrypt for. */
  readonly age?: readonly string[];
  /** AWS KMS key ARNs to encrypt for (with `env` pointing sops at the KMS endpoint). */
  readonly kms?: readonly string[];
  /** Only keys matching this are encrypted, e.g. `^(data|stringData)$` for Kubernetes Secrets. */
  readonly encryptedRegex?: string;
  readonly env?: Readonly<Record<string, string>>;
}

/** `plaintext` encrypted by the real `sops encrypt`, as it would be committed to Git. */
export async function sopsEncrypt(
  plaintext: string | Buffer,
  options: SopsEncryptOptions,
): Promise<string> {
  const { sops } = await rendererBinaries();
  const dir = await mkdtemp(join(tmpdir(), 'driftless-sops-fixture-'));
  try {
    const file = join(dir, 'plain');
    await writeFile(file, plaintext);
    const args = ['encrypt', '--input-type', options.format, '--output-type', options.format];
    if (options.age?.length) args.push('--age', options.age.join(','));
    if (options.kms?.length) args.push('--kms', options.kms.join(','));
    if (options.encryptedRegex) args.push('--encrypted-regex', options.encryptedRegex);
    args.push(file);
    const { stdout } = await run(sops, args, {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '', HOME: dir, ...options.env },
      maxBuffer: 64 * 1024 * 1024,
    });
    return stdout;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
