/**
 * Write-back (two-way sync) of a SOPS-encrypted file holding two Secrets, on
 * the test cluster and the test Git server, with the real sops and age: both
 * Secrets changed in the cluster reach Git in one file encrypted once, and a
 * Secret whose change must be refused is reported naming the file and the
 * Secret, while the other is still written.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { SecretRef } from '../../src/config/secret-ref.ts';
import { SecretUnavailableError } from '../../src/config/read-secret.ts';
import { parseAllDocuments } from 'yaml';
import { sopsDecrypt } from '../../src/render/sops.ts';
import { syncTrack, type SyncDeps } from '../../src/sync/sync-track.ts';
import { pushFiles, runGit, type GitRepository } from '../harness/git-server.ts';
import { rendererBinaries, rendererEnvironment } from '../harness/renderers.ts';
import { generateAgeKey, sopsEncrypt, type AgeKey } from '../harness/sops.ts';
import { TrackFixture } from '../harness/track-fixture.ts';
import { driftAndWriteBack } from '../harness/write-back.ts';

const SECRET_RULE = 'rules: [{apiGroups: [""], resources: [secrets], syncTo: git}]';

/** Two Secrets in one file: `api` keeps its token as text, `db` its password as base64. */
function secretsYaml(token: string, password: string): string {
  return [
    'apiVersion: v1\nkind: Secret\nmetadata:\n  name: api\n  labels:\n    tier: web\ntype: Opaque\n',
    `stringData:\n  token: ${token}\n`,
    '---\n',
    'apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: Opaque\n',
    `data:\n  password: ${Buffer.from(password).toString('base64')}\n`,
    `  user: ${Buffer.from('app').toString('base64')}\n`,
  ].join('');
}

