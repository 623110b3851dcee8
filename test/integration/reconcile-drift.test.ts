/**
 * The drift job (reconcileDrift) on a track synced from the test Git server to
 * the real test cluster: hand changes are reported with who made them and put
 * back, deleted objects recreated, and detect-only (`--detect-only` or
 * `drift: detect`) changes nothing. Detection's finer rules (defaults, other
 * managers' fields, ignore rules) are tested in drift.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api } from '@kubernetes/client-node';
import { parseConfig } from '../../src/config/index.ts';
import type { Track } from '../../src/config/types.ts';
import { reconcileDrift } from '../../src/sync/reconcile-drift.ts';
import { syncTrack, type SyncDeps } from '../../src/sync/sync-track.ts';
import { readTrackState } from '../../src/sync/track-state.ts';
import { pushFiles, type GitRepository } from '../harness/git-server.ts';
import { afterFirstRead } from '../harness/state-store-overrides.ts';
import { TrackFixture } from '../harness/track-fixture.ts';

const configMap = (name: string, value: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  value: "${value}"\n`;

describe('reconcileDrift', () => {
  const fixture = new TrackFixture('reconcile');
  let core: CoreV1Api;
  let deps: SyncDeps;

  /** A track with ConfigMaps `a` and `b` synced into a namespace of its own. */
  async function syncedTrack(
    name: string,
    extra = '',
  ): Promise<{ track: Track; ns: string; revision: string; repo: GitRepository }> {
    const { track, repo, ns } = await fixture.newTrack(name, extra);
    const revision = await pushFiles(repo, {
      'a.yaml': configMap('a', 'one'),
      'b.yaml': configMap('b', 'one'),
    });
    const synced = await syncTrack(track, { trigger: 'manual' }, deps);
    assert.equal(synced.result, 'applied', synced.error);
    return { track, ns, revision, repo };
  }

  /** Sets `a`'s value as `kubectl edit` does: a full update under its own field manager. */
  async function editByHand(ns: string, value: string): Promise<void> {
    const live = await core.readNamespacedConfigMap({ name: 'a', namespace: ns });
    await core.replaceNamespacedConfigMap({
      name: 'a',
      namespace: ns,
      body: { ...live, data: { value } },
      fieldManager: 'kubectl-edit',
    });
  }

  const valueOf = (ns: string, name: string): Promise<string | undefined> =>
    fixture.configMapValue(ns, name);

  before(async () => {
    await fixture.start();
    core = fixture.core;
    deps = fixture.deps;
  });

  after(() => fixture.stop());

  it('reports a hand change with who made it and puts the value back', async () => {
    // Prepare
    const { track, ns, revision } = await syncedTrack('corrected');
    await editByHand(ns, 'by hand');

    // Act
    const result = await reconcileDrift(
      track,
      { type: 'drift', track: track.name, trigger: 'manual' },
      deps,
    );

    // Assess
    assert.equal(result.revision, revision);
    assert.deepEqual(
      result.drifted.map((d) => ({ subject: d.subject, patch: d.patch, changedBy: d.changedBy })),
      [
        {
          subject: `ConfigMap/${ns}/a`,
          patch: [{ op: 'replace', path: '/data/value', value: 'one' }],
          changedBy: ['kubectl-edit'],
        },
      ],
    );
    assert.deepEqual(result.missing, []);
    assert.deepEqual(result.errors, []);
    assert.equal(result.corrected, true);
    assert.deepEqual(result.changeset, [{ subject: `ConfigMap/${ns}/a`, action: 'configured' }]);
    assert.equal(await valueOf(ns, 'a'), 'one');
    // Recorded as put back: in sync, healthy, no patch left to show.
    const observed = (await readTrackState(deps.state, track.name)).observed;
    assert.deepEqual(
      observed?.objects.map((o) => [o.subject, o.sync, o.health, o.patch ?? null]),
      [
        [`ConfigMap/${ns}/a`, 'InSync', 'Healthy', null],
        [`ConfigMap/${ns}/b`, 'InSync', 'Healthy', null],
      ],
    );
    const [latest] = await deps.state.listHistory(track.name);
    assert.deepEqual(
      [latest?.revision, latest?.result, latest?.trigger, latest?.drifted],
      [revision, 'drift-corrected', 'manual', [`ConfigMap/${ns}/a`]],
    );
  });

  it('finds nothing on a track just synced, and records when it checked', async () => {
    // Prepare
    const { track } = await syncedTrack('clean');
    const checkedAt = new Date('2030-01-02T03:04:05.000Z');

    // Act
    const result = await reconcileDrift(
      track,
      { type: 'drift', track: track.name },
      { ...deps, now: () => checkedAt },
    );

    // Assess
    assert.deepEqual([result.drifted, result.missing, result.errors], [[], [], []]);
    assert.equal(result.corrected, false);
    const state = await readTrackState(deps.state, track.name);
    assert.equal(state.driftCheckedAt, checkedAt.toISOString());
    assert.equal(state.applyLease, null, 'the apply lease is given back');
  });

  it('only reports with detectOnly: nothing changes and no history is written', async () => {
    // Prepare
    const { track, ns } = await syncedTrack('detect-only');
    await editByHand(ns, 'by hand');
    await core.deleteNamespacedConfigMap({ name: 'b', namespace: ns });
    const historyBefore = await deps.state.listHistory(track.name);

    // Act
    const result = await reconcileDrift(
      track,
      { type: 'drift', track: track.name, detectOnly: true, trigger: 'manual' },
      deps,
    );

    // Assess
    assert.deepEqual(
      result.drifted.map((d) => d.subject),
      [`ConfigMap/${ns}/a`],
    );
    assert.deepEqual(result.missing, [`ConfigMap/${ns}/b`]);
    assert.equal(result.corrected, false);
    assert.deepEqual(result.changeset, []);
    assert.equal(await valueOf(ns, 'a'), 'by hand');
    assert.equal(await valueOf(ns, 'b'), undefined);
    assert.deepEqual(await deps.state.listHistory(track.name), historyBefore);
    // What the dashboard function shows without a cluster: recorded with the check.
    const observed = (await readTrackState(deps.state, track.name)).observed;
    assert.deepEqual(
      observed?.objects.map((o) => [o.subject, o.sync, o.patch ?? null, o.changedBy ?? null]),
      [
        [
          `ConfigMap/${ns}/a`,
          'OutOfSync',
          [
            { op: 'test', path: '/data/value', value: 'by hand' },
            { op: 'replace', path: '/data/value', value: 'one' },
          ],
          ['kubectl-edit'],
        ],
        [`ConfigMap/${ns}/b`, 'Missing', null, null],
      ],
    );
  });

  it('only reports for a "drift: detect" track', async () => {
    // Prepare
    const { track, ns } = await syncedTrack('detect-track', 'drift: detect');
    await editByHand(ns, 'by hand');

    // Act
    const result = await reconcileDrift(
      track,
      { type: 'drift', track: track.name, trigger: 'schedule' },
      deps,
    );

    // Assess
    assert.equal(track.drift, 'detect');
    assert.deepEqual(
      result.drifted.map((d) => d.subject),
      [`ConfigMap/${ns}/a`],
    );
    assert.equal(result.corrected, false);
    assert.equal(await valueOf(ns, 'a'), 'by hand');
  });

  it('recreates a deleted object', async () => {
    // Prepare
    const { track, ns } = await syncedTrack('recreated');
    await core.deleteNamespacedConfigMap({ name: 'b', namespace: ns });

    // Act
    const result = await reconcileDrift(
      track,
      { type: 'drift', track: track.name, trigger: 'manual' },
      deps,
    );

    // Assess
    assert.deepEqual(result.missing, [`ConfigMap/${ns}/b`]);
    assert.deepEqual(result.drifted, []);
    assert.equal(result.corrected, true);
    assert.deepEqual(
      result.changeset.map((e) => e.subject),
      [`ConfigMap/${ns}/b`],
    );
    assert.equal(await valueOf(ns, 'b'), 'one');
  });

  it('enforces the revision applied when it took the lease, not one read before a sync finished', async () => {
    // Prepare: a sync of a newer commit runs to its end right after the drift check's first
    // read of the track's state, as another apply function or process may.
    const { track, ns, repo } = await syncedTrack('overtaken');
    const newer = await pushFiles(repo, {
      'a.yaml': configMap('a', 'two'),
      'b.yaml': configMap('b', 'two'),
    });
    let overtaken = false;
    const state = afterFirstRead(deps.state, track.name, async () => {
      overtaken = true;
      const synced = await syncTrack(track, { trigger: 'manual' }, deps);
      assert.equal(synced.result, 'applied', synced.error);
    });

    // Act
    const result = await reconcileDrift(
      track,
      { type: 'drift', track: track.name, trigger: 'manual' },
      { ...deps, state },
    );

    // Assess: the newer revision is checked and left in place.
    assert.ok(overtaken, 'the sync ran during the drift check');
    assert.equal(result.revision, newer);
    assert.deepEqual([result.drifted, result.missing, result.changeset], [[], [], []]);
    assert.deepEqual([await valueOf(ns, 'a'), await valueOf(ns, 'b')], ['two', 'two']);
    const after = await readTrackState(deps.state, track.name);
    assert.deepEqual([after.appliedRevision, after.applyLease ?? null], [newer, null]);
  });

  it('checks nothing on a track that never applied a revision', async () => {
    // Prepare
    const track = parseConfig(
      'tracks:\n  - name: never\n    repository: https://git.example.com/never.git\n',
      'driftless.yaml',
    ).tracks[0]!;

    // Act
    const result = await reconcileDrift(track, { type: 'drift', track: track.name }, deps);

    // Assess
    assert.equal(result.revision, null);
    assert.equal(result.corrected, false);
    assert.deepEqual([result.drifted, result.missing], [[], []]);
  });
});
