/**
 * A commit that fails to render while its track is pinned (by a rollback) at another. Nothing
 * would apply it until `driftless unpin`, and the pinned revision runs on: as a suspended Flux
 * source or an Argo CD application pinned to a revision takes no notice of new commits, the
 * track stays Ready (reason Pinned) and `driftless sync` ends at the pin (exit 0), the broken
 * commit a warning and its FilesParsed False. Unpinned, the same commit fails the sync (exit 3),
 * and so does a revision asked for by name while pinned, whose failure is what was asked about.
 *
 * The real CLI runs over fake ports (cliOver), and the real fetch and sync jobs as `serve` and
 * the AWS functions run them apart (servedJobs), on the fs store with the in-memory cluster.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, beforeEach, describe, it } from 'node:test';
import { parseConfig } from '../../src/config/index.ts';
import type { GitSource } from '../../src/source/ports.ts';
import { createStore, type ClosableStore } from '../../src/store/create-store.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import type { LocalContext } from '../../src/sync/local-context.ts';
import { conditionOf, readTrackState, type TrackState } from '../../src/sync/track-state.ts';
import { cliOver } from '../harness/run-cli.ts';
import { InMemoryCluster } from './fakes/in-memory-cluster.ts';
import { outcomeOf, servedJobs } from './fakes/served-jobs.ts';

const ONE = '1'.repeat(40);
const TWO = '2'.repeat(40);
/** A commit whose YAML does not parse: its render fails. */
const BROKEN = 'b'.repeat(40);

