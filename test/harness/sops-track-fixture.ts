/**
 * A TrackFixture for tracks that keep Secrets and settings SOPS-encrypted in Git: a fresh age
 * key from the real age-keygen, sync deps that answer the `env:AGE_KEY` reference of
 * {@link DECRYPTION} with it, and the real sops to encrypt what a test pushes and to read what
 * a write-back committed.
 */
import { parseAllDocuments } from 'yaml';
import { SecretUnavailableError } from '../../src/config/read-secret.ts';
import type { SecretRef } from '../../src/config/secret-ref.ts';
import type { GitSource } from '../../src/source/ports.ts';
import { sopsDecrypt } from '../../src/render/sops.ts';
import type { GitRepository } from './git-server.ts';
import { rendererBinaries, rendererEnvironment } from './renderers.ts';
import { generateAgeKey, sopsEncrypt, type AgeKey } from './sops.ts';
import { TrackFixture } from './track-fixture.ts';
import { fileOnMain } from './write-back.ts';

/** The track field (for `newTrack`'s `extra`) that decrypts with the fixture's key. */
export const DECRYPTION = 'decryption: {provider: sops, keys: ["env:AGE_KEY"]}';

export class SopsTrackFixture extends TrackFixture {
  key!: AgeKey;

  /** As TrackFixture's; then `deps` also answers `env:AGE_KEY` with the key, and no other. */
  override async start(wrapSource?: (source: GitSource) => GitSource): Promise<void> {
    Object.assign(process.env, rendererEnvironment(await rendererBinaries()));
    this.key = await generateAgeKey();
    await super.start(wrapSource);
    const identity = this.key.identity;
    const readSecret = async (ref: SecretRef): Promise<string> => {
      if (ref.scheme === 'env' && ref.name === 'AGE_KEY') return identity;
      throw new SecretUnavailableError(`secret ${JSON.stringify(ref)}: not set`);
    };
    this.deps = { ...this.deps, readSecret, env: process.env };
  }

  /** A manifest as a user commits it: its `data` and `stringData` encrypted for the key. */
  encrypt(yaml: string): Promise<string> {
    return sopsEncrypt(yaml, {
      format: 'yaml',
      age: [this.key.recipient],
      encryptedRegex: '^(data|stringData)$',
    });
  }

  /** What `path` on the repository's `main` decrypts to, as sops prints it. */
  async decrypted(repo: GitRepository, path: string): Promise<string> {
    const plaintext = await sopsDecrypt(
      { path, format: 'yaml', content: await fileOnMain(repo, path) },
      {
        binary: (await rendererBinaries()).sops,
        ageKeys: [this.key.identity],
        kmsKeys: [],
        timeoutMs: 30_000,
      },
    );
    return plaintext.toString('utf8');
  }

  /** What `path` on the repository's `main` decrypts to, each document's value. */
  async decryptedDocuments(repo: GitRepository, path: string): Promise<unknown[]> {
    return parseAllDocuments(await this.decrypted(repo, path)).map((document) => document.toJS());
  }

  /** Sets `key` of the Secret `name` in the cluster, as `kubectl edit` would. */
  async setSecretValue(ns: string, name: string, key: string, value: string): Promise<void> {
    await this.core.patchNamespacedSecret({
      name,
      namespace: ns,
      body: [{ op: 'replace', path: `/data/${key}`, value: Buffer.from(value).toString('base64') }],
    });
  }

  /** `key` of the Secret `name` as the cluster holds it, decoded; undefined when it has none. */
  async secretValue(ns: string, name: string, key: string): Promise<string | undefined> {
    const encoded = (await this.core.readNamespacedSecret({ name, namespace: ns })).data?.[key];
    return encoded === undefined ? undefined : Buffer.from(encoded, 'base64').toString('utf8');
  }
}
