/**
 * A sync asked to stop (the CLI at Ctrl-C or SIGTERM, src/cli/interrupts.ts):
 * requests in flight finish, nothing more is sent, the outcome so far is
 * recorded and the track's apply lease is given back at once, so the next
 * sync need not wait for it to expire. Real fs store and sync use-cases, the
 * in-memory cluster fake.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, beforeEach, describe, it } from 'node:test';
import type { KubernetesPort } from '../../src/cluster/kubernetes-port.ts';
import { parseConfig } from '../../src/config/index.ts';
import type { Track } from '../../src/config/types.ts';
import { InterruptedError } from '../../src/errors.ts';
import type { GitSource, SourceCall } from '../../src/source/ports.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import { deleteTrack } from '../../src/sync/lifecycle.ts';
import { syncTrack } from '../../src/sync/sync-track.ts';
import { conditionOf, readTrackState } from '../../src/sync/track-state.ts';
import { InMemoryCluster } from './fakes/in-memory-cluster.ts';
import { assertInterrupted } from '../harness/interrupted.ts';

const REVISION = '1'.repeat(40);
const NAMES = Array.from({ length: 20 }, (_, i) => `cm-${String(i + 1).padStart(2, '0')}`);

const configMap = (name: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  value: "v"\n`;

const deployment = [
  'apiVersion: apps/v1',
  'kind: Deployment',
  'metadata: {name: web}',
  'spec:',
  '  replicas: 1',
  '  selector: {matchLabels: {app: web}}',
  '  template:',
  '    metadata: {labels: {app: web}}',
  '    spec: {containers: [{name: web, image: nginx}]}',
  '',
].join('\n');

/** A Git source whose head holds `files` (name → YAML). */
function gitOf(files: Record<string, string>): GitSource {
  return {
    resolve: async () => ({ revision: REVISION, ref: 'refs/heads/main' }),
    readFiles: async () =>
      Object.entries(files).map(([name, text]) => ({
        path: `${name}.yaml`,
        content: new TextEncoder().encode(text),
      })),
  };
}

/** The cluster, calling `on` before each request of `method` is passed on. */
function watching(
  cluster: KubernetesPort,
  method: 'apply' | 'get' | 'delete',
  on: (count: number) => void,
): KubernetesPort {
  let count = 0;
  return {
    discover: (refresh) => cluster.discover(refresh),
    serverVersion: () => cluster.serverVersion(),
    apply: (object, options) => {
      if (method === 'apply') on(++count);
      return cluster.apply(object, options);
    },
    get: (ref) => {
      if (method === 'get') on(++count);
      return cluster.get(ref);
    },
    list: (query) => cluster.list(query),
    delete: (ref, options) => {
      if (method === 'delete') on(++count);
      return cluster.delete(ref, options);
    },
  };
}

/** The first three objects of NAMES still in `cluster`, but `kept`, as the stop's clause names them. */
function firstLeft(cluster: InMemoryCluster, kept?: string): string {
  const left = NAMES.filter(
    (name) =>
      name !== kept &&
      [...cluster.objects.values()].some((object) => object.metadata.name === name),
  );
  return left
    .slice(0, 3)
    .map((name) => `ConfigMap/apps/${name}`)
    .join(', ');
}

