/**
 * Serverless variable source: facts of the bundled driftless.yaml that decide
 * IAM statements, so that each role is allowed exactly what the config needs:
 *
 *   ${file(infra/serverless/config-facts.js):kmsKeys}         tracks[].decryption.kmsKeys (apply)
 *   ${file(infra/serverless/config-facts.js):decryptsWithKms} 'true' or 'false'
 *   ${file(infra/serverless/config-facts.js):sourceBuckets}   S3 ARNs of tracks[].bucket without
 *                                                             auth (fetch reads them with its role)
 *   ${file(infra/serverless/config-facts.js):readsBuckets}    'true' or 'false'
 *
 * It reads the same file the functions bundle (`--param config=...`), only for
 * these lists; the functions validate the whole config when they load it.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { load } from 'js-yaml';

async function tracks({ resolveVariable }) {
  const path = await resolveVariable('param:config');
  const config = load(await readFile(resolve(path), 'utf8')) ?? {};
  return Array.isArray(config.tracks)
    ? config.tracks.filter((t) => t && typeof t === 'object')
    : [];
}

const unique = (values) => [...new Set(values)].sort();

export async function kmsKeys(context) {
  return unique(
    (await tracks(context)).flatMap((track) => {
      const listed = track.decryption?.kmsKeys;
      return Array.isArray(listed) ? listed.filter((key) => typeof key === 'string') : [];
    }),
  );
}

export async function decryptsWithKms(context) {
  return (await kmsKeys(context)).length > 0 ? 'true' : 'false';
}

/** A bucket with auth is read with those keys, not the role: only the others are granted. */
export async function sourceBuckets(context) {
  return unique(
    (await tracks(context))
      .filter((track) => track.bucket && typeof track.bucket.name === 'string' && !track.auth)
      .flatMap((track) => {
        const prefix = String(track.bucket.prefix ?? '').replace(/^\/+/, '');
        return [
          `arn:aws:s3:::${track.bucket.name}`,
          `arn:aws:s3:::${track.bucket.name}/${prefix}*`,
        ];
      }),
  );
}

export async function readsBuckets(context) {
  return (await sourceBuckets(context)).length > 0 ? 'true' : 'false';
}
