/**
 * A `syncTo: git` object the cluster changed, written back to Git, and changed back in the
 * cluster before that write-back's commit is synced: the sync of that commit leaves the cluster
 * as it is — Git's only change was Driftless' own write of a value the cluster no longer has —
 * and the next drift check writes the cluster's value back. A person's change to the object in
 * Git still wins, and so does a write kept without what it replaced (by an older version).
 * The real CLI (sync, drift), use-cases, file editing and fs store; a Git branch in memory
 * (each push a commit of its own) and the in-memory cluster fake.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { objectKey, type KubeObject } from '../../src/cluster/kube-object.ts';
import { parseConfig } from '../../src/config/index.ts';
import type { CommitRequest, GitSource } from '../../src/source/ports.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import type { LocalContext } from '../../src/sync/local-context.ts';
import { unchangedButOwnWrites, type OwnWrite } from '../../src/sync/own-writes.ts';
import { readTrackState, updateTrackState } from '../../src/sync/track-state.ts';
import { cliOver } from '../harness/run-cli.ts';
import { InMemoryCluster } from './fakes/in-memory-cluster.ts';

const FIRST = 'f'.repeat(40);
const SUBJECT = 'ConfigMap/apps/settings';
const LEFT = /^syncTo: git: the cluster drives it/;

const settings = (value: string, level = 'info') =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: apps\ndata:\n  value: ${value} # tuned by ops\n  level: ${level}\n`;

/** A branch in memory: each commit's files; a push (write-back or a person's) makes a commit. */
class Branch implements GitSource {
  readonly commits = new Map<string, Map<string, string>>();
  head = FIRST;
  private made = 0;

  constructor(files: Record<string, string>) {
    this.commits.set(FIRST, new Map(Object.entries(files)));
  }

  /** A person's commit on top of the head, with `file` set to `content`. */
  push(file: string, content: string): string {
    return this.commitOver((files) => files.set(file, content));
  }

  async resolve() {
    return { revision: this.head, ref: 'refs/heads/main' };
  }

  async readFiles(_track: unknown, revision: string) {
    const files = this.commits.get(revision);
    if (files === undefined) throw new Error(`no commit ${revision}`);
    return [...files].map(([path, content]) => ({
      path,
      content: new TextEncoder().encode(content),
    }));
  }

  async commit(_track: unknown, request: CommitRequest) {
    const files = this.commits.get(this.head)!;
    const edited = await request.edit(async (path) => files.get(path));
    if (edited.size === 0) return { commit: null, attempts: 1 };
    return {
      commit: this.commitOver((next) => {
        for (const [path, content] of edited) next.set(path, content);
      }),
      attempts: 1,
    };
  }

  private commitOver(edit: (files: Map<string, string>) => void): string {
    const files = new Map(this.commits.get(this.head)!);
    edit(files);
    this.made += 1;
    this.head = String(this.made).repeat(40);
    this.commits.set(this.head, files);
    return this.head;
  }
}

interface Synced {
  result: string;
  changeset: { subject: string; action: string; reason?: string }[];
}

