/**
 * Write-back's own changes (two-way sync): what a write-back not synced yet
 * wrote to Git is not a change made in Git, so a cluster changed again before
 * that sync still gets its newer value written, while a value someone else
 * put in Git still wins; the track's state keeps what was written until the
 * revision compared with holds it. And an object of a SOPS-encrypted file is
 * written back only as its file encrypted again, never spliced into it.
 * Real fs store and the real file editing; a Git source double (a branch in
 * memory) and a cluster double answering `get`.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import type { KubeObject } from '../../src/cluster/kube-object.ts';
import type { KubernetesPort } from '../../src/cluster/kubernetes-port.ts';
import { parseConfig } from '../../src/config/index.ts';
import type { DriftedObject } from '../../src/drift/detect-drift.ts';
import {
  writeBackChanges,
  type ChangedObject,
  type EncryptedWriteBack,
} from '../../src/drift/write-back-changes.ts';
import type { RenderedObject } from '../../src/render/types.ts';
import type { WriteBackChange } from '../../src/render/write-back-change.ts';
import { editManifests, type OwnWrites } from '../../src/source/edit-manifests.ts';
import type { WriteBackJob } from '../../src/sync/jobs.ts';
import {
  readTrackState,
  unsyncedWriteBacks,
  type UnsyncedWriteBack,
} from '../../src/sync/track-state.ts';
import { writeBackTrack } from '../../src/sync/write-back.ts';
import { dbSecretChange, writeBackBranch } from './fakes/write-back-branch.ts';

const R = 'a'.repeat(40);
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const SUBJECT = 'ConfigMap/apps/settings';

const settings = (value: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: apps\ndata:\n  value: ${value} # tuned by ops\n  level: info\n`;

/** A change of the ConfigMap's fields, compared with a revision. */
function change(fields: WriteBackChange['fields']): WriteBackChange {
  return {
    subject: SUBJECT,
    apiVersion: 'v1',
    kind: 'ConfigMap',
    name: 'settings',
    namespace: 'apps',
    file: 'settings.yaml',
    line: 1,
    fields,
  };
}

/** A SOPS-encrypted file encrypted again, replacing `base`. */
function replaced(content: string, base: string): WriteBackChange {
  return dbSecretChange({ replace: { content, base } });
}

describe('editing a file that holds what an earlier write-back wrote', () => {
  const edit = (
    text: string,
    changes: WriteBackChange[],
    earlier: OwnWrites = { fields: [], files: [] },
  ) => editManifests((file) => (file === 'settings.yaml' ? text : undefined), changes, earlier);

  it('writes the cluster’s newer value over the value it wrote itself', () => {
    // Act
    const edits = edit(
      settings('v1'),
      [change([{ path: '/data/value', value: 'v2', base: 'v0' }])],
      { fields: [{ subject: SUBJECT, path: '/data/value', value: 'v1' }], files: [] },
    );

    // Assess: only the value changed, its comment kept; what was written is handed back.
    assert.deepEqual(edits.conflicts, []);
    assert.equal(edits.files.get('settings.yaml'), settings('v2'));
    assert.deepEqual(edits.written, [SUBJECT]);
    assert.deepEqual(edits.wrote, {
      fields: [{ subject: SUBJECT, path: '/data/value', value: 'v2', replaced: { value: 'v1' } }],
      files: [],
    });
  });

  it('lets Git win a value it did not write, also over one it wrote before', () => {
    const conflict = [
      {
        subject: SUBJECT,
        path: '/data/value',
        message: 'Git changed it since the revision compared with: Git wins',
      },
    ];
    const v2 = [change([{ path: '/data/value', value: 'v2', base: 'v0' }])];
    // Nothing written before.
    assert.deepEqual(edit(settings('v1'), v2).conflicts, conflict);
    // Written by another object's write-back, or at another field.
    const other = edit(settings('v1'), v2, {
      fields: [
        { subject: 'ConfigMap/apps/other', path: '/data/value', value: 'v1' },
        { subject: SUBJECT, path: '/data/level', value: 'v1' },
      ],
      files: [],
    });
    assert.deepEqual(other.conflicts, conflict);
    // Someone put back a value written by an earlier write-back than the last.
    const reverted = edit(settings('v1'), v2, {
      fields: [
        { subject: SUBJECT, path: '/data/value', value: 'v1' },
        { subject: SUBJECT, path: '/data/value', value: 'v1b' },
      ],
      files: [],
    });
    assert.deepEqual(reverted.conflicts, conflict);
    assert.equal(reverted.files.size, 0);
  });

  it('takes a write above or below the field, and a removal, as its own', () => {
    // The whole map written before, one of its values changed now.
    const above = edit(
      settings('v1'),
      [change([{ path: '/data/value', value: 'v2', base: 'v0' }])],
      {
        fields: [{ subject: SUBJECT, path: '/data', value: { value: 'v1', level: 'info' } }],
        files: [],
      },
    );
    assert.deepEqual(above.conflicts, []);
    assert.equal(above.files.get('settings.yaml'), settings('v2'));
    // One value written before, the whole map changed now.
    const below = edit(
      settings('v1'),
      [
        change([
          {
            path: '/data',
            value: { value: 'v2', level: 'info' },
            base: { value: 'v0', level: 'info' },
          },
        ]),
      ],
      { fields: [{ subject: SUBJECT, path: '/data/value', value: 'v1' }], files: [] },
    );
    assert.deepEqual(below.conflicts, []);
    assert.match(below.files.get('settings.yaml')!, /value: v2/);
    // A key the earlier write-back removed, back in the cluster.
    const removed = edit(
      settings('v1'),
      [change([{ path: '/data/mode', value: 'on', base: 'off' }])],
      {
        fields: [{ subject: SUBJECT, path: '/data/mode' }],
        files: [],
      },
    );
    assert.deepEqual(removed.conflicts, []);
    assert.match(removed.files.get('settings.yaml')!, /mode: "on"/);
  });

  it('replaces an encrypted file holding the ciphertext it wrote, not one someone else wrote', () => {
    const read = (text: string) => (file: string) => (file === 'db.yaml' ? text : undefined);
    const earlier = { fields: [], files: [{ file: 'db.yaml', content: 'ENC-1' }] };

    // Act
    const ours = editManifests(read('ENC-1'), [replaced('ENC-2', 'ENC-0')], earlier);
    const theirs = editManifests(read('ENC-git'), [replaced('ENC-2', 'ENC-0')], earlier);
    const elsewhere = editManifests(read('ENC-1'), [replaced('ENC-2', 'ENC-0')], {
      fields: [],
      files: [{ file: 'other.yaml', content: 'ENC-1' }],
    });

    // Assess
    assert.deepEqual(ours.conflicts, []);
    assert.equal(ours.files.get('db.yaml'), 'ENC-2');
    assert.deepEqual(ours.wrote.files, [
      { file: 'db.yaml', content: 'ENC-2', replaced: sha256('ENC-1') },
    ]);
    for (const edits of [theirs, elsewhere]) {
      assert.deepEqual(edits.conflicts, [
        {
          subject: 'Secret/apps/db',
          path: '',
          message: 'Git changed db.yaml since the revision compared with: Git wins',
        },
      ]);
      assert.equal(edits.files.size, 0);
    }
  });
});

