/**
 * `driftless rollback` and `driftless unpin` over fake ports — argument rules,
 * output and exit codes — and one run of the real command in a child process
 * (a revision never stored is refused before any cluster is needed).
 * Rollback on the real cluster: test/integration/rollback.test.ts.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, beforeEach, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { LocalContext } from '../../src/sync/local-context.ts';
import { cliOver } from '../harness/run-cli.ts';
import { InMemoryCluster } from './fakes/in-memory-cluster.ts';
import { objectKey } from '../../src/cluster/kube-object.ts';
import { parseConfig } from '../../src/config/index.ts';
import type { GitSource } from '../../src/source/ports.ts';
import { createStore, type ClosableStore } from '../../src/store/create-store.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import { readTrackState } from '../../src/sync/track-state.ts';

const ONE = '1'.repeat(40);
const TWO = '2'.repeat(40);
const THREE = '3'.repeat(40);

const CONFIG = `
tracks:
  - name: web
    repository: https://git.example.com/org/web.git
    namespace: apps
  - name: frozen
    repository: https://git.example.com/org/frozen.git
    namespace: apps
    suspend: true
`;

const configMap = (name: string, value: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  value: "${value}"\n`;

/** What each revision of the repository holds: revision 2 changes `a` and adds `b`. */
const REVISIONS: Readonly<Record<string, string>> = {
  [ONE]: configMap('a', 'one'),
  [TWO]: `${configMap('a', 'two')}---\n${configMap('b', 'two')}`,
  [THREE]: configMap('a', 'three'),
};

/** A cluster in memory that stores what is applied; `refuseApply` makes every apply fail. */
class FakeCluster extends InMemoryCluster {
  configMapValue(name: string): unknown {
    const live = this.objects.get(
      objectKey({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'apps', name }),
    );
    return (live?.data as Record<string, string> | undefined)?.value;
  }
}