describe('a write-back the cluster reverted before its sync', () => {
  const CONFIG = [
    'tracks:',
    '  - name: ops',
    '    repository: https://git.example.com/ops.git',
    '    reference: main',
    '    namespace: apps',
    '    rules: [{apiGroups: [""], resources: [configmaps], syncTo: git}]',
  ].join('\n');
  let dir: string;
  let store: FsStore;
  let cluster: InMemoryCluster;
  let git: Branch;
  /** W: the write-back of B. */
  let written: string;

  const driftless = cliOver((): LocalContext => ({
    config: parseConfig(CONFIG, 'driftless.yaml'),
    artifacts: store,
    state: store,
    source: async () => git,
    cluster: async () => cluster,
    close: () => undefined,
  }));

  const live = (): KubeObject | undefined =>
    cluster.objects.get(
      objectKey({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'apps', name: 'settings' }),
    );

  /** Sets the ConfigMap's `value` in the cluster, as kubectl edit would. */
  function editLive(value: string): void {
    const object = live();
    assert.ok(object, `${SUBJECT} is in the cluster`);
    object['data'] = { ...(object['data'] as object), value };
    object.metadata.resourceVersion = `${Number(object.metadata.resourceVersion) + 100}`;
  }

  /** `driftless drift`, which writes the cluster's change back: the commit it pushed. */
  const drift = async (): Promise<string> => {
    const run = await driftless('drift', '--track', 'ops', '-o', 'json');
    const checked = JSON.parse(run.stdout) as { writtenBack: string[]; commit: string | null };
    assert.deepEqual(checked.writtenBack, [SUBJECT], run.stdout + run.stderr);
    assert.ok(checked.commit !== null && checked.commit === git.head, run.stdout);
    return checked.commit;
  };

  const sync = async (): Promise<Synced> => {
    const run = await driftless('sync', '--track', 'ops', '-o', 'json');
    assert.equal(run.code, 0, run.stdout + run.stderr);
    return JSON.parse(run.stdout) as Synced;
  };

  const entryOf = (synced: Synced) => synced.changeset.find((e) => e.subject === SUBJECT);

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-write-back-revert-'));
  });

  beforeEach(async () => {
    store = new FsStore({ path: await mkdtemp(join(dir, 'store-')) });
    cluster = new InMemoryCluster();
    git = new Branch({ 'settings.yaml': settings('A') });
    // Prepare (every test): FIRST synced; the cluster then changes `value` to B; a drift check
    // comparing with FIRST writes B back (commit W, not synced yet).
    await sync();
    editLive('B');
    written = await drift();
    assert.equal(git.commits.get(written)?.get('settings.yaml'), settings('B'));
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps the cluster’s revert, and the next drift check writes it back', async () => {
    // Prepare
    editLive('A'); // someone puts the old value back before W is synced

    // Act
    const synced = await sync();

    // Assess: W synced, its object left to the cluster, which still holds A.
    assert.equal((await readTrackState(store, 'ops')).appliedRevision, written);
    assert.match(entryOf(synced)?.reason ?? '', LEFT, JSON.stringify(synced));
    assert.deepEqual(live()?.['data'], { value: 'A', level: 'info' });

    // And the next drift check (comparing with W, which holds B) writes the revert back.
    const again = await drift();
    assert.equal(git.commits.get(again)?.get('settings.yaml'), settings('A'));
  });

  it('diff shows what that sync does: nothing to change for the reverted object', async () => {
    // Prepare
    editLive('A');

    // Act
    const run = await driftless('diff', '--track', 'ops', '-o', 'json');

    // Assess: the revision compared with is W, and the object W's sync leaves alone is not listed.
    const shown = JSON.parse(run.stdout) as { revision: string; changes: { subject: string }[] };
    assert.equal(shown.revision, written, run.stdout + run.stderr);
    assert.deepEqual(
      shown.changes.map((change) => change.subject),
      [],
      run.stdout,
    );
    assert.equal(run.code, 0, run.stdout + run.stderr);
  });

  it('changes nothing when the cluster still holds what was written back', async () => {
    // Act
    const synced = await sync();

    // Assess
    assert.equal(synced.result, 'unchanged', JSON.stringify(synced));
    assert.match(entryOf(synced)?.reason ?? '', LEFT);
    assert.deepEqual(live()?.['data'], { value: 'B', level: 'info' });
  });

  it('applies a person’s change to the same object in the same revision: Git wins', async () => {
    // Prepare: a person's commit on top of W changes `level`; the cluster reverts `value`.
    git.push('settings.yaml', settings('B', 'debug'));
    editLive('A');

    // Act
    const synced = await sync();

    // Assess: the revision applied as Git has it.
    assert.equal(entryOf(synced)?.action, 'configured', JSON.stringify(synced));
    assert.deepEqual(live()?.['data'], { value: 'B', level: 'debug' });
  });

  it('applies a person’s later commit of the value an old write-back wrote: Git wins', async () => {
    // Prepare: W (A -> B) reaches the cluster only inside a person's commit P on top of it; then
    // people set `value` to A (Q) and back to B (R), each synced. W is never the revision synced.
    git.push('settings.yaml', settings('B', 'debug'));
    await sync();
    git.push('settings.yaml', settings('A', 'debug'));
    await sync();
    git.push('settings.yaml', settings('B', 'debug'));

    // Act
    const synced = await sync();

    // Assess: R is a person's change, applied as Git has it (W's old write explains nothing).
    assert.equal(entryOf(synced)?.action, 'configured', JSON.stringify(synced));
    assert.deepEqual(live()?.['data'], { value: 'B', level: 'debug' });
  });

  it('applies a write-back made against a revision no longer the one applied: Git wins', async () => {
    // Prepare: a person's commit P lands on top of W (another file); the cluster changes again
    // to C and the drift check, still comparing with the first revision, writes C back (W2, on
    // top of P). P is synced first (B over C: what the sync of P applies), then W2.
    const other = settings('x').replaceAll('settings', 'other');
    const person = git.push('other.yaml', other);
    editLive('C');
    const again = await drift();
    const first = await driftless('sync', '--track', 'ops', '--revision', person, '-o', 'json');
    assert.equal(first.code, 0, first.stdout + first.stderr);

    // Act
    const synced = await sync();

    // Assess: W2 synced, and its C applied: it was made comparing with a revision the sync of P
    // replaced, so its write is not told apart from Git's by the revision applied now.
    assert.equal((await readTrackState(store, 'ops')).appliedRevision, again);
    assert.equal(entryOf(synced)?.action, 'configured', JSON.stringify(synced));
    assert.deepEqual(live()?.['data'], { value: 'C', level: 'info' });
  });

  it('applies a write-back commit again after a rollback: its write is no revert to keep', async () => {
    // Prepare: W synced (the cluster holds B), then rolled back to the first revision (A) and
    // unpinned, which syncs the head, W, again.
    await sync();
    const back = await driftless('rollback', '--track', 'ops', '--revision', FIRST, '-o', 'json');
    assert.equal(back.code, 0, back.stdout + back.stderr);
    assert.deepEqual(live()?.['data'], { value: 'A', level: 'info' });

    // Act
    const unpinned = await driftless('unpin', '--track', 'ops');

    // Assess: W applied as Git has it; the rollback's A was Driftless' own doing, not a revert.
    assert.equal(unpinned.code, 0, unpinned.stdout + unpinned.stderr);
    assert.equal((await readTrackState(store, 'ops')).appliedRevision, written);
    assert.deepEqual(live()?.['data'], { value: 'B', level: 'info' });
  });

  it('applies a write kept without what it replaced (an older version): Git wins', async () => {
    // Prepare: W as an older version kept it; the cluster reverts.
    await updateTrackState(store, 'ops', (state) => {
      for (const writeBack of state.unsyncedWriteBacks ?? []) {
        for (const field of writeBack.fields) delete field.replaced;
      }
    });
    editLive('A');

    // Act
    const synced = await sync();

    // Assess
    assert.equal(entryOf(synced)?.action, 'configured', JSON.stringify(synced));
    assert.deepEqual(live()?.['data'], { value: 'B', level: 'info' });
  });
});

