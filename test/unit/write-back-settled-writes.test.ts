/**
 * Write-back's own writes once they are no longer its own: a write-back kept
 * in the track's state (not synced by its own commit) counts as Driftless'
 * own only while the revision compared with still holds what it replaced.
 * After someone's commit on top of it is synced, a person pushing the value it
 * once wrote is a change made in Git: Git wins. And an object added to Git by
 * `writeBack.include` and changed again in the cluster before the sync is
 * written with its newer fields, not reported as a conflict.
 * Real fs store and the real file editing; a Git source double (a branch in
 * memory, each push a commit of its own).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createHash } from 'node:crypto';
import { parseConfig } from '../../src/config/index.ts';
import { editManifests } from '../../src/source/edit-manifests.ts';
import type { WriteBackChange } from '../../src/render/write-back-change.ts';
import { readTrackState } from '../../src/sync/track-state.ts';
import { writeBackTrack } from '../../src/sync/write-back.ts';
import { dbSecretChange, writeBackBranch } from './fakes/write-back-branch.ts';

const R = 'a'.repeat(40);
/** A person's commit, synced: the revision later checks compare with. */
const PERSON = 'b'.repeat(40);
const SUBJECT = 'ConfigMap/apps/settings';
const ADDED = 'ConfigMap/apps/made';
const ADDED_FILE = 'apps/configmap-made.yaml';

const settings = (value: string, level = 'info') =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: apps\ndata:\n  value: ${value} # tuned by ops\n  level: ${level}\n`;

/** A change of the ConfigMap's `value`, as a check comparing with a revision holding `base` finds it. */
function valueChange(value: string, base: string): WriteBackChange {
  return {
    subject: SUBJECT,
    apiVersion: 'v1',
    kind: 'ConfigMap',
    name: 'settings',
    namespace: 'apps',
    file: 'settings.yaml',
    line: 1,
    fields: [{ path: '/data/value', value, base }],
  };
}

/** The object made in the cluster (`writeBack.include`), as the cluster has it now. */
function added(data: Record<string, string>): WriteBackChange {
  return {
    subject: ADDED,
    apiVersion: 'v1',
    kind: 'ConfigMap',
    name: 'made',
    namespace: 'apps',
    file: ADDED_FILE,
    line: 0,
    add: {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'made', namespace: 'apps' },
      data,
    },
    fields: [],
  };
}

const GIT_WINS = 'Git changed it since the revision compared with: Git wins';
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

describe('a SOPS-encrypted file an earlier write-back replaced', () => {
  /** The Secret's file encrypted again with the cluster's values, replacing `base`. */
  const replaced = (content: string, base: string): WriteBackChange =>
    dbSecretChange({ replace: { content, base } });
  const holding = (text: string) => (file: string) => (file === 'db.yaml' ? text : undefined);

  it('is its own while the revision compared with holds what it replaced, write after write', () => {
    // Act: two write-backs since ENC-0, the revision compared with.
    const edits = editManifests(holding('ENC-2'), [replaced('ENC-3', 'ENC-0')], {
      fields: [],
      files: [
        { file: 'db.yaml', content: 'ENC-1', replaced: sha256('ENC-0') },
        { file: 'db.yaml', content: 'ENC-2', replaced: sha256('ENC-1') },
      ],
    });

    // Assess
    assert.deepEqual(edits.conflicts, []);
    assert.equal(edits.files.get('db.yaml'), 'ENC-3');
  });

  it('is not, once the revision compared with holds someone’s file made on top of it', () => {
    // Act: the revision compared with is a person's commit over ENC-1 (ENC-P); Git holds ENC-1
    // again (someone put it back).
    const edits = editManifests(holding('ENC-1'), [replaced('ENC-3', 'ENC-P')], {
      fields: [],
      files: [{ file: 'db.yaml', content: 'ENC-1', replaced: sha256('ENC-0') }],
    });

    // Assess
    assert.deepEqual(edits.conflicts, [
      {
        subject: 'Secret/apps/db',
        path: '',
        message: 'Git changed db.yaml since the revision compared with: Git wins',
      },
    ]);
    assert.equal(edits.files.size, 0);
  });
});