describe('driftless rollback and unpin', () => {
  let dir: string;
  let store: ClosableStore;
  let cluster: FakeCluster;
  /** The revision the branch points at now. */
  let head: string;
  let gitDown: boolean;

  const source: GitSource = {
    resolve: async () => {
      if (gitDown) throw new Error('git host unreachable');
      return { revision: head, ref: 'refs/heads/main' };
    },
    readFiles: async (_track, revision) => {
      if (gitDown) throw new Error('git host unreachable');
      return [{ path: 'all.yaml', content: new TextEncoder().encode(REVISIONS[revision] ?? '') }];
    },
  };

  const context = (): LocalContext => ({
    config: parseConfig(CONFIG, 'driftless.yaml'),
    artifacts: store.artifacts,
    state: store.state,
    source: async () => source,
    cluster: async () => cluster,
    close: () => undefined,
  });

  const driftless = cliOver(context);

  /** Syncs revision 1, then revision 2: two stored revisions, 2 applied. */
  const syncBoth = async (): Promise<void> => {
    head = ONE;
    assert.equal((await driftless('sync', '--track', 'web')).code, 0);
    head = TWO;
    assert.equal((await driftless('sync', '--track', 'web')).code, 0);
  };

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-cli-rollback-'));
    store = createStore({ type: 'fs', path: join(dir, 'store') });
    cluster = new FakeCluster();
    head = ONE;
    gitDown = false;
  });

  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  describe('argument rules', () => {
    for (const [args, expected] of [
      [['rollback', '--previous'], /rollback: --track is required/],
      [['rollback', '--track', 'web'], /rollback: give exactly one of --revision or --previous/],
      [
        ['rollback', '--track', 'web', '--previous', '--revision', ONE],
        /rollback: give exactly one of --revision or --previous/,
      ],
      [['rollback', '--track', 'web', '--detect-only'], /rollback: unknown flag --detect-only/],
      [['unpin'], /unpin: --track is required/],
      [['unpin', '--track', 'web', '-o', 'json'], /unpin: unknown flag -o/],
      [['unpin', '--track', 'web', '--revision', ONE], /unpin: unknown flag --revision/],
    ] as const) {
      it(`refuses "${args.join(' ')}" with exit code 2 before touching anything`, async () => {
        // Act
        const result = await driftless(...args);

        // Assess
        assert.equal(result.code, 2);
        assert.match(result.stderr, expected);
        assert.equal(result.stdout, '');
        assert.equal(cluster.objects.size, 0);
      });
    }
  });

  describe('rollback', () => {
    it('applies the previous revision, prunes to it, pins, and prints the sync shape', async () => {
      // Prepare
      await syncBoth();

      // Act
      const result = await driftless('rollback', '--track', 'web', '--previous', '-o', 'json');

      // Assess
      assert.equal(result.code, 0, result.stderr);
      const document = JSON.parse(result.stdout);
      assert.deepEqual(Object.keys(document), [
        'track',
        'revision',
        'result',
        'changeset',
        'status',
      ]);
      assert.equal(document.revision, ONE);
      assert.equal(document.result, 'applied');
      assert.deepEqual(document.changeset, [
        { subject: 'ConfigMap/apps/a', action: 'configured' },
        { subject: 'ConfigMap/apps/b', action: 'deleted' },
      ]);
      assert.equal(document.status.pinned, ONE);
      assert.equal(cluster.configMapValue('a'), 'one');
      assert.equal(cluster.configMapValue('b'), undefined);
    });

    it('rolls back to a revision named by a sha prefix while Git is down, saying how to unpin', async () => {
      // Prepare
      await syncBoth();
      gitDown = true;

      // Act
      const result = await driftless('rollback', '--track', 'web', '--revision', '1111111');

      // Assess
      assert.equal(result.code, 0, result.stderr);
      assert.equal(
        result.stdout,
        [
          `web: rolled back to ${ONE.slice(0, 12)} and pinned; run "driftless unpin --track web" to follow Git again`,
          'SUBJECT           ACTION      ERROR',
          'ConfigMap/apps/a  configured',
          'ConfigMap/apps/b  deleted',
          '2 objects: 1 configured, 1 deleted',
          '',
        ].join('\n'),
      );
      assert.match(result.stderr, new RegExp(`web: rolling back to ${ONE}`));
    });

    it('refuses a revision never stored with exit 3, listing the stored ones', async () => {
      // Prepare
      await syncBoth();

      // Act
      const result = await driftless('rollback', '--track', 'web', '--revision', 'abc1234');

      // Assess
      assert.equal(result.code, 3);
      assert.equal(result.stdout, '');
      assert.match(result.stderr, /revision abc1234 is not stored/);
      assert.match(result.stderr, new RegExp(`${TWO.slice(0, 12)}, ${ONE.slice(0, 12)}`));
      assert.equal(cluster.configMapValue('a'), 'two');
    });

    it('takes a full sha that is also stored rendered again as the commit stored under it', async () => {
      // Prepare: revision 1 also stored as rendered again (the track's render spec changed)
      await syncBoth();
      const again = `${ONE}+${'d'.repeat(12)}`;
      await store.artifacts.put('web', again, await store.artifacts.get('web', ONE));

      // Act
      const byCommit = await driftless('rollback', '--track', 'web', '--revision', ONE);
      // As listings show it: 12 digits, no digest.
      const byListed = await driftless(
        'rollback',
        '--track',
        'web',
        '--revision',
        ONE.slice(0, 12),
      );
      const byId = await driftless('rollback', '--track', 'web', '--revision', again);

      // Assess
      assert.equal(byCommit.code, 0, byCommit.stderr);
      assert.match(byCommit.stderr, new RegExp(`web: rolling back to ${ONE}\n`));
      assert.equal(byListed.code, 0, byListed.stderr);
      assert.match(byListed.stderr, new RegExp(`web: rolling back to ${ONE}\n`));
      assert.equal(byId.code, 0, byId.stderr);
      assert.match(byId.stdout, /^web: rolled back to 111111111111\+dddddddddddd and pinned/);
      assert.equal((await readTrackState(store.state, 'web')).pinned, again);
    });

    it('refuses a sha naming several renders of one commit, listing each with its digest', async () => {
      // Prepare: a commit stored only as two renders of it, as a chart's is
      await syncBoth();
      const bytes = await store.artifacts.get('web', ONE);
      await store.artifacts.put('web', `${THREE}+${'a'.repeat(12)}`, bytes);
      await store.artifacts.put('web', `${THREE}+${'b'.repeat(12)}`, bytes);

      // Act
      const refused = await driftless('rollback', '--track', 'web', '--revision', THREE);
      const named = await driftless(
        'rollback',
        '--track',
        'web',
        '--revision',
        '333333333333+bbbbbbbbbbbb',
      );

      // Assess
      assert.equal(refused.code, 3);
      // Newest first: the two were stored within moments, in either order.
      assert.match(refused.stderr, /: 333333333333\+(a{12}|b{12}), 333333333333\+(a{12}|b{12})$/m);
      assert.match(refused.stderr, /<sha>\+<digest>/);
      assert.doesNotMatch(refused.stderr, /give more of the sha/);
      assert.equal(named.code, 0, named.stderr);
      assert.match(named.stderr, new RegExp(`web: rolling back to ${THREE}\\+b{12}\n`));
    });

    it('goes back past a write-back entry recorded after the last sync', async () => {
      // Prepare: a write-back of a drift check on ONE ends (unchanged) after TWO was synced.
      await syncBoth();
      await store.state.appendHistory('web', {
        revision: ONE,
        appliedAt: new Date(Date.now() + 1000).toISOString(),
        result: 'unchanged',
        trigger: 'write-back',
        writtenBack: [],
      });

      // Act
      const result = await driftless('rollback', '--track', 'web', '--previous', '-o', 'json');

      // Assess: ONE, the revision before TWO; the write-back's entry is no sync of ONE after TWO.
      assert.equal(result.code, 0, result.stderr);
      assert.equal(JSON.parse(result.stdout).revision, ONE);
      assert.equal(cluster.configMapValue('a'), 'one');
    });

    it('refuses --previous with exit 3 when only one revision was ever applied', async () => {
      // Prepare
      assert.equal((await driftless('sync', '--track', 'web')).code, 0);

      // Act
      const result = await driftless('rollback', '--track', 'web', '--previous');

      // Assess
      assert.equal(result.code, 3);
      assert.match(result.stderr, /no earlier applied revision to go back to/);
    });

    it('exits 3 and still prints JSON when the cluster refuses the rollback', async () => {
      // Prepare
      await syncBoth();
      cluster.refuseApply = true;

      // Act
      const result = await driftless('rollback', '--track', 'web', '--previous', '-o', 'json');

      // Assess
      assert.equal(result.code, 3);
      const document = JSON.parse(result.stdout);
      assert.equal(document.result, 'failed');
      assert.match(document.error, /denied/);
      assert.equal(cluster.configMapValue('a'), 'two');
    });

    it('records the rollback in history with trigger "rollback"', async () => {
      // Prepare
      await syncBoth();

      // Act
      await driftless('rollback', '--track', 'web', '--previous');

      // Assess
      const history = await store.state.listHistory('web');
      assert.deepEqual(
        history.map((h) => [h.revision, h.result, h.trigger]),
        [
          [ONE, 'applied', 'rollback'],
          [TWO, 'applied', 'manual'],
          [ONE, 'applied', 'manual'],
        ],
      );
    });
  });

  describe('unpin', () => {
    it('keeps a pinned track where it is on sync, then unpins and applies the newest', async () => {
      // Prepare
      await syncBoth();
      await driftless('rollback', '--track', 'web', '--previous');
      const pinnedSync = await driftless('sync', '--track', 'web', '-o', 'json');

      // Act
      const result = await driftless('unpin', '--track', 'web');

      // Assess
      assert.equal(pinnedSync.code, 0, pinnedSync.stderr);
      assert.equal(JSON.parse(pinnedSync.stdout).result, 'pinned');
      assert.equal(result.code, 0, result.stderr);
      assert.equal(
        result.stdout,
        [
          `web: unpinned (was pinned at ${ONE})`,
          `web: applied ${TWO.slice(0, 12)}`,
          'SUBJECT           ACTION      ERROR',
          'ConfigMap/apps/a  configured',
          'ConfigMap/apps/b  created',
          '2 objects: 1 created, 1 configured',
          '',
        ].join('\n'),
      );
      assert.equal(cluster.configMapValue('b'), 'two');
    });

    it('names the pin in sync -o json as the text does, and still fetches the newest revision', async () => {
      // Prepare
      await syncBoth();
      await driftless('rollback', '--track', 'web', '--previous');

      // Act
      const json = await driftless('sync', '--track', 'web', '-o', 'json');
      const text = await driftless('sync', '--track', 'web');

      // Assess
      assert.equal(json.code, 0, json.stderr);
      const document = JSON.parse(json.stdout);
      assert.equal(document.result, 'pinned');
      assert.equal(document.revision, ONE);
      assert.equal(document.status.desiredRevision, TWO, 'the newest revision is still desired');
      assert.match(text.stdout, /^web: pinned at 111111111111;/);
    });

    it('applies nothing and leaves the desired revision alone on sync --revision of a pinned track', async () => {
      // Prepare
      await syncBoth();
      await driftless('rollback', '--track', 'web', '--previous');

      // Act
      const result = await driftless('sync', '--track', 'web', '--revision', THREE, '-o', 'json');

      // Assess
      assert.equal(result.code, 0, result.stderr);
      const document = JSON.parse(result.stdout);
      assert.equal(document.result, 'pinned');
      assert.equal(document.revision, ONE);
      assert.equal(document.status.desiredRevision, TWO);
      assert.equal(cluster.configMapValue('a'), 'one');
      assert.ok(await store.artifacts.has('web', THREE), 'stored: a rollback can pick it');
    });

    it('exits 3 when the sync after unpinning fails, leaving the track unpinned', async () => {
      // Prepare
      await syncBoth();
      await driftless('rollback', '--track', 'web', '--previous');
      gitDown = true;

      // Act
      const result = await driftless('unpin', '--track', 'web');
      const status = JSON.parse((await driftless('status', '--track', 'web', '-o', 'json')).stdout);

      // Assess
      assert.equal(result.code, 3);
      assert.match(result.stdout, /web: failed: git host unreachable/);
      assert.equal(status.pinned, null);
    });

    it('unpins a track suspended by driftless suspend without syncing it, exit 0', async () => {
      // Prepare
      await syncBoth();
      await driftless('rollback', '--track', 'web', '--previous');
      await driftless('suspend', '--track', 'web');
      const before = cluster.configMapValue('b');

      // Act
      const result = await driftless('unpin', '--track', 'web');

      // Assess
      assert.equal(result.code, 0, result.stderr);
      assert.equal(
        result.stdout,
        `web: unpinned (was pinned at ${ONE})\nweb: suspended (by "driftless suspend"; run "driftless resume"); not synced\n`,
      );
      assert.equal(cluster.configMapValue('b'), before);
    });

    it('unpins a suspended track without syncing it', async () => {
      // Act
      const result = await driftless('unpin', '--track', 'frozen');

      // Assess
      assert.equal(result.code, 0, result.stderr);
      assert.equal(
        result.stdout,
        'frozen: was not pinned\nfrozen: suspended (suspend: true in ./driftless.yaml); not synced\n',
      );
      assert.equal(cluster.objects.size, 0);
    });
  });
});