describe('a sync asked to stop', () => {
  let dir: string;
  let store: FsStore;
  let cluster: InMemoryCluster;

  const trackOf = (extra = ''): Track =>
    parseConfig(
      `tracks: [{name: web, repository: https://git.example.com/web.git, namespace: apps${extra}}]`,
      'driftless.yaml',
    ).tracks[0]!;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-interrupted-'));
    store = new FsStore({ path: dir });
    cluster = new InMemoryCluster();
  });

  after(() => rm(dir, { recursive: true, force: true }));

  const deps = (port: KubernetesPort, files: Record<string, string>, signal?: AbortSignal) => ({
    cluster: port,
    source: gitOf(files),
    artifacts: store,
    state: store,
    ...(signal ? { signal } : {}),
  });

  it('sends nothing after the signal, records the sync as failed and gives the lease back', async () => {
    // Prepare: the signal comes as the 5th object is sent.
    const track = trackOf();
    const files = Object.fromEntries(NAMES.map((name) => [name, configMap(name)]));
    const controller = new AbortController();
    const port = watching(cluster, 'apply', (count) => {
      if (count === 5) controller.abort(new InterruptedError('interrupted by SIGINT'));
    });

    // Act
    const stopped = await syncTrack(
      track,
      { trigger: 'manual' },
      deps(port, files, controller.signal),
    );
    const state = await readTrackState(store, track.name);
    const history = await store.listHistory(track.name);
    const inCluster = cluster.objects.size;
    const next = await syncTrack(track, { trigger: 'manual' }, deps(cluster, files));

    // Assess: 5 sent (the one in flight included), 15 never sent.
    assert.equal(stopped.result, 'failed');
    const actions = stopped.changeset.map((entry) => entry.action);
    assert.deepEqual(actions, [...Array(5).fill('created'), ...Array(15).fill('failed')]);
    assert.equal(
      stopped.changeset[5]?.error,
      'ConfigMap/apps/cm-06: not applied: interrupted by SIGINT',
    );
    assert.equal(inCluster, 5);
    assert.equal(state.applyLease, null);
    const ready = conditionOf(state, 'Ready');
    assert.equal(ready?.status, 'False');
    assert.equal(ready?.reason, 'SyncFailed');
    assert.equal(
      ready?.message,
      'interrupted by SIGINT: 15 of 20 objects not applied (ConfigMap/apps/cm-06, ConfigMap/apps/cm-07, ConfigMap/apps/cm-08 and 12 more)',
    );
    assert.deepEqual(
      history.map((entry) => entry.result),
      ['failed'],
    );
    // Nothing waits for a lease: the next sync applies the rest at once.
    assert.equal(next.result, 'applied');
    assert.equal(next.changeset.filter((entry) => entry.action === 'created').length, 15);
    assert.equal(cluster.objects.size, 20);
  });

  it('ends the health wait as cancelled and gives the lease back', async () => {
    // Prepare: a Deployment never becomes available here; the signal comes at the
    // first read after it was applied: the health wait's.
    const track = trackOf(', wait: true, timeout: 10m');
    const controller = new AbortController();
    const port = watching(cluster, 'get', () => {
      if (cluster.objects.size > 0)
        controller.abort(new InterruptedError('interrupted by SIGTERM'));
    });

    // Act
    const stopped = await syncTrack(
      track,
      { trigger: 'manual' },
      deps(port, { web: deployment }, controller.signal),
    );
    const state = await readTrackState(store, track.name);

    // Assess: applied, health not known, the track free.
    assert.equal(stopped.result, 'applied');
    assert.deepEqual(stopped.changeset, [{ subject: 'Deployment/apps/web', action: 'created' }]);
    assert.equal(state.applyLease, null);
    const healthy = conditionOf(state, 'Healthy');
    assert.equal(healthy?.status, 'Unknown');
    assert.equal(healthy?.reason, 'HealthCheckCanceled');
    assert.match(healthy?.message ?? '', /cancelled: interrupted by SIGTERM$/);
    assert.equal(conditionOf(state, 'Ready')?.status, 'Unknown');
  });

  it('does not begin when asked to stop before: no lease taken, nothing sent', async () => {
    // Prepare
    const track = trackOf();
    const controller = new AbortController();
    controller.abort(new InterruptedError('interrupted by SIGINT'));

    // Act
    const attempt = syncTrack(
      track,
      { trigger: 'manual' },
      deps(cluster, { a: configMap('a') }, controller.signal),
    );

    // Assess
    await assertInterrupted(attempt);
    assert.equal(cluster.objects.size, 0);
    assert.equal((await readTrackState(store, track.name)).applyLease ?? null, null);
  });
  it('prunes nothing after the signal and counts what it did not delete', async () => {
    // Prepare: 20 objects applied; the next revision has one, and the signal comes as the
    // 3rd of the 19 deletes is sent.
    const track = trackOf(', prune: true');
    const all = Object.fromEntries(NAMES.map((name) => [name, configMap(name)]));
    await syncTrack(track, { trigger: 'manual' }, deps(cluster, all));
    const controller = new AbortController();
    const port = watching(cluster, 'delete', (count) => {
      if (count === 3) controller.abort(new InterruptedError('interrupted by SIGINT'));
    });

    // Act
    const stopped = await syncTrack(
      track,
      { trigger: 'manual' },
      {
        ...deps(port, { 'cm-01': configMap('cm-01') }, controller.signal),
        source: {
          ...gitOf({ 'cm-01': configMap('cm-01') }),
          resolve: async () => ({ revision: '2'.repeat(40), ref: 'refs/heads/main' }),
        },
      },
    );
    const state = await readTrackState(store, track.name);

    // Assess: one clause for what was not deleted, which stays in the inventory for the next prune.
    const left = cluster.objects.size - 1;
    assert.equal(stopped.result, 'failed');
    assert.ok(left > 0 && left < 19, `${left} of 19 left`);
    assert.equal(
      conditionOf(state, 'Ready')?.message,
      `interrupted by SIGINT: ${left} of 19 objects not deleted (${firstLeft(cluster, 'cm-01')} and ${left - 3} more)`,
    );
    assert.equal(state.inventory.length, 1 + left);
    assert.equal(state.applyLease, null);
  });

  it('deletes nothing more of a track after the signal and counts what it left', async () => {
    // Prepare: 20 objects applied; the signal comes as the 3rd delete is sent.
    const track = trackOf(', prune: true');
    const all = Object.fromEntries(NAMES.map((name) => [name, configMap(name)]));
    await syncTrack(track, { trigger: 'manual' }, deps(cluster, all));
    const controller = new AbortController();
    const port = watching(cluster, 'delete', (count) => {
      if (count === 3) controller.abort(new InterruptedError('interrupted by SIGTERM'));
    });

    // Act
    const stopped = await deleteTrack(track, 'Delete', {
      cluster: port,
      state: store,
      signal: controller.signal,
    });
    const state = await readTrackState(store, track.name);

    // Assess: the track keeps what is left, and says how much in one clause.
    const left = cluster.objects.size;
    assert.equal(stopped.result, 'failed');
    assert.ok(left > 0 && left < 20, `${left} of 20 left`);
    assert.equal(
      stopped.error,
      `interrupted by SIGTERM: ${left} of 20 objects not deleted (${firstLeft(cluster)} and ${left - 3} more)`,
    );
    assert.equal(conditionOf(state, 'Ready')?.message, stopped.error);
    assert.equal(state.inventory.length, left);
    assert.equal(state.applyLease, null);
  });
  for (const step of ['resolve', 'readFiles'] as const) {
    // The timeout turns a regression (a sync waiting on the source forever) into a failure.
    it(
      `stops at once while the Git source hangs in ${step}, recording nothing`,
      { timeout: 10_000 },
      async () => {
        // Prepare: the source never answers that step; the signal comes once it is asked.
        const track = trackOf();
        const controller = new AbortController();
        const healthy = gitOf({ a: configMap('a') });
        // The call's signal: the Git source cancels its request with it (source.test.ts).
        let handed: AbortSignal | undefined;
        const hang = (...args: unknown[]) => {
          handed = (args.at(-1) as SourceCall | undefined)?.signal;
          controller.abort(new InterruptedError('interrupted by SIGINT'));
          return new Promise<never>(() => undefined);
        };
        const source: GitSource = {
          resolve: step === 'resolve' ? hang : healthy.resolve,
          readFiles: step === 'readFiles' ? hang : healthy.readFiles,
        };

        // Act
        const attempt = syncTrack(
          track,
          { trigger: 'manual' },
          { ...deps(cluster, {}, controller.signal), source },
        );

        // Assess: stopped, not failed: no condition, no history, nothing leased or applied.
        await assertInterrupted(attempt);
        const state = await readTrackState(store, track.name);
        assert.deepEqual(state.conditions, []);
        assert.deepEqual(await store.listHistory(track.name), []);
        assert.equal(state.applyLease ?? null, null);
        assert.equal(cluster.objects.size, 0);
        assert.equal(handed, controller.signal);
      },
    );
  }
});