describe('write-back of a SOPS-encrypted file holding two Secrets', () => {
  const fixture = new TrackFixture('wbm');
  let key: AgeKey;
  let deps: SyncDeps;

  before(async () => {
    Object.assign(process.env, rendererEnvironment(await rendererBinaries()));
    key = await generateAgeKey();
    await fixture.start();
    const readSecret = async (ref: SecretRef): Promise<string> => {
      if (ref.scheme === 'env' && ref.name === 'AGE_KEY') return key.identity;
      throw new SecretUnavailableError(`secret ${JSON.stringify(ref)}: not set`);
    };
    deps = { ...fixture.deps, readSecret, env: process.env };
  });
  after(() => fixture.stop());

  const fileIn = (repo: GitRepository, path: string) =>
    runGit(['--git-dir', repo.bareDir, 'show', `main:${path}`]);

  /** What Git's `secrets.yaml` decrypts to, each document's. */
  async function decrypted(repo: GitRepository): Promise<unknown[]> {
    const content = await fileIn(repo, 'secrets.yaml');
    const plaintext = await sopsDecrypt(
      { path: 'secrets.yaml', format: 'yaml', content },
      {
        binary: (await rendererBinaries()).sops,
        ageKeys: [key.identity],
        kmsKeys: [],
        timeoutMs: 30_000,
      },
    );
    return valuesOf(plaintext.toString('utf8'));
  }

  const valuesOf = (yaml: string) => parseAllDocuments(yaml).map((document) => document.toJS());

  /** A synced track whose `secrets.yaml` holds both Secrets, encrypted. */
  async function synced(name: string) {
    const made = await fixture.newTrack(
      name,
      `decryption: {provider: sops, keys: ["env:AGE_KEY"]}\n${SECRET_RULE}`,
    );
    const encrypted = await sopsEncrypt(secretsYaml('token-from-git', 'password-from-git'), {
      format: 'yaml',
      age: [key.recipient],
      encryptedRegex: '^(data|stringData)$',
    });
    await pushFiles(made.repo, { 'secrets.yaml': encrypted });
    assert.equal((await syncTrack(made.track, { trigger: 'manual' }, deps)).result, 'applied');
    return made;
  }

  /** Sets `key` of the Secret `name` in the cluster, as `kubectl edit` would. */
  async function setValue(ns: string, name: string, key: string, value: string): Promise<void> {
    await fixture.core.patchNamespacedSecret({
      name,
      namespace: ns,
      body: [{ op: 'replace', path: `/data/${key}`, value: Buffer.from(value).toString('base64') }],
    });
  }

  it('writes both Secrets changed in the cluster into the file, encrypted once', async () => {
    // Prepare: both Secrets changed in the cluster.
    const { track, repo, ns } = await synced('both');
    await setValue(ns, 'api', 'token', 'token-from-cluster');
    await setValue(ns, 'db', 'password', 'password-from-cluster');

    // Act
    const { drift, written } = await driftAndWriteBack(track, deps);

    // Assess: both reported written, and Git's file holds both cluster values.
    assert.deepEqual(drift.writeBackRefused, []);
    assert.equal(written.result, 'written-back', written.error);
    assert.deepEqual(written.conflicts, []);
    assert.deepEqual(written.refused, []);
    assert.deepEqual([...written.writtenBack].sort(), [`Secret/${ns}/api`, `Secret/${ns}/db`]);
    assert.deepEqual(
      await decrypted(repo),
      valuesOf(secretsYaml('token-from-cluster', 'password-from-cluster')),
      'Git holds both Secrets as the cluster has them',
    );
    // The commit synced back: the cluster keeps both values.
    assert.equal((await syncTrack(track, { trigger: 'webhook' }, deps)).revision, written.commit);
    const secret = async (name: string, key: string) =>
      Buffer.from(
        (await fixture.core.readNamespacedSecret({ name, namespace: ns })).data?.[key] ?? '',
        'base64',
      ).toString('utf8');
    assert.equal(await secret('api', 'token'), 'token-from-cluster');
    assert.equal(await secret('db', 'password'), 'password-from-cluster');
  });

  it('writes a key removed in the cluster from a Secret whose file has no stringData', async () => {
    // Prepare: db keeps its keys under `data` only; one of them is removed in the cluster.
    const { track, repo, ns } = await synced('removed');
    await fixture.core.patchNamespacedSecret({
      name: 'db',
      namespace: ns,
      body: [{ op: 'remove', path: '/data/password' }],
    });

    // Act
    const { drift, written } = await driftAndWriteBack(track, deps);

    // Assess
    assert.deepEqual(drift.writeBackRefused, []);
    assert.equal(written.result, 'written-back', written.error);
    assert.deepEqual(written.writtenBack, [`Secret/${ns}/db`]);
    const [api, db] = (await decrypted(repo)) as { data?: Record<string, string> }[];
    assert.deepEqual(api, valuesOf(secretsYaml('token-from-git', 'unused'))[0]);
    assert.deepEqual(
      db?.data,
      { user: Buffer.from('app').toString('base64') },
      'only the removed key is gone',
    );
  });

  it('refuses one Secret naming the file and the Secret, and still writes the other', async () => {
    // Prepare: `db`'s value changed; `api`'s value and its label (not written back) changed.
    const { track, repo, ns } = await synced('one');
    await setValue(ns, 'api', 'token', 'token-from-cluster');
    await setValue(ns, 'db', 'password', 'password-from-cluster');
    await fixture.core.patchNamespacedSecret({
      name: 'api',
      namespace: ns,
      body: [{ op: 'replace', path: '/metadata/labels/tier', value: 'edge' }],
    });

    // Act
    const { drift, written } = await driftAndWriteBack(track, deps);

    // Assess: `api` refused with a reason naming it and the file, `db` written.
    assert.deepEqual(drift.writeBackRefused, [
      {
        subject: `Secret/${ns}/api`,
        error: `Secret/${ns}/api: Secrets are never written back to Git in plain text: secrets.yaml: /metadata/labels/tier of a Secret is not written back`,
      },
    ]);
    assert.equal(written.result, 'written-back', written.error);
    assert.deepEqual(written.writtenBack, [`Secret/${ns}/db`]);
    assert.deepEqual(written.conflicts, []);
    assert.deepEqual(
      await decrypted(repo),
      valuesOf(secretsYaml('token-from-git', 'password-from-cluster')),
      'Git holds db as the cluster has it, api as Git had it',
    );
  });
});