const configMap = (name: string, value: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  value: "${value}"\n`;

const REVISIONS: Readonly<Record<string, string>> = {
  [ONE]: configMap('a', 'one'),
  [TWO]: configMap('a', 'two'),
  [BROKEN]: 'kind: [',
};

/** Each track's branch head, read from `heads`; every track's commits hold REVISIONS. */
function gitOf(heads: Map<string, string>): GitSource {
  return {
    resolve: async (track) => ({ revision: heads.get(track.name)!, ref: 'refs/heads/main' }),
    readFiles: async (_track, revision) => [
      { path: 'all.yaml', content: new TextEncoder().encode(REVISIONS[revision] ?? '') },
    ],
  };
}

const ready = (state: TrackState) => {
  const condition = conditionOf(state, 'Ready');
  return [condition?.status, condition?.reason];
};

describe('driftless sync of a pinned track whose newest commit fails to render', () => {
  let dir: string;
  let store: ClosableStore;
  let cluster: InMemoryCluster;
  const heads = new Map<string, string>();

  const context = (): LocalContext => ({
    config: parseConfig(
      'tracks: [{name: web, repository: https://git.example.com/org/web.git, namespace: apps}]',
      'driftless.yaml',
    ),
    artifacts: store.artifacts,
    state: store.state,
    source: async () => gitOf(heads),
    cluster: async () => cluster,
    close: () => undefined,
  });
  const driftless = cliOver(context);

  /** ONE then TWO synced, rolled back to ONE (pinned), then BROKEN pushed. */
  async function pinnedWithBrokenHead(): Promise<void> {
    for (const head of [ONE, TWO]) {
      heads.set('web', head);
      assert.equal((await driftless('sync', '--track', 'web')).code, 0);
    }
    const rollback = await driftless('rollback', '--track', 'web', '--revision', ONE);
    assert.equal(rollback.code, 0, rollback.stderr);
    heads.set('web', BROKEN);
  }

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-pinned-broken-'));
    store = createStore({ type: 'fs', path: join(dir, 'store') });
    cluster = new InMemoryCluster();
  });

  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('ends at the pin with exit 0, Ready True (Pinned), and the broken commit as a warning', async () => {
    // Prepare
    await pinnedWithBrokenHead();

    // Act
    const json = await driftless('sync', '--track', 'web', '-o', 'json');
    const text = await driftless('sync', '--track', 'web');

    // Assess: the pinned revision's result and exit code.
    assert.equal(json.code, 0, json.stdout);
    const document = JSON.parse(json.stdout);
    assert.equal(document.result, 'pinned');
    assert.equal(document.revision, ONE);
    assert.equal(document.error, undefined);
    assert.match(
      document.warning,
      new RegExp(
        `^revision ${BROKEN} failed and is not applied while the track is pinned at ${ONE}: .+`,
      ),
    );
    // The track stays Ready for what runs; the broken commit has a condition of its own.
    const state = await readTrackState(store.state, 'web');
    assert.deepEqual(ready(state), ['True', 'Pinned']);
    assert.match(
      conditionOf(state, 'Ready')!.message,
      new RegExp(
        `^pinned at ${ONE}; .*revision ${BROKEN}, fetched meanwhile, failed \\(see FilesParsed\\)`,
      ),
    );
    const parsed = conditionOf(state, 'FilesParsed');
    assert.equal(parsed?.status, 'False');
    assert.match(String(parsed?.reason), /^RENDER_/);
    assert.equal(state.pinned, ONE);
    assert.equal(state.appliedRevision, ONE);
    assert.equal(state.desiredRevision, TWO, 'a commit that failed to render is not desired');
    // The text report says both, and exits the same.
    assert.equal(text.code, 0, text.stdout);
    const [first, second] = text.stdout.split('\n');
    assert.equal(
      first,
      `web: pinned at ${ONE.slice(0, 12)}; run "driftless unpin --track web" to follow Git again`,
    );
    assert.match(
      second ?? '',
      new RegExp(`^web: warning: revision ${BROKEN} failed and is not applied`),
    );
    // The failed render is in history, as any failed fetch is.
    const history = await store.state.listHistory('web');
    assert.deepEqual(
      history.filter((entry) => entry.revision === BROKEN).map((entry) => entry.result),
      ['failed', 'failed'],
    );
  });

  it('fails with exit 3 once unpinned, as a render failure of a followed commit does', async () => {
    // Prepare
    await pinnedWithBrokenHead();

    // Act
    const unpinned = await driftless('unpin', '--track', 'web');
    const synced = await driftless('sync', '--track', 'web', '-o', 'json');

    // Assess
    assert.equal(unpinned.code, 3, unpinned.stdout);
    assert.equal(synced.code, 3, synced.stdout);
    const document = JSON.parse(synced.stdout);
    assert.equal(document.result, 'failed');
    assert.equal(document.warning, undefined);
    assert.equal(ready(await readTrackState(store.state, 'web'))[0], 'False');
  });

  it('fails a broken revision asked for by name while pinned (exit 3), leaving Ready to the pin', async () => {
    // Prepare
    await pinnedWithBrokenHead();
    heads.set('web', TWO);

    // Act
    const result = await driftless('sync', '--track', 'web', '--revision', BROKEN, '-o', 'json');

    // Assess: what was asked for failed; what runs did not.
    assert.equal(result.code, 3, result.stdout);
    assert.equal(JSON.parse(result.stdout).result, 'failed');
    assert.deepEqual(ready(await readTrackState(store.state, 'web')), ['True', 'Pinned']);
  });
});

describe('the fetch job (serve, AWS) of a commit that fails to render while pinned', () => {
  it('keeps the pinned track Ready, so a dependent still syncs; the commit status says it failed', async () => {
    // Prepare: base and app (dependsOn base) at ONE; base rolled back to ONE, then BROKEN pushed.
    const dir = await mkdtemp(join(tmpdir(), 'driftless-pinned-broken-served-'));
    try {
      const store = new FsStore({ path: dir });
      const tracks = parseConfig(
        `
tracks:
  - {name: base, repository: https://git.example.com/o/base.git, namespace: base}
  - {name: app, repository: https://git.example.com/o/app.git, namespace: app, dependsOn: [base]}
`,
        'driftless.yaml',
      ).tracks;
      const heads = new Map([
        ['base', ONE],
        ['app', ONE],
      ]);
      const cluster = new InMemoryCluster();
      const jobs = servedJobs({ tracks, store, git: gitOf(heads), cluster: () => cluster });
      const poll = (track: string) => jobs.runAll({ type: 'fetch', track, trigger: 'schedule' });
      await poll('base');
      await poll('app');
      await jobs.runAll({ type: 'rollback', track: 'base', revision: ONE });
      heads.set('base', BROKEN);
      heads.set('app', TWO);

      // Act
      const broken = await poll('base');
      const dependent = await poll('app');

      // Assess
      assert.deepEqual(broken.map(outcomeOf), ['failed']);
      const base = await readTrackState(store, 'base');
      assert.deepEqual(ready(base), ['True', 'Pinned']);
      assert.equal(conditionOf(base, 'FilesParsed')?.status, 'False');
      assert.deepEqual(dependent.map(outcomeOf), ['fetched', 'applied']);
      assert.equal((await readTrackState(store, 'app')).appliedRevision, TWO);
      assert.deepEqual(
        jobs.statusesOf(BROKEN).map((status) => status.state),
        ['failure'],
        'the broken commit is still told as failed',
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
