/**
 * Write-back (two-way sync) checked twice before the next sync, on the test
 * cluster and the test Git server, with the real sops and age: a
 * SOPS-encrypted Secret written back once is not written again, nor taken as
 * a change Git made (sops encrypts anew each time), also in a file holding
 * two Secrets, while a value Git really changed meanwhile still wins; and a
 * check that refuses all it found (a Secret in plain text) records it in the
 * track's history, once.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { reconcileDrift } from '../../src/sync/reconcile-drift.ts';
import { syncTrack } from '../../src/sync/sync-track.ts';
import { pushFiles } from '../harness/git-server.ts';
import { DECRYPTION, SopsTrackFixture } from '../harness/sops-track-fixture.ts';
import { driftAndWriteBack, fileOnMain, headOfMain } from '../harness/write-back.ts';

const SECRET_RULE = 'rules: [{apiGroups: [""], resources: [secrets], syncTo: git}]';

function secretYaml(password: string): string {
  return `apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: Opaque\nstringData:\n  password: ${password}\n`;
}

describe('write-back checked again before the next sync', () => {
  const fixture = new SopsTrackFixture('wbz');
  before(() => fixture.start());
  after(() => fixture.stop());

  it('takes a SOPS-encrypted Secret it wrote back as written, and a value Git changed since as Git’s', async () => {
    // Prepare: an encrypted Secret under a syncTo: git rule, synced, then changed in the cluster.
    const { track, repo, ns } = await fixture.newTrack('sealed', `${DECRYPTION}\n${SECRET_RULE}`);
    const encrypt = (password: string) => fixture.encrypt(secretYaml(password));
    await pushFiles(repo, { 'db.yaml': await encrypt('from-git') });
    assert.equal((await syncTrack(track, { trigger: 'manual' }, fixture.deps)).result, 'applied');
    await fixture.setSecretValue(ns, 'db', 'password', 'rotated-in-cluster');
    const first = await driftAndWriteBack(track, fixture.deps);
    assert.equal(first.written.result, 'written-back', first.written.error);
    const writtenBack = await fileOnMain(repo, 'db.yaml');

    // Act: the next check, before any sync (the cluster still differs from the revision synced).
    const second = await driftAndWriteBack(track, fixture.deps);

    // Assess: nothing new to write, and no conflict.
    assert.deepEqual(second.written.conflicts, []);
    assert.equal(second.written.result, 'unchanged');
    assert.equal(second.written.commit, null);
    assert.deepEqual(second.written.writtenBack, [`Secret/${ns}/db`]);
    assert.equal(await headOfMain(repo), first.written.commit);

    // Someone changes the value in Git meanwhile: Git wins, reported as a conflict.
    const inGit = await encrypt('changed-in-git');
    await pushFiles(repo, { 'db.yaml': inGit });
    const third = await driftAndWriteBack(track, fixture.deps);
    assert.deepEqual(third.written.conflicts, [
      {
        subject: `Secret/${ns}/db`,
        path: '',
        message: 'Git changed db.yaml since the revision compared with: Git wins',
      },
    ]);
    assert.equal(await fileOnMain(repo, 'db.yaml'), inGit);
    assert.notEqual(inGit, writtenBack);
  });

  it('takes a SOPS-encrypted file of two Secrets it wrote back as written', async () => {
    // Prepare: two encrypted Secrets in one file, synced, both changed in the cluster, written back.
    const { track, repo, ns } = await fixture.newTrack('pair', `${DECRYPTION}\n${SECRET_RULE}`);
    const pair = (db: string, cache: string) =>
      `${secretYaml(db)}---\n${secretYaml(cache).replace('name: db', 'name: cache')}`;
    await pushFiles(repo, {
      'db.yaml': await fixture.encrypt(pair('from-git', 'cache-from-git')),
    });
    assert.equal((await syncTrack(track, { trigger: 'manual' }, fixture.deps)).result, 'applied');
    await fixture.setSecretValue(ns, 'db', 'password', 'rotated-in-cluster');
    await fixture.setSecretValue(ns, 'cache', 'password', 'cache-rotated');
    const first = await driftAndWriteBack(track, fixture.deps);
    assert.equal(first.written.result, 'written-back', first.written.error);
    const subjects = [`Secret/${ns}/cache`, `Secret/${ns}/db`];
    assert.deepEqual([...first.written.writtenBack].sort(), subjects);

    // Act: the next check, before any sync.
    const second = await driftAndWriteBack(track, fixture.deps);

    // Assess: nothing new to write, no conflict, both taken as written.
    assert.deepEqual(second.written.conflicts, []);
    assert.equal(second.written.result, 'unchanged');
    assert.deepEqual([...second.written.writtenBack].sort(), subjects);
    assert.equal(await headOfMain(repo), first.written.commit);
    // sops prints the YAML its own way (indented by 4): the values are compared.
    const documents = (await fixture.decrypted(repo, 'db.yaml')).split('---\n');
    assert.match(documents[0]!, /name: db\n[^]*password: rotated-in-cluster\n/);
    assert.match(documents[1]!, /name: cache\n[^]*password: cache-rotated\n/);
  });

  it('records a check that refused all it found in the history, once, saying why', async () => {
    // Prepare: a Secret in plain text under a syncTo: git rule, changed in the cluster.
    const { track, repo, ns } = await fixture.newTrack('plain', SECRET_RULE);
    await pushFiles(repo, { 'db.yaml': secretYaml('from-git') });
    assert.equal((await syncTrack(track, { trigger: 'manual' }, fixture.deps)).result, 'applied');
    const value = `planted-${Math.random().toString(36).slice(2, 10)}`;
    await fixture.setSecretValue(ns, 'db', 'password', value);
    const revision = await headOfMain(repo);

    // Act: two checks, nothing written back.
    const check = () => reconcileDrift(track, { type: 'drift', track: track.name }, fixture.deps);
    const first = await check();
    const second = await check();

    // Assess
    const refused = [
      {
        subject: `Secret/${ns}/db`,
        error: `Secret/${ns}/db: Secrets are never written back to Git in plain text: db.yaml is not SOPS-encrypted in Git`,
      },
    ];
    assert.deepEqual(first.writeBack, []);
    assert.deepEqual(first.writeBackRefused, refused);
    assert.deepEqual(second.writeBackRefused, refused);
    const entries = (await fixture.deps.state.listHistory('plain')).filter(
      (entry) => entry.trigger === 'write-back',
    );
    assert.equal(entries.length, 1, 'one entry for the refusal, not one per check');
    const { appliedAt, ...entry } = entries[0]!;
    assert.ok(Date.parse(appliedAt) > 0);
    assert.deepEqual(entry, {
      revision,
      result: 'refused',
      trigger: 'write-back',
      writtenBack: [],
      refused,
      error: `nothing written back: ${refused[0]!.error}`,
    });
    assert.ok(!JSON.stringify(entries).includes(value), 'the history holds no secret value');
    assert.equal(await headOfMain(repo), revision);
  });
});
