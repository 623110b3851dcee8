/**
 * Status around a pin and a failed load. A commit pushed while the track is pinned ends with a
 * `pending` commit status that says it is not applied and why (the pin, `driftless unpin`),
 * not with "applying" forever; `unpin` then takes it to success. FilesParsed False for a
 * revision that could not be loaded no longer stands once the track is about another one (a
 * rollback's pin, a newer revision, a sync waiting for a dependency), while a render failure of
 * the newest commit and a load failure of the revision concerned stay; the revision it is False
 * for is a field of the state, and a state written before that field behaves as before.
 *
 * The real job use-cases run as `serve` runs them (runJob with executeJob) on the real fs
 * store, and the events they tell go through the real commit status mapping; a small Git
 * source and the in-memory cluster stand in for Git and Kubernetes.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseConfig } from '../../src/config/index.ts';
import type { Track } from '../../src/config/types.ts';
import { StateCorruptError } from '../../src/store/errors.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import type { SyncResult } from '../../src/sync/apply-revision.ts';
import type { Job } from '../../src/sync/jobs.ts';
import { recordSync } from '../../src/sync/record-sync.ts';
import type { JobResult } from '../../src/sync/run-job.ts';
import {
  conditionOf,
  DEPENDENCY_NOT_READY,
  readTrackState,
  updateTrackState,
  type TrackState,
} from '../../src/sync/track-state.ts';
import { MovingGit } from './fakes/git-sources.ts';
import { InMemoryCluster } from './fakes/in-memory-cluster.ts';
import { outcomeOf, recordUnhealthy, servedJobs } from './fakes/served-jobs.ts';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const C = 'c'.repeat(40);
const NOW = new Date('2026-12-01T10:00:00.000Z');

const configMap = (name: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  value: "v"\n`;
const deployment = (name: string): string =>
  `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: ${name}\nspec: {}\n`;

describe('status around a pin and a failed load', () => {
  let dir: string;
  let store: FsStore;
  let tracks = 0;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-status-pinned-'));
    store = new FsStore({ path: dir });
  });
  after(() => rm(dir, { recursive: true, force: true }));

  /**
   * A track of its own (`extra` YAML fields), its jobs run as serve runs them: each job's
   * follow-ups after it. `reconfigure` gives the same track other fields.
   */
  function newTrack(extra = '') {
    const name = `z${++tracks}`;
    const parse = (fields: string): Track =>
      parseConfig(
        `tracks: [{name: ${name}, repository: https://git.example.com/o/z.git, namespace: apps${fields}}]`,
        'driftless.yaml',
      ).tracks[0]!;
    const configured: Track[] = [parse(extra)];
    const git = new MovingGit(A);
    const cluster = new InMemoryCluster();
    const jobs = servedJobs({ tracks: configured, store, git, cluster: () => cluster });
    const fetchJob: Job = { type: 'fetch', track: name, trigger: 'schedule' };
    return {
      name,
      git,
      told: jobs.told,
      run: jobs.runAll,
      poll: () => jobs.runAll(fetchJob),
      /** Only the fetch: the jobs it queued are returned, not run. */
      fetchOnly: async (): Promise<Job[]> => {
        await jobs.run(fetchJob);
        return jobs.queued.splice(0);
      },
      rollback: (revision: string) => jobs.runAll({ type: 'rollback', track: name, revision }),
      unpin: () => jobs.runAll({ type: 'lifecycle', track: name, action: 'unpin' }),
      reconfigure: (fields: string) => void (configured[0] = parse(fields)),
      statusesOf: jobs.statusesOf,
      state: () => readTrackState(store, name),
    };
  }

  const resultsOf = (done: readonly JobResult[]): string[] => done.map(outcomeOf);

  const NOT_APPLIED = `fetched; not applied while the track is pinned at ${A.slice(0, 12)} (run "driftless unpin" to apply it)`;
  const APPLYING = { state: 'pending', description: 'fetched; applying' };
  const APPLIED = { state: 'success', description: 'applied' };

  describe('commit statuses while the track is pinned', () => {
    it('a commit pushed while pinned stays pending, saying it is not applied and how to apply it; unpin applies it', async () => {
      // Prepare: A applied, then rolled back to (pinned at) A.
      const t = newTrack(', wait: false');
      t.git.files.set(A, configMap('one'));
      t.git.files.set(B, configMap('two'));
      await t.poll();
      await t.rollback(A);
      const before = t.statusesOf(A);

      // Act: B is pushed while the track is pinned; the next poll finds it again.
      t.git.head = B;
      const pushed = await t.poll();
      const toldBefore = t.told.length;
      const repolled = await t.poll();

      // Assess
      assert.deepEqual(resultsOf(pushed), ['fetched', 'pinned']);
      assert.deepEqual(t.statusesOf(B), [{ state: 'pending', description: NOT_APPLIED }]);
      assert.deepEqual(t.statusesOf(A), before, 'the pinned commit keeps its status');
      assert.deepEqual(resultsOf(repolled), ['fetched', 'pinned']);
      assert.equal(t.told.length, toldBefore, 'the same pin is no news at the next poll');
      const told = t.told.filter((e) => e.revision === B);
      assert.deepEqual(
        told.map((e) => [e.event, e.result]),
        [['fetched', 'pinned']],
        'one internal fetched event, its result saying why',
      );

      // Act: unpin; the sync it asks for applies B.
      const unpinned = await t.unpin();

      // Assess
      assert.deepEqual(resultsOf(unpinned), ['lifecycle', 'fetched', 'applied']);
      assert.deepEqual(t.statusesOf(B), [
        { state: 'pending', description: NOT_APPLIED },
        APPLYING,
        APPLIED,
      ]);
    });

    it('a commit fetched just before a rollback pinned the track ends pending, saying so', async () => {
      // Prepare: A applied; B fetched, its sync still queued when the rollback comes.
      const t = newTrack(', wait: false');
      t.git.files.set(A, configMap('one'));
      t.git.files.set(B, configMap('two'));
      await t.poll();
      t.git.head = B;
      const [sync] = await t.fetchOnly();
      await t.rollback(A);

      // Act
      const done = await t.run(sync!);

      // Assess
      assert.deepEqual(resultsOf(done), ['pinned']);
      assert.deepEqual(t.statusesOf(B), [APPLYING, { state: 'pending', description: NOT_APPLIED }]);
    });

    it('tells no unhealthy commit for a pinned sync: its health is the pinned revision’s', async () => {
      // Prepare: A applied and pinned, its health recorded False since.
      const t = newTrack(', wait: false');
      t.git.files.set(A, configMap('one'));
      t.git.files.set(B, configMap('two'));
      await t.poll();
      await t.rollback(A);
      await recordUnhealthy(store, t.name, NOW);

      // Act
      t.git.head = B;
      await t.poll();

      // Assess
      assert.deepEqual(t.statusesOf(B), [{ state: 'pending', description: NOT_APPLIED }]);
    });
  });

  describe('FilesParsed after a revision could not be loaded', () => {
    /** A track whose filters leave out Deployments: B, a Deployment only, cannot be applied. */
    function filtered() {
      const t = newTrack(', ignoreResources: [deployments.apps/v1]');
      t.git.files.set(A, configMap('one'));
      t.git.files.set(B, deployment('web'));
      return t;
    }
    const parsed = (state: TrackState) => {
      const condition = conditionOf(state, 'FilesParsed');
      return [condition?.status, condition?.reason, condition?.message];
    };

    it('holds again once a rollback pins another revision, through the pinned syncs after it, until the revision is concerned again', async () => {
      // Prepare: A applied; B refused (its only object is filtered out).
      const t = filtered();
      await t.poll();
      t.git.head = B;
      const refused = await t.poll();
      const failed = await t.state();

      // Act
      await t.rollback(A);
      const rolledBack = await t.state();
      const pinned = await t.poll();
      const afterPinned = await t.state();
      const unpinned = await t.unpin();

      // Assess
      assert.deepEqual(resultsOf(refused), ['fetched', 'failed']);
      assert.equal(parsed(failed)[1], 'EmptyRevision');
      assert.equal(failed.unloadedRevision, B, 'the state names the revision it is False for');
      assert.deepEqual(parsed(rolledBack), ['True', 'Parsed', `revision ${A} parsed and stored`]);
      assert.equal(rolledBack.unloadedRevision, null);
      assert.deepEqual(resultsOf(pinned), ['fetched', 'pinned']);
      // Still about the pin: the poll fetched B again, which is not loaded while pinned.
      assert.deepEqual(parsed(afterPinned), ['True', 'Parsed', `revision ${A} parsed and stored`]);
      assert.deepEqual(resultsOf(unpinned), ['lifecycle', 'fetched', 'failed']);
      assert.deepEqual(parsed(await t.state()).slice(0, 2), ['False', 'EmptyRevision']);
    });

    /** Records a sync `attempt` of `revision` for the track, as the apply step does. */
    const record = (
      track: string,
      revision: string,
      attempt: Parameters<typeof recordSync>[3],
    ): Promise<SyncResult> =>
      recordSync(store, track, revision, attempt, {
        trigger: 'webhook',
        holder: 'test',
        now: () => NOW,
      });
    const notLoaded = (revision: string) =>
      ({
        type: 'refused',
        condition: 'FilesParsed',
        reason: 'EmptyRevision',
        message: `revision ${revision} renders no objects to apply`,
      }) as const;
    const waiting = {
      type: 'refused',
      condition: 'Ready',
      reason: DEPENDENCY_NOT_READY,
      message: 'dependency "base" is not Ready at its current revision',
    } as const;

    it('holds again for the pin when a sync is stopped by it after another revision failed to load', async () => {
      // Prepare: pinned at A, a rollback to C could not load C.
      const pin = filtered().name;
      await updateTrackState(store, pin, (s) => {
        s.pinned = A;
        s.desiredRevision = B;
      });
      await record(pin, C, notLoaded(C));

      // Act: the next sync (of B) is stopped by the pin.
      const { state } = await record(pin, B, { type: 'pinned', pinnedAt: A });

      // Assess
      assert.deepEqual(parsed(state), ['True', 'Parsed', `revision ${A} parsed and stored`]);
      assert.equal(state.unloadedRevision, null);
      assert.equal(conditionOf(state, 'Ready')?.reason, 'Pinned');
    });

    it('holds again for the newer revision when a sync of the one that failed is superseded', async () => {
      // Prepare: B failed to load after C was fetched.
      const newer = filtered().name;
      await updateTrackState(store, newer, (s) => void (s.desiredRevision = C));
      await record(newer, B, notLoaded(B));

      // Act
      const { state } = await record(newer, B, { type: 'superseded' });

      // Assess
      assert.deepEqual(parsed(state), ['True', 'Parsed', `revision ${C} parsed and stored`]);
      assert.equal(state.unloadedRevision, null);
    });

    it('holds again for the revision whose sync waits for a dependency after another failed to load', async () => {
      // Prepare: A failed to load after B was fetched.
      const dependent = filtered().name;
      await updateTrackState(store, dependent, (s) => void (s.desiredRevision = B));
      await record(dependent, A, notLoaded(A));

      // Act: B's sync waits for a dependency.
      const { state } = await record(dependent, B, waiting);

      // Assess
      assert.deepEqual(parsed(state), ['True', 'Parsed', `revision ${B} parsed and stored`]);
      assert.equal(state.unloadedRevision, null);
      assert.equal(conditionOf(state, 'Ready')?.reason, DEPENDENCY_NOT_READY);
    });

    it('stays False for the revision concerned, and for a newest commit that failed to render', async () => {
      // The revision that failed waits for a dependency: it was not loaded again.
      const same = filtered().name;
      await updateTrackState(store, same, (s) => void (s.desiredRevision = B));
      const failed = await record(same, B, notLoaded(B));
      const waited = await record(same, B, waiting);

      // C does not render; a sync of A (queued before) waits for a dependency.
      const t = newTrack();
      t.git.files.set(A, configMap('one'));
      t.git.files.set(C, 'kind: [');
      await t.poll();
      t.git.head = C;
      const broken = await t.poll();
      const renderFailed = await t.state();
      const after = await record(t.name, A, waiting);

      // Assess
      assert.deepEqual(
        conditionOf(waited.state, 'FilesParsed'),
        conditionOf(failed.state, 'FilesParsed'),
      );
      assert.deepEqual(resultsOf(broken), ['failed']);
      assert.equal(parsed(renderFailed)[0], 'False');
      assert.match(String(parsed(renderFailed)[1]), /^RENDER_/);
      assert.equal(renderFailed.unloadedRevision, null, 'no stored revision failed to load');
      assert.deepEqual(
        conditionOf(after.state, 'FilesParsed'),
        conditionOf(renderFailed, 'FilesParsed'),
        'a render failure of the newest commit stays until a fetch judges it',
      );
    });

    it('reads a state written before the field, and the sync that loads its revision sets FilesParsed True as before', async () => {
      // Prepare: B refused, then the field removed, as an older version wrote the state.
      const t = filtered();
      t.git.head = B;
      await t.poll();
      const current = await store.read<Record<string, unknown>>(t.name);
      const { unloadedRevision, ...older } = current!.value;
      assert.equal(unloadedRevision, B);
      await store.write(t.name, older, current!.version);
      // The cause fixed: the track no longer filters B's Deployment out.
      t.reconfigure('');

      // Act
      const [sync] = await t.fetchOnly();
      const fetched = await t.state();
      const loaded = await t.run(sync!);

      // Assess: the fetch leaves the False to the apply step, which loads B and sets it True.
      assert.deepEqual(parsed(fetched).slice(0, 2), ['False', 'EmptyRevision']);
      assert.deepEqual(resultsOf(loaded), ['applied']);
      assert.deepEqual(parsed(await t.state()), [
        'True',
        'Parsed',
        `revision ${B} parsed and stored`,
      ]);
    });

    it('refuses a stored unloadedRevision that is not a revision, naming the field', async () => {
      const name = filtered().name;
      await store.write(name, { unloadedRevision: 5 }, undefined);
      await assert.rejects(readTrackState(store, name), (error: unknown) => {
        assert.ok(error instanceof StateCorruptError);
        assert.match(error.message, /field unloadedRevision is a number, expected a string/);
        return true;
      });
    });
  });
});
