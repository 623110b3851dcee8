/**
 * Recording a sync attempt: the result of apply -> prune -> health (data)
 * becomes status, inventory and history, with the real fs store.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ReconcileResult } from '../../src/apply/reconcile-objects.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import { recordSync, type RecordOptions } from '../../src/sync/record-sync.ts';
import {
  acquireApplyLease,
  conditionOf,
  readTrackState,
  updateTrackState,
} from '../../src/sync/track-state.ts';

const OLD = 'a'.repeat(40);
const NEW = 'b'.repeat(40);
const now = (): Date => new Date('2026-01-01T12:00:00Z');

describe('recordSync', () => {
  let dir: string;
  let store: FsStore;
  let tracks = 0;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-record-'));
    store = new FsStore({ path: dir });
  });

  after(() => rm(dir, { recursive: true, force: true }));

  /** A track applied at OLD whose apply lease `holder` holds, as during a sync. */
  async function leasedTrack(): Promise<{ track: string; options: RecordOptions }> {
    const track = `t${++tracks}`;
    await updateTrackState(store, track, (s) => (s.appliedRevision = OLD));
    await acquireApplyLease(store, track, 'holder', 60_000, now());
    return { track, options: { trigger: 'manual', holder: 'holder', now } };
  }

  it('records a prune that failed: applied, still failed, the undeleted object kept', async () => {
    // Prepare
    const { track, options } = await leasedTrack();
    const result: ReconcileResult = {
      outcome: 'failed',
      changeset: [
        { subject: 'ConfigMap/apps/a', action: 'unchanged' },
        { subject: 'ConfigMap/apps/old', action: 'failed', error: 'ConfigMap/apps/old: forbidden' },
      ],
      inventory: [
        { subject: 'ConfigMap/apps/a', apiVersion: 'v1' },
        { subject: 'ConfigMap/apps/old', apiVersion: 'v1' },
      ],
      applyFailed: false,
      pruneFailed: true,
      error: 'ConfigMap/apps/old: forbidden',
    };

    // Act
    const recorded = await recordSync(
      store,
      track,
      NEW,
      {
        type: 'reconciled',
        discovered: 2,
        ignored: { 'Secret/apps/s': 'ignored' },
        selected: 1,
        result,
      },
      options,
    );

    // Assess
    assert.equal(recorded.result, 'failed');
    assert.equal(recorded.error, 'ConfigMap/apps/old: forbidden');
    assert.deepEqual(recorded.changeset, result.changeset);
    const state = await readTrackState(store, track);
    assert.equal(state.appliedRevision, NEW, 'every object applied');
    assert.equal(state.applyLease, null, 'the lease is given back in the same write');
    assert.deepEqual(state.inventory, result.inventory);
    assert.equal(state.objectsInSync, 1);
    assert.equal(state.objectsIgnored, 1);
    assert.equal(conditionOf(state, 'ChildrenUpToDate')?.status, 'True');
    assert.equal(conditionOf(state, 'ChildrenGarbageCollected')?.reason, 'PruneFailed');
    assert.equal(conditionOf(state, 'Ready')?.reason, 'SyncFailed');
    const [entry] = await store.listHistory(track);
    assert.deepEqual(
      [entry?.revision, entry?.result, entry?.error],
      [NEW, 'failed', 'ConfigMap/apps/old: forbidden'],
    );
  });

  it('no longer says pruned once an apply failed: nothing was pruned in that sync', async () => {
    // Prepare: an earlier sync pruned; this one fails an object
    const { track, options } = await leasedTrack();
    await updateTrackState(store, track, (s) =>
      s.conditions.push({
        type: 'ChildrenGarbageCollected',
        status: 'True',
        reason: 'Pruned',
        message: 'objects that left Git were pruned',
        lastTransitionTime: now().toISOString(),
      }),
    );
    const result: ReconcileResult = {
      outcome: 'failed',
      changeset: [{ subject: 'ConfigMap/apps/a', action: 'failed', error: 'ConfigMap/apps/a: x' }],
      inventory: [{ subject: 'ConfigMap/apps/a', apiVersion: 'v1' }],
      applyFailed: true,
      error: 'ConfigMap/apps/a: x',
    };

    // Act
    await recordSync(
      store,
      track,
      NEW,
      { type: 'reconciled', discovered: 1, ignored: {}, selected: 1, result },
      options,
    );

    // Assess
    const pruned = conditionOf(await readTrackState(store, track), 'ChildrenGarbageCollected');
    assert.deepEqual([pruned?.status, pruned?.reason], ['Unknown', 'PruneSkipped']);
  });

  it('records a refusal: the applied revision stays, the reason goes into status and history', async () => {
    // Prepare
    const { track, options } = await leasedTrack();

    // Act
    const recorded = await recordSync(
      store,
      track,
      NEW,
      { type: 'refused', condition: 'FilesParsed', reason: 'EmptyRevision', message: 'empty' },
      options,
    );

    // Assess
    assert.equal(recorded.result, 'failed');
    assert.deepEqual(recorded.changeset, []);
    const state = await readTrackState(store, track);
    assert.equal(state.appliedRevision, OLD);
    assert.equal(state.applyLease, null);
    assert.equal(conditionOf(state, 'FilesParsed')?.reason, 'EmptyRevision');
    assert.equal(conditionOf(state, 'Ready')?.status, 'False');
    assert.equal((await store.listHistory(track))[0]?.result, 'failed');
  });

  it('records a pinned track in status only, without a history line', async () => {
    // Prepare
    const { track, options } = await leasedTrack();

    // Act
    const recorded = await recordSync(
      store,
      track,
      NEW,
      { type: 'pinned', pinnedAt: OLD },
      options,
    );

    // Assess
    assert.equal(recorded.result, 'pinned');
    const state = await readTrackState(store, track);
    assert.equal(conditionOf(state, 'Ready')?.reason, 'Pinned');
    assert.equal(state.applyLease, null);
    assert.deepEqual(await store.listHistory(track), []);
  });
});
