/**
 * Serverless variable source: the AWS KMS keys the config's tracks may
 * decrypt SOPS files with (`tracks[].decryption.kmsKeys`), so that the apply
 * role is allowed kms:Decrypt on exactly those and no others.
 *
 *   ${file(infra/serverless/decryption-kms-keys.js):keys}      the ARNs
 *   ${file(infra/serverless/decryption-kms-keys.js):any}       'true' or 'false'
 *
 * It reads the same file the functions bundle (`--param config=...`), only
 * for this list; the functions validate the whole config when they load it.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { load } from 'js-yaml';

async function kmsKeys({ resolveVariable }) {
  const path = await resolveVariable('param:config');
  const config = load(await readFile(resolve(path), 'utf8')) ?? {};
  const tracks = Array.isArray(config.tracks) ? config.tracks : [];
  const keys = tracks.flatMap((track) => {
    const listed = track?.decryption?.kmsKeys;
    return Array.isArray(listed) ? listed.filter((key) => typeof key === 'string') : [];
  });
  return [...new Set(keys)].sort();
}

export async function keys(context) {
  return kmsKeys(context);
}

export async function any(context) {
  return (await kmsKeys(context)).length > 0 ? 'true' : 'false';
}