describe('an object changed in Git by no more than its own writes', () => {
  const object = (data: Record<string, string>) => ({ kind: 'ConfigMap', data });
  const write = (path: string, value: unknown, replaced?: unknown): OwnWrite => ({
    subject: SUBJECT,
    path,
    ...(value === undefined ? {} : { value }),
    replaced: replaced === undefined ? {} : { value: replaced },
  });

  it('folds writes one after another, an object added whole and a field removed', () => {
    // A -> B -> C, written by two write-backs not synced yet: the second made over the first.
    assert.equal(
      unchangedButOwnWrites(object({ v: 'A' }), object({ v: 'C' }), [
        write('/data/v', 'B', 'A'),
        write('/data/v', 'C', 'B'),
      ]),
      true,
    );
    assert.equal(
      unchangedButOwnWrites(undefined, object({ v: 'A' }), [write('', object({ v: 'A' }))]),
      true,
    );
    assert.equal(
      unchangedButOwnWrites(object({ v: 'A', w: 'x' }), object({ v: 'A' }), [
        write('/data/w', undefined, 'x'),
      ]),
      true,
    );
  });

  it('counts as changed what the writes do not explain exactly', () => {
    // Made over another value; a redacted value; another field changed too.
    assert.equal(
      unchangedButOwnWrites(object({ v: 'A' }), object({ v: 'B' }), [write('/data/v', 'B', 'Z')]),
      false,
    );
    assert.equal(
      unchangedButOwnWrites(object({ v: '***' }), object({ v: 'B' }), [
        write('/data/v', 'B', '***'),
      ]),
      false,
    );
    assert.equal(
      unchangedButOwnWrites(object({ v: 'A', w: 'x' }), object({ v: 'B', w: 'y' }), [
        write('/data/v', 'B', 'A'),
      ]),
      false,
    );
  });
});
