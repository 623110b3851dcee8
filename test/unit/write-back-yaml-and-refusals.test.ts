/**
 * Write-back edits around what YAML lets a key be written without: a key
 * with no value in a flow mapping (`{a, b: x}`, `a` is null) and the comments
 * of an explicit key (`? a`) whose pair is printed anew. Byte for byte, each
 * result parsed back. A SOPS-encrypted file replaced whole for all its
 * Secrets, any change it does not hold refused. And a drift check's
 * refusals recorded in history without a write-back job: once while they
 * stay the same (real fs store).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import type { WriteBackChange } from '../../src/render/write-back-change.ts';
import { editManifests } from '../../src/source/edit-manifests.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import { recordRefusedWriteBack } from '../../src/sync/write-back.ts';

const HEAD = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: apps\n';

function change(fields: WriteBackChange['fields']): WriteBackChange {
  return {
    subject: 'ConfigMap/apps/cm',
    apiVersion: 'v1',
    kind: 'ConfigMap',
    name: 'cm',
    namespace: 'apps',
    file: 'cm.yaml',
    line: 1,
    fields,
  };
}

/** The edited file, with no conflict or refusal. */
function edited(before: string, fields: WriteBackChange['fields']): string {
  const edits = editManifests(() => before, [change(fields)]);
  assert.deepEqual(edits.conflicts, []);
  assert.deepEqual(edits.refused, []);
  const after = edits.files.get('cm.yaml');
  assert.ok(after !== undefined, 'the file was edited');
  return after;
}

/** The `data` of the file's one document, as a YAML reader takes it. */
function dataOf(text: string): unknown {
  const [document, ...others] = parseAllDocuments(text);
  assert.equal(others.length, 0);
  assert.deepEqual(document!.errors, []);
  return (document!.toJS() as { data: unknown }).data;
}

describe('write-back to a flow mapping with a key written without a value', () => {
  const before = `${HEAD}data: {a, b: x}\n`;

  it('fills the key in, where Git had it null', () => {
    const after = edited(before, [{ path: '/data/a', value: 'one', base: null }]);
    assert.equal(after, `${HEAD}data: {a: one, b: x}\n`);
    assert.deepEqual(dataOf(after), { a: 'one', b: 'x' });
  });

  it('leaves the key as written when another field changes', () => {
    const after = edited(before, [{ path: '/data/b', value: 'z', base: 'x' }]);
    assert.equal(after, `${HEAD}data: {a, b: z}\n`);
    assert.deepEqual(dataOf(after), { a: null, b: 'z' });
  });

  it('removes the key the cluster removed', () => {
    const after = edited(`${HEAD}data: {b: x, a, c: y}\n`, [{ path: '/data/a', base: null }]);
    assert.equal(after, `${HEAD}data: {b: x, c: y}\n`);
    assert.deepEqual(dataOf(after), { b: 'x', c: 'y' });
  });

  it('still leaves it to Git when Git changed it since the revision compared with', () => {
    const edits = editManifests(
      () => before,
      [change([{ path: '/data/a', value: 'one', base: 'was' }])],
    );
    assert.deepEqual(edits.conflicts, [
      {
        subject: 'ConfigMap/apps/cm',
        path: '/data/a',
        message: 'Git changed it since the revision compared with: Git wins',
      },
    ]);
    assert.equal(edits.files.size, 0);
  });
});

describe('write-back of an explicit key (`? a`), printed anew as a pair', () => {
  it('keeps the comments written between the key and its value', () => {
    const before = `${HEAD}data:\n  # about a\n  ? a # the key\n  # between\n  : "1" # the value\n  b: x\n`;
    const after = edited(before, [{ path: '/data/a', value: '2', base: '1' }]);
    assert.equal(
      after,
      `${HEAD}data:\n  # about a\n  # the key\n  # between\n  a: "2" # the value\n  b: x\n`,
    );
    assert.deepEqual(dataOf(after), { a: '2', b: 'x' });
  });

  it('keeps them before a value printed over several lines too', () => {
    const before = `${HEAD}data:\n  ? a # the key\n  :\n    k: v\n  b: x\n`;
    const after = edited(before, [
      { path: '/data/a', value: { k: 'w', size: 'm' }, base: { k: 'v' } },
    ]);
    assert.equal(after, `${HEAD}data:\n  # the key\n  a:\n    k: w\n    size: m\n  b: x\n`);
    assert.deepEqual(dataOf(after), { a: { k: 'w', size: 'm' }, b: 'x' });
  });
});