describe('the write-backs a revision does not hold yet', () => {
  const writeBack = (commit: string): UnsyncedWriteBack => ({ commit, fields: [], files: [] });
  const all = [writeBack('w1'), writeBack('w2'), writeBack('w3')];

  it('are those after the newest whose commit the revision is, else all', () => {
    assert.deepEqual(unsyncedWriteBacks(all, 'w2'), [writeBack('w3')]);
    assert.deepEqual(unsyncedWriteBacks(all, 'w3'), []);
    // A revision rendered with inputs beyond Git: its commit counts.
    assert.deepEqual(unsyncedWriteBacks(all, 'w2+0123456789ab'), [writeBack('w3')]);
    assert.deepEqual(unsyncedWriteBacks(all, R), all);
    assert.deepEqual(unsyncedWriteBacks(all, null), all);
    assert.deepEqual(unsyncedWriteBacks(undefined, 'w1'), []);
  });
});

describe('write-back jobs before the next sync', () => {
  const track = parseConfig(
    [
      'tracks:',
      '  - name: ops',
      '    repository: https://git.example.com/ops.git',
      '    reference: main',
      '    rules: [{apiGroups: [""], resources: [configmaps], syncTo: git}]',
    ].join('\n'),
    'driftless.yaml',
  ).tracks[0]!;
  /** The branch, its files and the commits pushed to it; the track's store. */
  const { source, files, store } = writeBackBranch('driftless-write-back-own-', R, [
    ['settings.yaml', settings('v0')],
  ]);

  /** The write-back of the cluster's `value` found by a check comparing with `revision`. */
  const writeBack = (value: string, revision: string, base = 'v0') => {
    const job: WriteBackJob = {
      type: 'writeBack',
      track: 'ops',
      revision,
      trigger: 'schedule',
      changes: [change([{ path: '/data/value', value, base }])],
    };
    return writeBackTrack(track, job, { source, state: store });
  };

  it('writes a value changed again before the sync, and keeps what it wrote until then', async () => {
    // Prepare: v1 written back, not synced.
    const first = await writeBack('v1', R);
    assert.equal(first.result, 'written-back');

    // Act: the cluster changed again; the check still compares with R.
    const second = await writeBack('v2', R);

    // Assess: v2 in Git, no conflict; both write-backs kept, then settled by their syncs.
    assert.deepEqual(second.conflicts, []);
    assert.equal(second.result, 'written-back');
    assert.equal(files.get('settings.yaml'), settings('v2'));
    const kept = (await readTrackState(store, 'ops')).unsyncedWriteBacks;
    assert.deepEqual(kept, [
      {
        commit: first.commit,
        comparedWith: R,
        fields: [{ subject: SUBJECT, path: '/data/value', value: 'v1', replaced: { value: 'v0' } }],
        files: [],
      },
      {
        commit: second.commit,
        comparedWith: R,
        fields: [{ subject: SUBJECT, path: '/data/value', value: 'v2', replaced: { value: 'v1' } }],
        files: [],
      },
    ]);
    // The first is synced (the check compares with its commit) and the cluster changes again.
    const third = await writeBack('v3', first.commit!, 'v1');
    assert.deepEqual(third.conflicts, []);
    assert.equal(files.get('settings.yaml'), settings('v3'));
    assert.deepEqual(
      (await readTrackState(store, 'ops')).unsyncedWriteBacks?.map((entry) => entry.commit),
      [second.commit, third.commit],
    );
  });

  it('lets Git win a value someone pushed after its write-back', async () => {
    // Prepare: v1 written back, then someone sets another value in Git.
    await writeBack('v1', R);
    files.set('settings.yaml', settings('set-in-git'));

    // Act
    const second = await writeBack('v2', R);

    // Assess
    assert.equal(second.result, 'unchanged');
    assert.deepEqual(second.conflicts, [
      {
        subject: SUBJECT,
        path: '/data/value',
        message: 'Git changed it since the revision compared with: Git wins',
      },
    ]);
    assert.equal(files.get('settings.yaml'), settings('set-in-git'));
  });
});