describe('write-backs kept until a sync, after someone’s commit on top', () => {
  const track = parseConfig(
    [
      'tracks:',
      '  - name: ops',
      '    repository: https://git.example.com/ops.git',
      '    reference: main',
      '    adopt: true',
      '    rules: [{apiGroups: [""], resources: [configmaps], syncTo: git}]',
      '    writeBack: {include: true}',
    ].join('\n'),
    'driftless.yaml',
  ).tracks[0]!;
  /** The branch, its files and the commits pushed to it; the track's store. */
  const { source, files, commits, store } = writeBackBranch('driftless-write-back-settled-', R, [
    ['settings.yaml', settings('v0')],
  ]);

  /** The write-back of `changes` found by a check comparing with `revision`. */
  const writeBack = (revision: string, ...changes: WriteBackChange[]) =>
    writeBackTrack(
      track,
      { type: 'writeBack', track: 'ops', revision, trigger: 'schedule', changes },
      { source, state: store },
    );

  it('lets Git win a value a person pushes that an earlier write-back once wrote', async () => {
    // Prepare: v1 written back; a person's commit on top sets another value, and is synced;
    // then a person pushes v1 again, while the cluster has moved on to v2.
    const first = await writeBack(R, valueChange('v1', 'v0'));
    assert.equal(first.result, 'written-back');
    files.set('settings.yaml', settings('set-by-person')); // PERSON's commit
    files.set('settings.yaml', settings('v1')); // a later push, not synced

    // Act: the check compares with the person's synced commit.
    const second = await writeBack(PERSON, valueChange('v2', 'set-by-person'));

    // Assess: the person's v1 stays, reported as a conflict; nothing pushed.
    assert.equal(second.result, 'unchanged');
    assert.deepEqual(second.conflicts, [
      { subject: SUBJECT, path: '/data/value', message: GIT_WINS },
    ]);
    assert.equal(files.get('settings.yaml'), settings('v1'));
    assert.equal(commits.length, 1);
  });

  it('still writes over a write-back made on top of a commit synced later', async () => {
    // Prepare: v1 written back; a person's commit on top (another field); v2 written back on top
    // of that, still compared with R. Then the person's commit is synced.
    await writeBack(R, valueChange('v1', 'v0'));
    files.set('settings.yaml', settings('v1', 'debug'));
    const second = await writeBack(R, valueChange('v2', 'v0'));
    assert.deepEqual(second.conflicts, []);
    assert.equal(files.get('settings.yaml'), settings('v2', 'debug'));

    // Act: compared with the person's commit (it holds v1); the cluster moved on to v3.
    const third = await writeBack(PERSON, valueChange('v3', 'v1'));

    // Assess: v2 is the second write-back's own, made over what that commit holds.
    assert.deepEqual(third.conflicts, []);
    assert.equal(third.result, 'written-back');
    assert.equal(files.get('settings.yaml'), settings('v3', 'debug'));
  });

  it('keeps what each write replaced in the track’s state', async () => {
    // Act
    const first = await writeBack(R, valueChange('v1', 'v0'), added({ a: '1' }));

    // Assess
    assert.deepEqual((await readTrackState(store, 'ops')).unsyncedWriteBacks, [
      {
        commit: first.commit,
        comparedWith: R,
        fields: [
          { subject: SUBJECT, path: '/data/value', value: 'v1', replaced: { value: 'v0' } },
          { subject: ADDED, path: '', value: added({ a: '1' }).add, replaced: {} },
        ],
        files: [],
      },
    ]);
  });

  it('writes an object it added, changed again in the cluster before the sync', async () => {
    // Prepare: the object added; before the sync the cluster changes one value and adds a key.
    const first = await writeBack(R, added({ a: '1', b: 'kept' }));
    assert.equal(first.result, 'written-back');
    const firstText = files.get(ADDED_FILE)!;

    // Act: the check still compares with R, which has no such object.
    const second = await writeBack(R, added({ a: '2', b: 'kept', c: 'new' }));

    // Assess: the newer fields written in place, no conflict.
    assert.deepEqual(second.conflicts, []);
    assert.equal(second.result, 'written-back');
    assert.deepEqual(second.writtenBack, [ADDED]);
    assert.equal(
      files.get(ADDED_FILE),
      firstText.replace('a: "1"', 'a: "2"').replace('b: kept\n', 'b: kept\n  c: new\n'),
    );

    // And again: the second write-back's fields count as its own too.
    const third = await writeBack(R, added({ a: '3', b: 'kept', c: 'new' }));
    assert.deepEqual(third.conflicts, []);
    assert.match(files.get(ADDED_FILE)!, /a: "3"/);
  });

  it('lets Git win a field of the added object someone changed in Git meanwhile', async () => {
    // Prepare: added; then someone changes `b` in Git; the cluster changes `a` and `b`.
    await writeBack(R, added({ a: '1', b: 'x' }));
    files.set(ADDED_FILE, files.get(ADDED_FILE)!.replace('b: x', 'b: set-in-git'));

    // Act
    const second = await writeBack(R, added({ a: '2', b: 'y' }));

    // Assess: `a` written, `b` stays as Git has it, reported.
    assert.deepEqual(second.conflicts, [{ subject: ADDED, path: '/data/b', message: GIT_WINS }]);
    assert.match(files.get(ADDED_FILE)!, /a: "2"\n {2}b: set-in-git\n/);
  });
});
