/**
 * Rollback and pin on real parts: the test Git server, the real test cluster
 * and the filesystem store. A rollback applies a stored artifact (no Git
 * access), prunes to it and pins the track; drift checks and new pushes keep
 * the pin until unpin, and history records every attempt with its trigger.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Track } from '../../src/config/types.ts';
import { reconcileDrift } from '../../src/sync/reconcile-drift.ts';
import {
  resolveRollbackTarget,
  rollbackTrack,
  RollbackTargetError,
  unpinTrack,
} from '../../src/sync/rollback.ts';
import { syncTrack } from '../../src/sync/sync-track.ts';
import { readTrackState } from '../../src/sync/track-state.ts';
import { pushFiles, type GitRepository } from '../harness/git-server.ts';
import { TrackFixture } from '../harness/track-fixture.ts';

const configMap = (name: string, value: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  value: "${value}"\n`;

/** The three revisions every test starts from: each changes `a` and adds one ConfigMap. */
const REVISIONS = [
  { 'a.yaml': configMap('a', 'one') },
  { 'a.yaml': configMap('a', 'two'), 'b.yaml': configMap('b', 'two') },
  {
    'a.yaml': configMap('a', 'three'),
    'b.yaml': configMap('b', 'three'),
    'c.yaml': configMap('c', 'three'),
  },
] as const;

/** A Git server, the cluster and a store, and a way to make a track with a namespace of its own. */
class Setup extends TrackFixture {
  constructor() {
    super('rollback');
  }

  /** A new track with {@link REVISIONS} pushed and synced one after the other; their shas, oldest first. */
  async syncedThrice(
    name: string,
  ): Promise<{ track: Track; repo: GitRepository; ns: string; shas: string[] }> {
    const created = await this.newTrack(name);
    const shas: string[] = [];
    for (const files of REVISIONS) {
      shas.push(await pushFiles(created.repo, files));
      const result = await syncTrack(created.track, { trigger: 'webhook' }, this.deps);
      assert.equal(result.result, 'applied', result.error);
    }
    return { ...created, shas };
  }

  /** Each ConfigMap's `value` in the namespace, by name. */
  async values(ns: string): Promise<Record<string, string | undefined>> {
    const list = await this.core.listNamespacedConfigMap({ namespace: ns });
    return Object.fromEntries(
      list.items
        .filter((c) => c.metadata?.name !== 'kube-root-ca.crt')
        .map((c) => [c.metadata?.name ?? '', c.data?.value]),
    );
  }
}