describe('drift changes of an object of a SOPS-encrypted file', () => {
  const object = (kind: string, name: string, file: string): RenderedObject => ({
    manifest: {
      apiVersion: 'v1',
      kind,
      metadata: { name, namespace: 'apps' },
      data: { color: 'blue' },
    },
    group: '',
    version: 'v1',
    kind,
    name,
    namespace: 'apps',
    subject: `${kind}/apps/${name}`,
    source: { file, line: 1 },
  });
  const drifted = (of: RenderedObject): DriftedObject => ({
    subject: of.subject,
    ref: { apiVersion: 'v1', kind: of.kind, name: of.name, namespace: 'apps' },
    patch: [{ op: 'replace', path: '/data/color', value: 'blue' }],
    changedBy: ['kubectl-edit'],
  });
  const live = (of: RenderedObject): KubeObject =>
    ({ ...of.manifest, data: { color: 'green' } }) as unknown as KubeObject;
  const encrypted = object('ConfigMap', 'sealed', 'sealed.yaml');
  const plain = object('ConfigMap', 'open', 'open.yaml');
  const cluster = {
    get: async (ref: { name: string }) => live(ref.name === 'sealed' ? encrypted : plain),
  } as unknown as KubernetesPort;

  it('goes to the file encrypted again, never as fields spliced into it', async () => {
    // Prepare: the encryption records what it is asked for.
    const asked: ChangedObject[] = [];
    const reencrypt: EncryptedWriteBack = {
      files: new Set(['sealed.yaml']),
      changes: async (objects) => {
        asked.push(...objects);
        return { changes: [replaced('ENC-2', 'ENC-0')], refused: [] };
      },
    };

    // Act
    const found = await writeBackChanges(
      cluster,
      [drifted(encrypted), drifted(plain)],
      [encrypted, plain],
      reencrypt,
    );

    // Assess
    assert.deepEqual(
      asked.map(({ object: o, paths }) => [o.subject, paths]),
      [['ConfigMap/apps/sealed', ['/data/color']]],
    );
    assert.deepEqual(found.refused, []);
    assert.deepEqual(
      found.changes.map((c) => [c.subject, c.fields, c.replace?.content]),
      [
        ['ConfigMap/apps/open', [{ path: '/data/color', value: 'green', base: 'blue' }], undefined],
        ['Secret/apps/db', [], 'ENC-2'],
      ],
    );
  });

  it('is refused naming the file and the object when it cannot be encrypted again', async () => {
    // Act
    const found = await writeBackChanges(cluster, [drifted(encrypted)], [encrypted], {
      files: new Set(['sealed.yaml']),
      changes: async () => {
        throw new Error('track "ops" cannot decrypt sealed.yaml here');
      },
    });

    // Assess
    assert.deepEqual(found.changes, []);
    assert.deepEqual(found.refused, [
      {
        subject: 'ConfigMap/apps/sealed',
        error:
          'ConfigMap/apps/sealed: sealed.yaml is SOPS-encrypted, so its objects are written back only encrypted again: track "ops" cannot decrypt sealed.yaml here',
      },
    ]);
  });
});
