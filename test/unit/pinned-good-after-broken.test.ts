/**
 * A good commit fetched after one that failed to render, while the track is pinned (by a
 * rollback) at another (pinned-broken-commit.test.ts is the broken commit alone). The good commit
 * is parsed and stored, so FilesParsed is True for it as it would be unpinned, and Ready (still
 * True, reason Pinned) no longer names the broken commit; the pin stays and nothing is applied.
 *
 * The fetch job alone (the AWS fetch function, before the apply function runs its sync) and the
 * real CLI, over fake ports on the fs store with the in-memory cluster.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { parseConfig } from '../../src/config/index.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import { conditionOf, readTrackState, type TrackState } from '../../src/sync/track-state.ts';
import { cliOver } from '../harness/run-cli.ts';
import { MovingGit } from './fakes/git-sources.ts';
import { InMemoryCluster } from './fakes/in-memory-cluster.ts';
import { outcomeOf, servedJobs } from './fakes/served-jobs.ts';

const ONE = '1'.repeat(40);
const TWO = '2'.repeat(40);
const THREE = '3'.repeat(40);
/** A commit whose YAML does not parse: its render fails. */
const BROKEN = 'b'.repeat(40);

const configMap = (value: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  value: "${value}"\n`;

const TRACKS =
  'tracks: [{name: web, repository: https://git.example.com/org/web.git, namespace: apps}]';

/** What a test asserts of the track once THREE was fetched after BROKEN, pinned at ONE. */
function assertParsedAndPinned(state: TrackState): void {
  const parsed = conditionOf(state, 'FilesParsed');
  assert.deepEqual(
    [parsed?.status, parsed?.reason, parsed?.message],
    ['True', 'Parsed', `revision ${THREE} parsed and stored`],
  );
  const ready = conditionOf(state, 'Ready');
  assert.deepEqual([ready?.status, ready?.reason], ['True', 'Pinned']);
  assert.equal(ready?.message, `pinned at ${ONE}; run "driftless unpin" to follow Git again`);
  assert.doesNotMatch(ready?.message ?? '', new RegExp(BROKEN));
  assert.equal(state.pinned, ONE);
  assert.equal(state.appliedRevision, ONE);
  assert.equal(state.desiredRevision, THREE);
}

describe('a good commit fetched after a broken one while the track is pinned', () => {
  let dir: string;
  let store: FsStore;
  let git: MovingGit;
  let cluster: InMemoryCluster;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-pinned-good-after-broken-'));
    store = new FsStore({ path: dir });
    git = new MovingGit(ONE, [
      [ONE, configMap('one')],
      [TWO, configMap('two')],
      [THREE, configMap('three')],
      [BROKEN, 'kind: ['],
    ]);
    cluster = new InMemoryCluster();
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('the fetch job sets FilesParsed True for it and Ready stops naming the broken commit', async () => {
    // Prepare: ONE then TWO synced, rolled back to ONE (pinned), BROKEN fetched, then THREE pushed.
    const tracks = parseConfig(TRACKS, 'driftless.yaml').tracks;
    const jobs = servedJobs({ tracks, store, git, cluster: () => cluster });
    const poll = () => jobs.runAll({ type: 'fetch', track: 'web', trigger: 'schedule' });
    await poll();
    git.head = TWO;
    await poll();
    await jobs.runAll({ type: 'rollback', track: 'web', revision: ONE });
    git.head = BROKEN;
    assert.deepEqual((await poll()).map(outcomeOf), ['failed']);
    assert.equal(conditionOf(await readTrackState(store, 'web'), 'FilesParsed')?.status, 'False');
    git.head = THREE;

    // Act: the fetch job alone, as the AWS fetch function runs it; then the sync it queued.
    const fetched = await jobs.run({ type: 'fetch', track: 'web', trigger: 'schedule' });
    const afterFetch = await readTrackState(store, 'web');
    const synced = await jobs.runAll(jobs.queued.shift()!);

    // Assess
    assert.equal(outcomeOf(fetched), 'fetched');
    assertParsedAndPinned(afterFetch);
    assert.deepEqual(synced.map(outcomeOf), ['pinned']);
    assertParsedAndPinned(await readTrackState(store, 'web'));
  });

  it('driftless sync ends at the pin with no warning, FilesParsed True for it', async () => {
    // Prepare
    const driftless = cliOver(() => ({
      config: parseConfig(TRACKS, 'driftless.yaml'),
      artifacts: store,
      state: store,
      source: async () => git,
      cluster: async () => cluster,
      close: () => undefined,
    }));
    for (const head of [ONE, TWO]) {
      git.head = head;
      assert.equal((await driftless('sync', '--track', 'web')).code, 0);
    }
    assert.equal((await driftless('rollback', '--track', 'web', '--revision', ONE)).code, 0);
    git.head = BROKEN;
    assert.equal((await driftless('sync', '--track', 'web')).code, 0);
    git.head = THREE;

    // Act
    const result = await driftless('sync', '--track', 'web', '-o', 'json');

    // Assess
    assert.equal(result.code, 0, result.stdout);
    const document = JSON.parse(result.stdout);
    assert.equal(document.result, 'pinned');
    assert.equal(document.revision, ONE);
    assert.equal(document.warning, undefined);
    assertParsedAndPinned(await readTrackState(store, 'web'));
  });
});
