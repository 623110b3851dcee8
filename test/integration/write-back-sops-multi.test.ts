/**
 * Write-back (two-way sync) of a SOPS-encrypted file holding two Secrets, on
 * the test cluster and the test Git server, with the real sops and age: both
 * Secrets changed in the cluster reach Git in one file encrypted once, and a
 * Secret whose change must be refused is reported naming the file and the
 * Secret, while the other is still written.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { syncTrack } from '../../src/sync/sync-track.ts';
import { pushFiles, type GitRepository } from '../harness/git-server.ts';
import { DECRYPTION, SopsTrackFixture } from '../harness/sops-track-fixture.ts';
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
  const fixture = new SopsTrackFixture('wbm');
  before(() => fixture.start());
  after(() => fixture.stop());

  /** What Git's `secrets.yaml` decrypts to, each document's. */
  const decrypted = (repo: GitRepository) => fixture.decryptedDocuments(repo, 'secrets.yaml');
  const valuesOf = (yaml: string) => parseAllDocuments(yaml).map((document) => document.toJS());

  /** A synced track whose `secrets.yaml` holds both Secrets, encrypted. */
  async function synced(name: string) {
    const made = await fixture.newTrack(name, `${DECRYPTION}\n${SECRET_RULE}`);
    const encrypted = await fixture.encrypt(secretsYaml('token-from-git', 'password-from-git'));
    await pushFiles(made.repo, { 'secrets.yaml': encrypted });
    assert.equal(
      (await syncTrack(made.track, { trigger: 'manual' }, fixture.deps)).result,
      'applied',
    );
    return made;
  }

  it('writes both Secrets changed in the cluster into the file, encrypted once', async () => {
    // Prepare: both Secrets changed in the cluster.
    const { track, repo, ns } = await synced('both');
    await fixture.setSecretValue(ns, 'api', 'token', 'token-from-cluster');
    await fixture.setSecretValue(ns, 'db', 'password', 'password-from-cluster');

    // Act
    const { drift, written } = await driftAndWriteBack(track, fixture.deps);

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
    assert.equal(
      (await syncTrack(track, { trigger: 'webhook' }, fixture.deps)).revision,
      written.commit,
    );
    assert.equal(await fixture.secretValue(ns, 'api', 'token'), 'token-from-cluster');
    assert.equal(await fixture.secretValue(ns, 'db', 'password'), 'password-from-cluster');
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
    const { drift, written } = await driftAndWriteBack(track, fixture.deps);

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
    await fixture.setSecretValue(ns, 'api', 'token', 'token-from-cluster');
    await fixture.setSecretValue(ns, 'db', 'password', 'password-from-cluster');
    await fixture.core.patchNamespacedSecret({
      name: 'api',
      namespace: ns,
      body: [{ op: 'replace', path: '/metadata/labels/tier', value: 'edge' }],
    });

    // Act
    const { drift, written } = await driftAndWriteBack(track, fixture.deps);

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