describe('rollback', () => {
  const setup = new Setup();

  before(() => setup.start());
  after(() => setup.stop());

  it('applies the previous revision, pruning and reverting what the newest changed, and pins', async () => {
    // Prepare
    const { track, ns, shas } = await setup.syncedThrice('previous');

    // Act
    const revision = await resolveRollbackTarget(track, { previous: true }, setup.deps);
    const result = await rollbackTrack(
      track,
      { type: 'rollback', track: track.name, revision },
      setup.deps,
    );

    // Assess
    assert.equal(revision, shas[1]);
    assert.equal(result.result, 'applied', result.error);
    assert.deepEqual(Object.fromEntries(result.changeset.map((e) => [e.subject, e.action])), {
      [`ConfigMap/${ns}/a`]: 'configured',
      [`ConfigMap/${ns}/b`]: 'configured',
      [`ConfigMap/${ns}/c`]: 'deleted',
    });
    assert.deepEqual(await setup.values(ns), { a: 'two', b: 'two' });
    assert.equal(result.state.pinned, shas[1]);
    assert.equal(result.state.appliedRevision, shas[1]);
    assert.deepEqual(
      result.state.inventory.map((e) => e.subject),
      [`ConfigMap/${ns}/a`, `ConfigMap/${ns}/b`],
    );
  });

  it('steps further back when --previous is repeated', async () => {
    // Prepare
    const { track, shas } = await setup.syncedThrice('repeat');
    const once = await resolveRollbackTarget(track, { previous: true }, setup.deps);
    await rollbackTrack(track, { type: 'rollback', track: track.name, revision: once }, setup.deps);

    // Act
    const twice = await resolveRollbackTarget(track, { previous: true }, setup.deps);

    // Assess
    assert.equal(once, shas[1]);
    assert.equal(twice, shas[0]);
  });

  it('rolls back to a revision named by a sha prefix', async () => {
    // Prepare
    const { track, ns, shas } = await setup.syncedThrice('named');

    // Act
    const revision = await resolveRollbackTarget(
      track,
      { revision: shas[0]!.slice(0, 8) },
      setup.deps,
    );
    const result = await rollbackTrack(
      track,
      { type: 'rollback', track: track.name, revision },
      setup.deps,
    );

    // Assess
    assert.equal(revision, shas[0]);
    assert.equal(result.result, 'applied', result.error);
    assert.deepEqual(await setup.values(ns), { a: 'one' });
    assert.equal(result.state.pinned, shas[0]);
  });

  it('keeps the pin through a drift run and a new push; unpin then applies the newest', async () => {
    // Prepare
    const { track, repo, ns, shas } = await setup.syncedThrice('pinned');
    await rollbackTrack(
      track,
      { type: 'rollback', track: track.name, revision: shas[1]! },
      setup.deps,
    );
    // A hand change, as `kubectl edit` makes it: drift must restore the pinned value, not the newest.
    const live = await setup.core.readNamespacedConfigMap({ name: 'a', namespace: ns });
    await setup.core.replaceNamespacedConfigMap({
      name: 'a',
      namespace: ns,
      body: { ...live, data: { value: 'by hand' } },
      fieldManager: 'kubectl-edit',
    });

    // Act
    const drift = await reconcileDrift(
      track,
      { type: 'drift', track: track.name, trigger: 'schedule' },
      setup.deps,
    );
    const valuesAfterDrift = await setup.values(ns);
    const fourth = await pushFiles(repo, { 'a.yaml': configMap('a', 'four') });
    const pinnedSync = await syncTrack(track, { trigger: 'webhook' }, setup.deps);
    const valuesAfterPush = await setup.values(ns);
    await unpinTrack(track, setup.deps.state);
    const resumed = await syncTrack(track, { trigger: 'manual' }, setup.deps);

    // Assess
    assert.equal(drift.revision, shas[1]);
    assert.deepEqual(
      drift.drifted.map((d) => [d.subject, d.patch, d.changedBy]),
      [
        [
          `ConfigMap/${ns}/a`,
          [{ op: 'replace', path: '/data/value', value: 'two' }],
          ['kubectl-edit'],
        ],
      ],
    );
    assert.deepEqual(drift.missing, [], 'c is not in the pinned revision, so it is not missing');
    assert.equal(drift.corrected, true);
    assert.deepEqual(valuesAfterDrift, { a: 'two', b: 'two' });

    assert.equal(pinnedSync.result, 'pinned');
    assert.deepEqual(pinnedSync.changeset, []);
    assert.deepEqual(valuesAfterPush, { a: 'two', b: 'two' });
    assert.equal(pinnedSync.state.desiredRevision, fourth);
    assert.equal(pinnedSync.state.pinned, shas[1]);
    assert.equal(pinnedSync.state.appliedRevision, shas[1]);

    assert.equal(resumed.result, 'applied', resumed.error);
    assert.equal(resumed.revision, fourth);
    assert.equal(resumed.state.pinned, null);
    assert.equal(resumed.state.appliedRevision, fourth);
    // The fourth revision keeps b and c from the third (pushFiles changes only `a.yaml`).
    assert.deepEqual(await setup.values(ns), { a: 'four', b: 'three', c: 'three' });
  });

  it('rolls back to a commit also stored rendered again, by its sha or by <sha>+<digest>', async () => {
    // Prepare: one commit rendered from app/, then from other/ (a subPath change): stored twice
    const { track, ns, repo } = await setup.newTrack('respec');
    const commit = await pushFiles(repo, {
      'app/a.yaml': configMap('a', 'one'),
      'other/b.yaml': configMap('b', 'one'),
    });
    const first = await syncTrack({ ...track, subPath: 'app' }, { trigger: 'manual' }, setup.deps);
    const moved = { ...track, subPath: 'other' };
    const again = await syncTrack(moved, { trigger: 'manual' }, setup.deps);
    assert.equal(first.revision, commit, first.error);
    const digest = (again.revision ?? '').slice(commit.length + 1);
    assert.match(digest, /^[0-9a-f]{12}$/, again.error);

    // Act
    const byCommit = await resolveRollbackTarget(moved, { revision: commit }, setup.deps);
    const byId = await resolveRollbackTarget(moved, { revision: again.revision! }, setup.deps);
    const asListed = await resolveRollbackTarget(
      moved,
      { revision: `${commit.slice(0, 12)}+${digest}` },
      setup.deps,
    );
    const result = await rollbackTrack(
      moved,
      { type: 'rollback', track: track.name, revision: byCommit },
      setup.deps,
    );

    // Assess
    assert.equal(byCommit, commit, 'the full sha names the commit stored under it');
    assert.equal(byId, again.revision);
    assert.equal(asListed, again.revision);
    assert.equal(result.result, 'applied', result.error);
    assert.deepEqual(await setup.values(ns), { a: 'one' });
    assert.equal(result.state.pinned, commit);
  });

  it('refuses a revision never stored, listing the stored ones', async () => {
    // Prepare
    const { track, ns, shas } = await setup.syncedThrice('unknown');

    // Act
    const attempt = resolveRollbackTarget(track, { revision: 'deadbeef' }, setup.deps);

    // Assess
    await assert.rejects(attempt, (error: unknown) => {
      assert.ok(error instanceof RollbackTargetError);
      assert.match(error.message, /revision deadbeef is not stored/);
      for (const sha of shas) assert.match(error.message, new RegExp(sha.slice(0, 12)));
      return true;
    });
    assert.deepEqual(await setup.values(ns), { a: 'three', b: 'three', c: 'three' });
    assert.equal((await readTrackState(setup.deps.state, track.name)).pinned, null);
  });

  it('keeps every attempt in history with its trigger, failed ones too', async () => {
    // Prepare: a revision the server refuses (its namespace does not exist) is stored but fails.
    const { track, repo, shas } = await setup.syncedThrice('history');
    const broken = await pushFiles(repo, {
      'd.yaml': configMap('d', 'four').replace(
        'metadata:\n',
        'metadata:\n  namespace: no-such-namespace-here\n',
      ),
    });
    const failedSync = await syncTrack(track, { trigger: 'webhook' }, setup.deps);

    // Act
    const failedRollback = await rollbackTrack(
      track,
      { type: 'rollback', track: track.name, revision: broken },
      setup.deps,
    );
    const rollback = await rollbackTrack(
      track,
      { type: 'rollback', track: track.name, revision: shas[0]! },
      setup.deps,
    );

    // Assess
    assert.equal(failedSync.result, 'failed');
    assert.equal(failedRollback.result, 'failed');
    assert.equal(rollback.result, 'applied', rollback.error);
    const history = await setup.deps.state.listHistory(track.name);
    assert.deepEqual(
      history.map((h) => [h.revision, h.result, h.trigger]),
      [
        [shas[0], 'applied', 'rollback'],
        [broken, 'failed', 'rollback'],
        [broken, 'failed', 'webhook'],
        [shas[2], 'applied', 'webhook'],
        [shas[1], 'applied', 'webhook'],
        [shas[0], 'applied', 'webhook'],
      ],
    );
    assert.match(String(history[1]?.error), /no-such-namespace-here/);
  });
});

describe('rollback with the Git server stopped', () => {
  const setup = new Setup();

  before(() => setup.start());
  after(() => setup.stop());

  it('applies a stored revision without Git', async () => {
    // Prepare
    const { track, ns, shas } = await setup.syncedThrice('offline');
    await setup.git.stop();
    const fetchWhileDown = await syncTrack(track, { trigger: 'manual' }, setup.deps);

    // Act
    const revision = await resolveRollbackTarget(track, { previous: true }, setup.deps);
    const result = await rollbackTrack(
      track,
      { type: 'rollback', track: track.name, revision },
      setup.deps,
    );

    // Assess
    assert.equal(fetchWhileDown.result, 'failed', 'the Git server is really down');
    assert.equal(revision, shas[1]);
    assert.equal(result.result, 'applied', result.error);
    assert.equal(result.state.pinned, shas[1]);
    assert.deepEqual(await setup.values(ns), { a: 'two', b: 'two' });
  });
});