describe('write-back of a SOPS-encrypted file holding two Secrets', () => {
  const BASE = 'kind: Secret\nsops: {mac: ENC[old]}\n';
  const BOTH = 'kind: Secret\nsops: {mac: ENC[both]}\n';
  function secret(name: string, replace?: WriteBackChange['replace']): WriteBackChange {
    return {
      subject: `Secret/apps/${name}`,
      apiVersion: 'v1',
      kind: 'Secret',
      name,
      namespace: 'apps',
      file: 'secrets.yaml',
      line: 1,
      ...(replace === undefined ? {} : { replace }),
      fields: [],
    };
  }

  it('writes the file once and reports both Secrets written', () => {
    const changes = [
      secret('a', { content: BOTH, base: BASE }),
      secret('b', { content: BOTH, base: BASE }),
    ];
    const edits = editManifests(() => BASE, changes);
    assert.deepEqual([...edits.files], [['secrets.yaml', BOTH]]);
    assert.deepEqual(edits.written, ['Secret/apps/a', 'Secret/apps/b']);
    assert.deepEqual(edits.conflicts, []);
    assert.deepEqual(edits.refused, []);
    // Git already holding it (a write-back not synced yet): both written, nothing to change.
    const again = editManifests(() => BOTH, changes);
    assert.deepEqual([...again.files], []);
    assert.deepEqual(again.written, ['Secret/apps/a', 'Secret/apps/b']);
    // Git changed the file meanwhile: both are conflicts, Git wins.
    const changed = editManifests(() => 'kind: Secret\nsops: {mac: ENC[git]}\n', changes);
    assert.deepEqual([...changed.files], []);
    assert.deepEqual(changed.written, []);
    assert.deepEqual(
      changed.conflicts.map((conflict) => conflict.subject),
      ['Secret/apps/a', 'Secret/apps/b'],
    );
  });

  it('refuses a change the file written does not hold, naming the file and the Secret', () => {
    // A file encrypted for each Secret alone (as a job made before both went in one), and a
    // field edit of an encrypted file: neither is in the file written, neither is dropped.
    const edits = editManifests(
      () => BASE,
      [
        secret('a', { content: 'kind: Secret\nsops: {mac: ENC[a]}\n', base: BASE }),
        secret('b', { content: 'kind: Secret\nsops: {mac: ENC[b]}\n', base: BASE }),
        { ...secret('c'), fields: [{ path: '/type', value: 'Opaque', base: 'x' }] },
      ],
    );
    assert.equal(edits.files.get('secrets.yaml'), 'kind: Secret\nsops: {mac: ENC[a]}\n');
    assert.deepEqual(edits.written, ['Secret/apps/a']);
    assert.deepEqual(edits.refused, [
      {
        subject: 'Secret/apps/b',
        error:
          'secrets.yaml is written whole, encrypted again with the change of Secret/apps/a, which does not hold the change of Secret/apps/b: not written back',
      },
      {
        subject: 'Secret/apps/c',
        error:
          'secrets.yaml is written whole, encrypted again with the change of Secret/apps/a, which does not hold the change of Secret/apps/c: not written back',
      },
    ]);
  });
});

describe('a drift check that refused every write-back it found', () => {
  it('is recorded once while it refuses the same, and again when that changes', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'driftless-write-back-yaml-'));
    try {
      const store = new FsStore({ path: dir });
      const revision = '5'.repeat(40);
      const secret = { subject: 'Secret/apps/token', error: 'Secret/apps/token: plain text' };
      const built = { subject: 'ConfigMap/apps/kz', error: 'ConfigMap/apps/kz: kustomize' };
      let clock = Date.parse('2026-01-01T00:00:00Z');
      const deps = { state: store, now: () => new Date((clock += 1000)) };

      // Act
      // Each interval's sync records an entry between two checks that refuse the same.
      const poll = () =>
        store.appendHistory('ops', {
          revision,
          appliedAt: new Date((clock += 1000)).toISOString(),
          result: 'unchanged',
          trigger: 'schedule',
        });
      await recordRefusedWriteBack('ops', revision, [secret], deps);
      await poll();
      await recordRefusedWriteBack('ops', revision, [secret], deps);
      await poll();
      await recordRefusedWriteBack('ops', revision, [secret, built], deps);

      // Assess: newest first.
      const history = (await store.listHistory('ops')).filter(
        (entry) => entry.trigger === 'write-back',
      );
      assert.deepEqual(
        history.map((entry) => [entry.result, entry.trigger, entry.revision, entry['refused']]),
        [
          ['refused', 'write-back', revision, [secret, built]],
          ['refused', 'write-back', revision, [secret]],
        ],
      );
      assert.equal(history[1]!['error'], 'nothing written back: Secret/apps/token: plain text');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
