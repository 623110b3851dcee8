/**
 * Which job results are news, over a track's life: a commit that changes no
 * object still ends its commit status, a success after a failure is told
 * (and the status goes back to success), the same object drifting again
 * after a clean check is told again, and a change written back to Git by
 * two-way sync is told as written back, not as drift. The events go through
 * the real state store and the real commit status mapping.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { commitStatusOf, type CommitState } from '../../src/notify/commit-status.ts';
import type { NotificationEvent } from '../../src/notify/events.ts';
import type { WriteBackChange } from '../../src/render/write-back-change.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import type { StateStore } from '../../src/store/ports.ts';
import { newEvents } from '../../src/sync/job-events.ts';
import type { DriftResult } from '../../src/sync/reconcile-drift.ts';
import type { JobResult } from '../../src/sync/run-job.ts';
import type { SyncOutcome } from '../../src/sync/sync-result.ts';
import { emptyTrackState, setCondition } from '../../src/sync/track-state.ts';

const X = 'a'.repeat(40);
const Y = 'b'.repeat(40);
const NOW = new Date('2026-12-01T10:00:00.000Z');

const fetched = (track: string, revision: string | null, error?: string): JobResult => ({
  type: 'fetch',
  job: { type: 'fetch', track, trigger: 'webhook' },
  result: {
    track,
    revision,
    resolvedAt: NOW.toISOString(),
    outcome: error === undefined ? 'fetched' : 'failed',
    ...(error === undefined ? {} : { error }),
  },
  next: [],
});

const synced = (
  track: string,
  revision: string,
  result: SyncOutcome,
  options: { error?: string; healthy?: boolean } = {},
): JobResult => {
  const state = emptyTrackState();
  if (options.healthy !== undefined) {
    const { healthy } = options;
    setCondition(
      state,
      'Healthy',
      healthy ? 'True' : 'False',
      healthy ? 'Healthy' : 'HealthCheckFailed',
      healthy ? 'all checked objects are ready' : 'Deployment/web/api: 0/2 ready',
      NOW,
    );
  }
  return {
    type: 'sync',
    job: { type: 'sync', track, revision, resolvedAt: '', trigger: 'webhook' },
    result: {
      track,
      revision,
      result,
      changeset: [],
      state,
      ...(options.error === undefined ? {} : { error: options.error }),
    },
    next: [],
  };
};

const change = (subject: string): WriteBackChange => ({
  subject,
  apiVersion: 'v1',
  kind: 'ConfigMap',
  name: subject.split('/').at(-1)!,
  namespace: 'apps',
  file: 'settings.yaml',
  line: 1,
  fields: [{ path: '/data/value', value: 'cluster', base: 'git' }],
});

const drift = (
  track: string,
  found: {
    drifted?: string[];
    corrected?: boolean;
    errors?: string[];
    writtenBack?: string[];
  } = {},
): JobResult => {
  const result: DriftResult = {
    track,
    revision: X,
    drifted: (found.drifted ?? []).map((subject) => ({
      subject,
      ref: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        name: subject.split('/').at(-1)!,
        namespace: 'apps',
      },
      patch: [{ op: 'replace', path: '/data/value', value: 'git' }],
      changedBy: ['kubectl-edit'],
    })),
    missing: [],
    errors: (found.errors ?? []).map((subject) => ({ subject, error: `${subject}: forbidden` })),
    corrected: found.corrected ?? false,
    changeset: [],
    writeBack: (found.writtenBack ?? []).map(change),
    writeBackRefused: [],
  };
  return { type: 'drift', job: { type: 'drift', track }, result, next: [] };
};

const writeBack = (
  track: string,
  result: 'written-back' | 'unchanged' | 'failed',
  subjects: string[] = [],
): JobResult => ({
  type: 'writeBack',
  job: {
    type: 'writeBack',
    track,
    revision: X,
    changes: subjects.map(change),
    trigger: 'schedule',
  },
  result: {
    track,
    revision: X,
    result,
    commit: result === 'written-back' ? Y : null,
    writtenBack: result === 'written-back' ? subjects : [],
    conflicts: [],
    refused: [],
    ...(result === 'failed' ? { error: 'push refused: protected branch' } : {}),
  },
  next: [],
});

const lifecycle = (track: string, result: 'suspended' | 'resumed'): JobResult => ({
  type: 'lifecycle',
  job: { type: 'lifecycle', track, action: result === 'suspended' ? 'suspend' : 'resume' },
  result: {
    track,
    action: result === 'suspended' ? 'suspend' : 'resume',
    result,
    revision: X,
    suspended: result === 'suspended',
    changeset: [],
  },
  next: [],
});

/** A state store that counts its writes: a job that tells nothing new writes nothing. */
function countingWrites(store: StateStore): { store: StateStore; writes: () => number } {
  let writes = 0;
  const counted = new Proxy(store, {
    get(target, key) {
      if (key === 'write') writes++;
      const value = Reflect.get(target, key) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { store: counted, writes: () => writes };
}

describe('notification events over a track’s life', () => {
  let dir: string;
  let store: FsStore;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-notify-recovery-'));
    store = new FsStore({ path: dir });
  });
  after(() => rm(dir, { recursive: true, force: true }));

  /** Runs the jobs through newEvents, as runJob does: every event told, in order. */
  const tellAll = async (...jobs: JobResult[]): Promise<NotificationEvent[]> => {
    const told: NotificationEvent[] = [];
    for (const done of jobs) {
      told.push(...(await newEvents(store, done.job.track, done, NOW.toISOString())));
    }
    return told;
  };
  const names = (events: readonly NotificationEvent[]) => events.map((e) => e.event);
  /** The commit statuses the events set, per commit, in order. */
  const statuses = (events: readonly NotificationEvent[], wait: boolean) => {
    const byCommit = new Map<string, CommitState[]>();
    for (const event of events) {
      const status = commitStatusOf(event, { wait });
      if (status !== undefined)
        byCommit.set(status.sha, [...(byCommit.get(status.sha) ?? []), status.state]);
    }
    return Object.fromEntries(byCommit);
  };

  it('ends the commit status of a commit that changes no object, and tells it once', async () => {
    // Prepare: X applied.
    const track = 'readme-push';
    const first = await tellAll(fetched(track, X), synced(track, X, 'applied'));
    assert.deepEqual(names(first), ['fetched', 'applied']);

    // Act: a README-only commit Y, then the next poll finds Y again.
    const pushed = await tellAll(fetched(track, Y), synced(track, Y, 'unchanged'));
    const again = await tellAll(fetched(track, Y), synced(track, Y, 'unchanged'));

    // Assess
    assert.deepEqual(
      pushed.map((e) => [e.event, e.result, e.revision]),
      [
        ['fetched', 'fetched', Y],
        ['applied', 'unchanged', Y],
      ],
    );
    assert.deepEqual(statuses(pushed, false), { [Y]: ['pending', 'success'] });
    assert.deepEqual(again, [], 'the same revision unchanged again is no news');
  });

  it('tells a success after a failure, and the commit goes back to success', async () => {
    // Without a health wait: applied is the success.
    const track = 'recovers';
    const told = await tellAll(
      fetched(track, X),
      synced(track, X, 'failed', { error: 'substitute: variable ${CLUSTER} is not set' }),
      synced(track, X, 'failed', { error: 'substitute: variable ${CLUSTER} is not set' }),
      synced(track, X, 'unchanged'),
      synced(track, X, 'unchanged'),
    );
    assert.deepEqual(names(told), ['fetched', 'failed', 'applied']);
    assert.deepEqual(statuses(told, false), { [X]: ['pending', 'failure', 'success'] });

    // With one: healthy again is the success, though it was told before the failure.
    const waiting = 'recovers-healthy';
    const health = await tellAll(
      fetched(waiting, X),
      synced(waiting, X, 'applied', { healthy: true }),
      synced(waiting, X, 'failed', { error: 'the cluster did not answer' }),
      synced(waiting, X, 'unchanged', { healthy: true }),
      synced(waiting, X, 'unchanged', { healthy: true }),
    );
    assert.deepEqual(names(health), [
      'fetched',
      'applied',
      'healthy',
      'failed',
      'applied',
      'healthy',
    ]);
    assert.deepEqual(statuses(health, true), { [X]: ['pending', 'success', 'failure', 'success'] });

    // A fetch that failed (no commit resolved), then one that works: the sync after it is news.
    const fetching = 'recovers-fetch';
    const fetches = await tellAll(
      fetched(fetching, X),
      synced(fetching, X, 'applied'),
      fetched(fetching, null, 'Git host unreachable'),
      fetched(fetching, X),
      synced(fetching, X, 'unchanged'),
    );
    assert.deepEqual(names(fetches), ['fetched', 'applied', 'failed', 'applied']);
  });

  it('tells the same object drifting again once a clean check came between', async () => {
    const track = 'drifts-twice';
    const edited = ['ConfigMap/apps/settings'];
    assert.deepEqual(names(await tellAll(drift(track, { drifted: edited }))), ['drifted']);
    assert.deepEqual(await tellAll(drift(track, { drifted: edited })), [], 'drift that stays');
    // Put back by hand: the next check is clean, and tells nothing itself.
    assert.deepEqual(await tellAll(drift(track)), []);

    // Act
    const again = await tellAll(drift(track, { drifted: edited }));

    // Assess
    assert.deepEqual(
      again.map((e) => [e.event, e.subjects]),
      [['drifted', edited]],
    );

    // Corrected drift alike: the next correction of the same object is told.
    const corrects = 'corrects-twice';
    const corrections = await tellAll(
      drift(corrects, { drifted: edited, corrected: true }),
      drift(corrects),
      drift(corrects, { drifted: edited, corrected: true }),
    );
    assert.deepEqual(names(corrections), ['corrected', 'corrected']);
  });

  it('keeps drift told when a check could not read every object', async () => {
    const track = 'drift-unsure';
    const edited = ['ConfigMap/apps/settings'];
    const told = await tellAll(
      drift(track, { drifted: edited }),
      drift(track, { errors: ['ConfigMap/apps/settings'] }),
      drift(track, { drifted: edited }),
    );
    assert.deepEqual(names(told), ['drifted']);
  });

  it('tells a change written back to Git as writtenBack, not as drift', async () => {
    const track = 'two-way';
    const scaled = 'ConfigMap/apps/replicas';
    const edited = 'ConfigMap/apps/settings';

    // Act: a syncTo: git object changed in the cluster, written back.
    const writes = await tellAll(
      drift(track, { drifted: [scaled], writtenBack: [scaled] }),
      writeBack(track, 'written-back', [scaled]),
    );
    // Another object drifted besides: only it is drift.
    const both = await tellAll(drift(track, { drifted: [scaled, edited], writtenBack: [scaled] }));
    // A syncTo: git object whose change is not written back (refused) is drift left in place.
    const refused = await tellAll(drift('two-way-refused', { drifted: [scaled] }));

    // Assess
    assert.deepEqual(
      writes.map((e) => [e.event, e.subjects]),
      [['writtenBack', [scaled]]],
    );
    assert.deepEqual(
      both.map((e) => [e.event, e.subjects]),
      [['drifted', [edited]]],
    );
    assert.deepEqual(
      refused.map((e) => [e.event, e.subjects]),
      [['drifted', [scaled]]],
    );
  });

  it('does not tell a failing write-back and the syncs around it again at every turn', async () => {
    const track = 'write-back-fails';
    const told = await tellAll(
      fetched(track, X),
      synced(track, X, 'applied'),
      writeBack(track, 'failed'),
      fetched(track, X),
      synced(track, X, 'unchanged'),
      writeBack(track, 'failed'),
      synced(track, X, 'unchanged'),
      // Git had it after all: the next failure is news again.
      writeBack(track, 'unchanged'),
      writeBack(track, 'failed'),
    );
    assert.deepEqual(names(told), ['fetched', 'applied', 'failed', 'failed']);
  });

  it('tells a suspend again after a resume', async () => {
    const track = 'suspends-twice';
    const told = await tellAll(
      lifecycle(track, 'suspended'),
      lifecycle(track, 'resumed'),
      lifecycle(track, 'suspended'),
    );
    assert.deepEqual(names(told), ['suspended', 'suspended']);
  });

  it('writes nothing for a job that changes nothing told', async () => {
    const track = 'quiet';
    await tellAll(fetched(track, X), synced(track, X, 'applied'), drift(track));
    const { store: counted, writes } = countingWrites(store);
    for (const done of [fetched(track, X), synced(track, X, 'unchanged'), drift(track)]) {
      assert.deepEqual(await newEvents(counted, track, done, NOW.toISOString()), []);
    }
    assert.equal(writes(), 0);
  });
});