describe('driftless rollback as a command', () => {
  const CLI = fileURLToPath(new URL('../../src/cli/run.ts', import.meta.url));
  // Resolved here: the child runs in a temp directory, where `--import tsx` would not be found.
  const TSX = import.meta.resolve('tsx');
  let dir: string;

  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('refuses a revision never stored with exit 3 and no cluster at all', async () => {
    // Prepare: a store holding one artifact, and a kubeconfig that does not exist.
    dir = await mkdtemp(join(tmpdir(), 'driftless-cli-rollback-child-'));
    await writeFile(
      join(dir, 'driftless.yaml'),
      [
        'store: {type: fs, path: store}',
        'clusters: [{name: prod, kubeconfig: ./missing-kubeconfig}]',
        'tracks: [{name: web, repository: https://git.example.com/org/web.git}]',
      ].join('\n'),
    );
    await new FsStore({ path: join(dir, 'store') }).put('web', ONE, new Uint8Array([1]));

    // Act
    const result = await new Promise<{ code: number; stdout: string; stderr: string }>(
      (resolve) => {
        execFile(
          process.execPath,
          ['--import', TSX, CLI, 'rollback', '--track', 'web', '--revision', TWO, '-o', 'json'],
          { cwd: dir, env: { ...process.env, NO_COLOR: '1' } },
          (error, stdout, stderr) =>
            resolve({
              code: error ? (typeof error.code === 'number' ? error.code : -1) : 0,
              stdout,
              stderr,
            }),
        );
      },
    );

    // Assess
    assert.equal(result.code, 3, result.stderr);
    // -o json: the one document on stdout is the error
    assert.deepEqual(Object.keys(JSON.parse(result.stdout)), ['track', 'error']);
    assert.match(
      result.stderr,
      new RegExp(
        `^driftless: track "web": revision ${TWO} is not stored; stored revisions \\(newest first\\): ${ONE.slice(0, 12)}$`,
        'm',
      ),
    );
  });
});
