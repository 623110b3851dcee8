/**
 * `driftless diff` under two-way sync rules agrees with `sync`: what the sync would leave alone
 * (a `syncTo: git` object the cluster drives, a `syncTo: ignore` object it keeps) is not shown
 * as a change and does not make it exit 1. The real CLI, use-cases and fs store; a Git source
 * whose head can move and the in-memory cluster fake.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { objectKey, type KubeObject } from '../../src/cluster/kube-object.ts';
import { parseConfig } from '../../src/config/index.ts';
import type { GitSource } from '../../src/source/ports.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import type { LocalContext } from '../../src/sync/local-context.ts';
import { cliOver } from '../harness/run-cli.ts';
import { InMemoryCluster } from './fakes/in-memory-cluster.ts';

const FIRST = '1'.repeat(40);
const SECOND = '2'.repeat(40);

const configMap = (name: string, value: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  value: ${value}\n`;

/** A Git source whose head is `head`, with `files[revision]` as its one file. */
class MovingGit implements GitSource {
  head = FIRST;
  readonly files = new Map<string, string>();

  async resolve() {
    return { revision: this.head, ref: 'refs/heads/main' };
  }

  async readFiles(_track: unknown, revision: string) {
    const content = this.files.get(revision);
    if (content === undefined) throw new Error(`no commit ${revision}`);
    return [{ path: 'all.yaml', content: new TextEncoder().encode(content) }];
  }
}

interface Diff {
  readonly changes: { subject: string; action: string }[];
}

describe('diff under syncTo rules', () => {
  let dir: string;
  let store: FsStore;
  let cluster: InMemoryCluster;
  let git: MovingGit;
  let config: string;

  const driftless = cliOver((): LocalContext => ({
    config: parseConfig(config, 'driftless.yaml'),
    artifacts: store,
    state: store,
    source: async () => git,
    cluster: async () => cluster,
    close: () => undefined,
  }));

  const live = (name: string): KubeObject | undefined =>
    cluster.objects.get(
      objectKey({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'apps', name }),
    );

  /** Changes `name`'s value in the cluster, as kubectl edit would. */
  function editLive(name: string, value: string): void {
    const object = live(name);
    assert.ok(object, `ConfigMap/apps/${name} is in the cluster`);
    object['data'] = { value };
    object.metadata.resourceVersion = `${Number(object.metadata.resourceVersion) + 100}`;
  }

  const changesOf = (stdout: string): string[] =>
    (JSON.parse(stdout) as Diff).changes.map((c) => `${c.action} ${c.subject}`);

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-diff-rules-'));
  });

  beforeEach(async () => {
    store = new FsStore({ path: await mkdtemp(join(dir, 'store-')) });
    cluster = new InMemoryCluster();
    git = new MovingGit();
    config = `
tracks:
  - name: web
    repository: https://git.example.com/org/web.git
    namespace: apps
    rules: [{apiGroups: [""], resources: [configmaps], names: ["plain"], syncTo: git}]
`;
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('does not show a syncTo: git object changed in the cluster, which sync skips, and exits 0', async () => {
    // Prepare: synced; then the cluster drives `plain` away from Git.
    git.files.set(FIRST, [configMap('plain', 'from-git'), configMap('other', 'a')].join('---\n'));
    assert.equal((await driftless('sync', '--track', 'web')).code, 0);
    editLive('plain', 'from-cluster');

    // Act
    const diff = await driftless('diff', '--track', 'web', '-o', 'json');
    const text = await driftless('diff', '--track', 'web');
    const sync = await driftless('sync', '--track', 'web', '-o', 'json');

    // Assess: no change and exit 0, as the sync then skips it and changes nothing.
    assert.equal(diff.code, 0, diff.stdout + diff.stderr);
    assert.deepEqual(changesOf(diff.stdout), []);
    assert.equal(text.code, 0, text.stderr);
    assert.equal(text.stdout, `web: no differences at ${FIRST.slice(0, 12)}\n`);
    const synced = JSON.parse(sync.stdout) as {
      result: string;
      changeset: { subject: string; action: string; reason?: string }[];
    };
    assert.equal(synced.result, 'unchanged');
    assert.match(
      synced.changeset.find((e) => e.subject === 'ConfigMap/apps/plain')?.reason ?? '',
      /^syncTo: git: the cluster drives it/,
    );
    assert.deepEqual(live('plain')?.['data'], { value: 'from-cluster' });
  });

  it('shows what sync does apply under syncTo: git: a missing object, and a change Git made', async () => {
    // Prepare: synced; then `plain` is changed in the cluster and by Git's next revision, and
    // `gone` (also syncTo: git) is deleted by hand.
    config = config.replace('names: ["plain"]', 'names: ["plain", "gone"]');
    git.files.set(FIRST, [configMap('plain', 'one'), configMap('gone', 'x')].join('---\n'));
    assert.equal((await driftless('sync', '--track', 'web')).code, 0);
    editLive('plain', 'from-cluster');
    cluster.objects.delete(
      objectKey({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'apps', name: 'gone' }),
    );
    git.files.set(SECOND, [configMap('plain', 'two'), configMap('gone', 'x')].join('---\n'));
    git.head = SECOND;

    // Act
    const diff = await driftless('diff', '--track', 'web', '-o', 'json');
    const sync = await driftless('sync', '--track', 'web', '-o', 'json');

    // Assess: both show, and exit 1; the sync then does just that.
    assert.equal(diff.code, 1, diff.stdout + diff.stderr);
    assert.deepEqual(changesOf(diff.stdout).sort(), [
      'create ConfigMap/apps/gone',
      'update ConfigMap/apps/plain',
    ]);
    const synced = JSON.parse(sync.stdout) as { changeset: { subject: string; action: string }[] };
    assert.deepEqual(synced.changeset.map((e) => `${e.action} ${e.subject}`).sort(), [
      'configured ConfigMap/apps/plain',
      'created ConfigMap/apps/gone',
    ]);
  });

  it('does not show as a prune an object a syncTo: ignore rule now leaves out', async () => {
    // Prepare: `kept` applied by a sync, then a rule leaves it out (still in Git); the track
    // prunes (the default).
    git.files.set(FIRST, [configMap('plain', 'a'), configMap('kept', 'b')].join('---\n'));
    assert.equal((await driftless('sync', '--track', 'web')).code, 0);
    config = config.replace(
      'rules: [',
      'rules: [{apiGroups: [""], resources: [configmaps], names: ["kept"], syncTo: ignore}, ',
    );

    // Act
    const diff = await driftless('diff', '--track', 'web', '-o', 'json');
    const sync = await driftless('sync', '--track', 'web', '-o', 'json');

    // Assess: nothing to change, and sync indeed keeps it.
    assert.equal(diff.code, 0, diff.stdout + diff.stderr);
    assert.deepEqual(changesOf(diff.stdout), []);
    assert.equal(sync.code, 0, sync.stderr);
    assert.ok(live('kept'), 'the ignored object stays');
  });
});
