/**
 * Ordering rules of the fetch and sync jobs: a revision resolved earlier never
 * replaces one resolved later, and one apply job per track at a time. Uses the
 * real fs store and small fakes of the Git and cluster ports.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { KubernetesPort } from '../../src/cluster/kubernetes-port.ts';
import { parseConfig } from '../../src/config/index.ts';
import type { Track } from '../../src/config/types.ts';
import { InterruptedError } from '../../src/errors.ts';
import type { GitSource } from '../../src/source/ports.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import { currentProcess } from '../../src/local-process.ts';
import { applyRevision } from '../../src/sync/apply-revision.ts';
import { fetchTrack } from '../../src/sync/fetch-track.ts';
import {
  TrackBusyError,
  acquireApplyLease,
  takeApplyLease,
  readTrackState,
  updateTrackState,
} from '../../src/sync/track-state.ts';
import { LeaseChangedError, unlockTrack } from '../../src/sync/lifecycle.ts';
import { afterFirstRead } from '../harness/state-store-overrides.ts';

const SHA_OLD = 'a'.repeat(40);
const SHA_NEW = 'b'.repeat(40);

/** A Git source whose branch points at `revision`, with one ConfigMap. */
function gitAt(revision: () => string): GitSource {
  return {
    resolve: async () => ({ revision: revision(), ref: 'refs/heads/main' }),
    readFiles: async () => [
      {
        path: 'cm.yaml',
        content: new TextEncoder().encode(
          'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n',
        ),
      },
    ],
  };
}

/** A cluster that must not be touched. */
const untouchable = new Proxy({} as KubernetesPort, {
  get: (_target, method) => () => {
    throw new Error(`the cluster was called (${String(method)}) though the job had nothing to do`);
  },
});

