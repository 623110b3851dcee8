/**
 * The apply step's last word on a stored revision before it is placed: SOPS
 * values decrypted (render/decrypt-bundle.ts) and, when the fetch step could
 * not do it, variables substituted with the `substituteFrom` secrets
 * (render/substitute-bundle.ts). Runs only where the age keys and
 * `substituteFrom` secrets may be read: the apply function, or a local
 * process. The result lives in memory only; every plaintext learned here is
 * added to the redactor (src/redact.ts) before anything can print it.
 */
import type { Track } from '../config/types.ts';
import { MissingEnvError } from '../config/env.ts';
import { SecretUnavailableError } from '../config/read-secret.ts';
import { formatSecretRef, type SecretRef } from '../config/secret-ref.ts';
import { DriftlessError, untilInterrupted } from '../errors.ts';
import { addSecretValues, holdsSecretValue } from '../redact.ts';
import { DecryptionError } from '../render/errors.ts';
import { DEFAULT_RENDER_LIMITS } from '../render/limits.ts';
import { substituteBundle, substitutes } from '../render/substitute-bundle.ts';
import { parseVariables } from '../render/substitute-variables.ts';
import type { RenderedBundle } from '../render/types.ts';

export interface SecretDeps {
  /** Reads `decryption.keys` and `substituteFrom` secrets; absent where no secret may be read. */
  readonly readSecret?: (ref: SecretRef) => Promise<string>;
  /** Where the sops binary and AWS settings are looked up; default the process environment. */
  readonly env?: NodeJS.ProcessEnv;
}

/** A revision needs secrets, but this process has no way to read them. */
export class SecretsUnavailableError extends DriftlessError {
  readonly code = 'SecretsUnavailable';
}

function reader(track: Track, deps: SecretDeps, what: string) {
  const read = deps.readSecret;
  if (read === undefined) {
    throw new SecretsUnavailableError(
      `track "${track.name}" needs ${what}, but this process has no secret reader`,
    );
  }
  return read;
}

async function decrypted(
  track: Track,
  bundle: RenderedBundle,
  deps: SecretDeps,
  signal: AbortSignal | undefined,
): Promise<RenderedBundle> {
  const sources = bundle.encryptedSources ?? [];
  if (sources.length === 0) return bundle;
  const decryption = track.decryption;
  if (decryption === undefined) {
    throw new DecryptionError(
      `${sources.map((s) => s.path).join(', ')}: encrypted with SOPS, but track "${track.name}" has no decryption:`,
    );
  }
  const read = reader(track, deps, 'its decryption keys');
  const ageKeys = await untilInterrupted(
    Promise.all(decryption.keys.map((ref) => read(ref))),
    signal,
  );
  addSecretValues(ageKeys);
  // Loaded for revisions with SOPS files only: most syncs decrypt nothing.
  const [{ decryptBundle }, { rendererBinary }, { sopsDecrypt }] = await Promise.all([
    import('../render/decrypt-bundle.ts'),
    import('../render/renderer-binaries.ts'),
    import('../render/sops.ts'),
  ]);
  const binary = rendererBinary('sops', `track ${track.name} (decryption)`, deps.env);
  // sops is killed at the signal (run-tool.ts); the decryption of other files stops with it.
  const result = await untilInterrupted(
    decryptBundle(bundle, (source) =>
      sopsDecrypt(source, {
        binary,
        ageKeys,
        kmsKeys: decryption.kmsKeys,
        timeoutMs: DEFAULT_RENDER_LIMITS.rendererTimeoutMs,
        ...(deps.env === undefined ? {} : { env: deps.env }),
        ...(signal === undefined ? {} : { signal }),
      }),
    ),
    signal,
  );
  addSecretValues(result.secretValues);
  return result.bundle;
}

/** The `substituteFrom` variables, in order (later entries win); optional secrets that cannot be read are skipped. */
async function secretVariables(
  track: Track,
  deps: SecretDeps,
  signal: AbortSignal | undefined,
): Promise<Record<string, string>> {
  if (track.substituteFrom.length === 0) return {};
  const read = reader(track, deps, 'its substituteFrom secrets');
  const variables: Record<string, string> = {};
  for (const source of track.substituteFrom) {
    let text: string;
    try {
      text = await untilInterrupted(read(source.secret), signal);
    } catch (error) {
      const missing = error instanceof SecretUnavailableError || error instanceof MissingEnvError;
      if (missing && source.optional) continue;
      throw error;
    }
    const parsed = parseVariables(text, `substituteFrom secret ${formatSecretRef(source.secret)}`);
    addSecretValues(Object.values(parsed));
    Object.assign(variables, parsed);
  }
  return variables;
}

/**
 * `bundle` as the cluster must get it; see the module comment. Throws typed
 * errors that name files, objects and variables, never a value. Once `signal` aborts (`diff`'s
 * deadline) it stops waiting for a secret's source or sops, which take no signal of their own,
 * and rejects with the signal's InterruptedError; the read goes on unobserved.
 */
export async function resolveSecrets(
  track: Track,
  bundle: RenderedBundle,
  deps: SecretDeps,
  signal?: AbortSignal,
): Promise<RenderedBundle> {
  const plain = await decrypted(track, bundle, deps, signal);
  if (!substitutes(track) || plain.substituted === true) return plain;
  // `substitute:` wins over substituteFrom, as in Flux.
  const variables = { ...(await secretVariables(track, deps, signal)), ...track.substitute };
  // After decryption: an error must not quote a decrypted value's own `${...}`, nor part of it.
  return substituteBundle(plain, variables, holdsSecretValue);
}
