/**
 * Write-back (two-way sync) of a cluster change made again before the
 * write-back of the first one is synced, on the test cluster and the test
 * Git server, with the real sops and age: the check still compares with the
 * revision before both, and Git holding what Driftless itself wrote is no
 * change made in Git, so the newer value reaches Git and the next sync keeps
 * it — for a ConfigMap in a plain file, a SOPS-encrypted Secret, and a
 * ConfigMap of a SOPS-encrypted file (written back as that file encrypted
 * again, never spliced into it in plain text). A value someone pushed to Git
 * in between still wins.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Track } from '../../src/config/types.ts';
import { syncTrack } from '../../src/sync/sync-track.ts';
import { readTrackState } from '../../src/sync/track-state.ts';
import { pushFiles, runGit } from '../harness/git-server.ts';
import { DECRYPTION, SopsTrackFixture } from '../harness/sops-track-fixture.ts';
import { driftAndWriteBack, fileOnMain, headOfMain } from '../harness/write-back.ts';

const RULE = 'rules: [{apiGroups: [""], resources: [configmaps, secrets], syncTo: git}]';

const settings = (value: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  value: ${value} # tuned by ops\n  level: info\n`;

const secretYaml = (password: string) =>
  `apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: Opaque\nstringData:\n  password: ${password}\n`;

describe('write-back of a cluster change made again before the sync', () => {
  const fixture = new SopsTrackFixture('wba');
  before(() => fixture.start());
  after(() => fixture.stop());

  /** Sets the ConfigMap's data key in the cluster, as `kubectl edit` would. */
  const setData = (ns: string, name: string, key: string, value: string) =>
    fixture.core.patchNamespacedConfigMap({
      name,
      namespace: ns,
      body: [{ op: 'add', path: `/data/${key}`, value }],
    });
  const liveData = async (ns: string, name: string) =>
    (await fixture.core.readNamespacedConfigMap({ name, namespace: ns })).data;

  /** A synced track over `files`. */
  async function synced(name: string, files: Record<string, string>, extra = RULE) {
    const made = await fixture.newTrack(name, extra);
    await pushFiles(made.repo, files);
    assert.equal(
      (await syncTrack(made.track, { trigger: 'manual' }, fixture.deps)).result,
      'applied',
    );
    return made;
  }

  /** A drift check and its write-back that must write to Git: its result. */
  async function writtenBack(track: Track) {
    const { written } = await driftAndWriteBack(track, fixture.deps);
    assert.deepEqual(written.conflicts, []);
    assert.equal(written.result, 'written-back', written.error);
    return written;
  }

  it('writes a ConfigMap value changed again before the sync, and the sync keeps it', async () => {
    // Prepare: v1 written back (W1), not synced.
    const { track, repo, ns } = await synced('plain', { 'settings.yaml': settings('v0') });
    const revision = await headOfMain(repo);
    await setData(ns, 'settings', 'value', 'v1');
    const first = await writtenBack(track);

    // Act: the cluster changes again; the check still compares with the revision before W1.
    await setData(ns, 'settings', 'value', 'v2');
    const { drift, written } = await driftAndWriteBack(track, fixture.deps);

    // Assess: v2 in Git on top of W1, the rest of the file as it was.
    assert.equal(drift.revision, revision);
    assert.deepEqual(written.conflicts, []);
    assert.equal(written.result, 'written-back', written.error);
    assert.equal(await fileOnMain(repo, 'settings.yaml'), settings('v2'));
    assert.equal(
      (await runGit(['--git-dir', repo.bareDir, 'rev-parse', 'main^'])).trim(),
      first.commit,
    );
    // The sync of the head keeps v2 in the cluster, and settles both write-backs.
    await syncTrack(track, { trigger: 'webhook' }, fixture.deps);
    assert.equal((await liveData(ns, 'settings'))?.['value'], 'v2');
    const settled = await driftAndWriteBack(track, fixture.deps);
    assert.deepEqual(settled.drift.drifted, []);
    assert.equal((await readTrackState(fixture.deps.state, 'plain')).unsyncedWriteBacks, undefined);
  });

  it('lets Git win a value someone pushed after its write-back', async () => {
    // Prepare: v1 written back, then someone sets another value in Git.
    const { track, repo, ns } = await synced('pushed', { 'settings.yaml': settings('v0') });
    await setData(ns, 'settings', 'value', 'v1');
    await writtenBack(track);
    await pushFiles(repo, { 'settings.yaml': settings('set-in-git') });
    await setData(ns, 'settings', 'value', 'v2');

    // Act
    const { written } = await driftAndWriteBack(track, fixture.deps);

    // Assess: Git's value stays, reported; its sync brings it to the cluster.
    assert.equal(written.commit, null);
    assert.deepEqual(written.conflicts, [
      {
        subject: `ConfigMap/${ns}/settings`,
        path: '/data/value',
        message: 'Git changed it since the revision compared with: Git wins',
      },
    ]);
    assert.equal(await fileOnMain(repo, 'settings.yaml'), settings('set-in-git'));
    await syncTrack(track, { trigger: 'webhook' }, fixture.deps);
    assert.equal((await liveData(ns, 'settings'))?.['value'], 'set-in-git');
  });

  it('writes a SOPS-encrypted Secret changed again before the sync, and the sync keeps it', async () => {
    // Prepare: the password written back once (W1), not synced.
    const { track, repo, ns } = await synced(
      'sealed',
      { 'db.yaml': await fixture.encrypt(secretYaml('from-git')) },
      `${DECRYPTION}\n${RULE}`,
    );
    await fixture.setSecretValue(ns, 'db', 'password', 'rotated-once');
    const first = await writtenBack(track);

    // Act: rotated again before the sync.
    await fixture.setSecretValue(ns, 'db', 'password', 'rotated-twice');
    const second = await writtenBack(track);

    // Assess: Git decrypts to the newer value; the sync of the head keeps it.
    assert.notEqual(second.commit, first.commit);
    const [secret] = (await fixture.decryptedDocuments(repo, 'db.yaml')) as {
      stringData: { password: string };
    }[];
    assert.equal(secret?.stringData.password, 'rotated-twice');
    assert.equal(
      (await syncTrack(track, { trigger: 'webhook' }, fixture.deps)).revision?.startsWith(
        second.commit!,
      ),
      true,
    );
    assert.equal(await fixture.secretValue(ns, 'db', 'password'), 'rotated-twice');
  });

  it('writes a ConfigMap of a SOPS-encrypted file as that file encrypted again', async () => {
    // Prepare: a ConfigMap whose data is encrypted in Git (its labels are not), synced, then
    // changed in the cluster in both.
    const { track, repo, ns } = await synced(
      'sealed-settings',
      {
        'settings.yaml': await fixture.encrypt(
          settings('v0').replace('  name: settings\n', '  name: settings\n  labels: {tier: web}\n'),
        ),
      },
      `${DECRYPTION}\n${RULE}`,
    );
    await setData(ns, 'settings', 'value', 'changed-live');
    await fixture.core.patchNamespacedConfigMap({
      name: 'settings',
      namespace: ns,
      body: [{ op: 'replace', path: '/metadata/labels/tier', value: 'api' }],
    });

    // Act
    const { written } = await driftAndWriteBack(track, fixture.deps);

    // Assess: the file still decrypts (its MAC holds), to the cluster's values; the new data
    // value is not in it in plain text; no conflict.
    const expected = (value: string) => [
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'settings', labels: { tier: 'api' } },
        data: { value, level: 'info' },
      },
    ];
    assert.deepEqual(
      await fixture.decryptedDocuments(repo, 'settings.yaml'),
      expected('changed-live'),
    );
    assert.deepEqual(written.conflicts, []);
    assert.equal(written.result, 'written-back', written.error);
    assert.deepEqual(written.writtenBack, [`ConfigMap/${ns}/settings`]);
    assert.doesNotMatch(await fileOnMain(repo, 'settings.yaml'), /changed-live/);
    // Changed again before the sync: written again, and the sync keeps it.
    await setData(ns, 'settings', 'value', 'changed-again');
    await writtenBack(track);
    assert.deepEqual(
      await fixture.decryptedDocuments(repo, 'settings.yaml'),
      expected('changed-again'),
    );
    const sync = await syncTrack(track, { trigger: 'webhook' }, fixture.deps);
    // The head decrypts: the sync succeeds (nothing to change: the cluster has it all).
    assert.equal(sync.error, undefined);
    assert.equal(sync.result, 'unchanged');
    assert.equal(sync.revision?.startsWith(await headOfMain(repo)), true);
    assert.deepEqual(await liveData(ns, 'settings'), { value: 'changed-again', level: 'info' });
  });
});