describe('job ordering', () => {
  let dir: string;
  let store: FsStore;
  let track: Track;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-ordering-'));
    store = new FsStore({ path: dir });
    track = parseConfig(
      'tracks: [{name: web, repository: https://git.example.com/web.git, namespace: apps}]',
      'driftless.yaml',
    ).tracks[0]!;
  });

  after(() => rm(dir, { recursive: true, force: true }));

  it('records a later resolution and refuses to let an earlier one replace it', async () => {
    // Prepare: the newer revision was resolved at 12:00:10.
    let clock = new Date('2026-01-01T12:00:10Z');
    const now = (): Date => clock;
    const newer = await fetchTrack(
      track,
      { type: 'fetch', track: 'web', trigger: 'webhook' },
      { source: gitAt(() => SHA_NEW), artifacts: store, state: store, now },
    );

    // Act: a slow fetch whose answer came back at 12:00:05 finishes afterwards.
    clock = new Date('2026-01-01T12:00:05Z');
    const older = await fetchTrack(
      track,
      { type: 'fetch', track: 'web', trigger: 'webhook' },
      { source: gitAt(() => SHA_OLD), artifacts: store, state: store, now },
    );

    // Assess
    assert.equal(newer.result.outcome, 'fetched');
    assert.equal(newer.next?.revision, SHA_NEW);
    assert.equal(older.result.outcome, 'stale');
    assert.equal(older.next, undefined);
    const state = await readTrackState(store, 'web');
    assert.equal(state.desiredRevision, SHA_NEW);
  });

  it('fails a requested reference that does not resolve without recording anything', async () => {
    // Prepare
    const before = await readTrackState(store, 'web');
    const source: GitSource = {
      ...gitAt(() => SHA_NEW),
      resolve: async (target) => {
        throw new Error(`reference "${target.reference}" is neither a branch nor a tag`);
      },
    };

    // Act
    const typo = await fetchTrack(
      track,
      { type: 'fetch', track: 'web', trigger: 'manual', revision: '4ac6bf' },
      { source, artifacts: store, state: store },
    );

    // Assess
    assert.equal(typo.result.outcome, 'failed');
    assert.match(typo.result.error ?? '', /"4ac6bf" is neither a branch nor a tag/);
    assert.deepEqual(await readTrackState(store, 'web'), before);
  });

  it('skips a sync job superseded by a later-resolved revision without touching the cluster', async () => {
    // Prepare: state desires SHA_NEW resolved at 12:00:10 (previous test).
    const job = {
      type: 'sync' as const,
      track: 'web',
      revision: SHA_OLD,
      resolvedAt: '2026-01-01T12:00:05.000Z',
      trigger: 'webhook' as const,
    };

    // Act
    const result = await applyRevision(track, job, {
      cluster: untouchable,
      artifacts: store,
      state: store,
    });

    // Assess
    assert.equal(result.result, 'superseded');
    assert.deepEqual(result.changeset, []);
    assert.equal((await readTrackState(store, 'web')).applyLease, null);
  });

  it('records a new revision but applies nothing while the track is pinned', async () => {
    // Prepare
    await updateTrackState(store, 'web', (state) => {
      state.pinned = SHA_OLD;
    });
    const job = {
      type: 'sync' as const,
      track: 'web',
      revision: SHA_NEW,
      resolvedAt: '2026-01-01T12:00:10.000Z',
      trigger: 'webhook' as const,
    };

    // Act
    const result = await applyRevision(track, job, {
      cluster: untouchable,
      artifacts: store,
      state: store,
    });

    // Assess
    assert.equal(result.result, 'pinned');
    assert.equal(result.state.pinned, SHA_OLD);
    await updateTrackState(store, 'web', (state) => {
      state.pinned = null;
    });
  });

  it('lets one apply job hold a track at a time, and takes over an expired lease', async () => {
    // Prepare
    const now = new Date('2026-01-01T13:00:00Z');
    await acquireApplyLease(store, 'lease', 'first', 60_000, now);

    // Act
    const second = acquireApplyLease(store, 'lease', 'second', 60_000, now);
    const afterExpiry = acquireApplyLease(
      store,
      'lease',
      'third',
      60_000,
      new Date(now.getTime() + 61_000),
    );

    // Assess
    await assert.rejects(second, TrackBusyError);
    await afterExpiry;
    assert.equal((await readTrackState(store, 'lease')).applyLease?.holder, 'third');
  });

  it('says which job holds a busy track, since when, and when it is free at the latest', async () => {
    // Prepare
    const now = new Date('2026-01-01T13:00:00Z');
    await acquireApplyLease(store, 'busy', 'first', 300_000, now, 'rollback');
    // This process holds it (recorded where the kernel says which process it is: Linux).
    const running = currentProcess();
    const holder = running === undefined ? '' : `, pid ${process.pid} on ${running.host}`;

    // Act
    const second = acquireApplyLease(
      store,
      'busy',
      'second',
      60_000,
      new Date(now.getTime() + 5_000),
    );

    // Assess
    await assert.rejects(second, (error) => {
      assert.ok(error instanceof TrackBusyError);
      assert.equal(
        error.message,
        `track "busy": another apply job runs until 2026-01-01T13:05:00.000Z (a rollback since 2026-01-01T13:00:00.000Z${holder}; if the process running it is gone, the track is free then, or at once with "driftless unlock --track busy --lease first")`,
      );
      return true;
    });
  });
  it('unlocks only the lease it was named: a lease taken over as the unlock writes is kept', async () => {
    // Prepare: an expired lease of a dead job, then a new job takes the track over right after
    // the unlock's first read of the state (as a queued job on another machine could).
    const now = new Date('2026-01-01T13:00:00Z');
    await acquireApplyLease(store, 'taken', 'deadbeef-dead', 60_000, now, 'sync');
    const racing = afterFirstRead(store, 'taken', async () => {
      await updateTrackState(store, 'taken', (state) => {
        state.applyLease = { holder: 'cafef00d-next', until: '2026-01-01T14:00:00.000Z' };
      });
    });

    // Act
    const unlocking = unlockTrack('taken', 'deadbeef', {
      state: racing,
      now: () => new Date(now.getTime() + 1_000),
    });

    // Assess
    await assert.rejects(unlocking, (error) => {
      assert.ok(error instanceof LeaseChangedError);
      assert.match(error.message, /held by lease cafef00d \(an apply job\), not deadbeef/);
      return true;
    });
    assert.equal((await readTrackState(store, 'taken')).applyLease?.holder, 'cafef00d-next');
    assert.deepEqual(await store.listHistory('taken'), []);
  });

  it('reports a track free, and records nothing, when the named lease is given back as the unlock writes', async () => {
    // Prepare: the job holding the lease ends (and returns it) right after the unlock's first read.
    const now = new Date('2026-01-01T13:00:00Z');
    await acquireApplyLease(store, 'returned', 'deadbeef-dead', 60_000, now, 'sync');
    const racing = afterFirstRead(store, 'returned', async () => {
      await updateTrackState(store, 'returned', (state) => {
        state.applyLease = null;
      });
    });

    // Act
    const unlocked = await unlockTrack('returned', 'deadbeef', { state: racing, now: () => now });

    // Assess
    assert.deepEqual(unlocked, { track: 'returned', result: 'free', lease: null });
    assert.equal((await readTrackState(store, 'returned')).applyLease ?? null, null);
    assert.deepEqual(await store.listHistory('returned'), []);
  });

  it('takes no lease for a job asked to stop before it began', async () => {
    // Prepare
    const controller = new AbortController();
    controller.abort(new InterruptedError('interrupted by SIGTERM'));
    const track = { name: 'stopped', timeout: 60_000 };

    // Act
    const taking = takeApplyLease(store, track, 'sync', new Date(), controller.signal);

    // Assess
    await assert.rejects(taking, { name: 'InterruptedError', message: 'interrupted by SIGTERM' });
    assert.equal((await readTrackState(store, 'stopped')).applyLease ?? null, null);
  });
});
