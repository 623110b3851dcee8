/**
 * A sync or rollback cut short by the track's `timeout` says the deadline once, with how many
 * objects it did not apply or delete and the first three, as a delete does
 * (track-deadline-commands.test.ts): not once per request that was still waiting. A failure of
 * an object's own keeps its part. The real fs store and use-cases; a cluster port that never
 * answers the calls a test picks stands in for a hung API server, the in-memory cluster fake
 * answers the rest.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { KubernetesPort } from '../../src/cluster/kubernetes-port.ts';
import { parseConfig } from '../../src/config/index.ts';
import type { Track } from '../../src/config/types.ts';
import type { GitSource } from '../../src/source/ports.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import { rollbackTrack } from '../../src/sync/rollback.ts';
import { syncTrack } from '../../src/sync/sync-track.ts';
import { conditionOf, readTrackState } from '../../src/sync/track-state.ts';
import { hangingOn } from './fakes/hanging-cluster.ts';
import { InMemoryCluster } from './fakes/in-memory-cluster.ts';

const FIRST = '1'.repeat(40);
const SECOND = '2'.repeat(40);
const gaveUp = (job: string): string =>
  `track "web": the ${job} did not finish within the track's timeout (2000 ms)`;

/** A Git source whose head is `revision`, holding `names` as ConfigMaps whose value is `value`. */
function gitAt(revision: string, names: readonly string[], value = 'v'): GitSource {
  return {
    resolve: async () => ({ revision, ref: 'refs/heads/main' }),
    readFiles: async () =>
      names.map((name) => ({
        path: `${name}.yaml`,
        content: new TextEncoder().encode(
          `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  value: "${value}"\n`,
        ),
      })),
  };
}

/** `cluster`, refusing every apply of the object named `name`. */
function refusing(cluster: KubernetesPort, name: string): KubernetesPort {
  return {
    discover: (refresh) => cluster.discover(refresh),
    serverVersion: () => cluster.serverVersion(),
    get: (ref) => cluster.get(ref),
    list: (query) => cluster.list(query),
    delete: (ref, options) => cluster.delete(ref, options),
    apply: async (object, options) => {
      if (object.metadata.name === name) throw new Error('admission webhook "policy" denied it');
      return cluster.apply(object, options);
    },
  };
}

/**
 * At the track's 2 s; the upper bound leaves room for a loaded machine (CI), not a measure of
 * speed.
 */
function assertAboutTwoSeconds(seconds: number): void {
  assert.ok(seconds >= 1.9 && seconds < 15, `took ${seconds} s`);
}

describe("a sync or rollback cut short by the track's timeout", () => {
  let dir: string;
  let store: FsStore;
  let track: Track;
  let answering: InMemoryCluster;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-timeout-failures-'));
  });

  beforeEach(async () => {
    store = new FsStore({ path: await mkdtemp(join(dir, 'store-')) });
    track = parseConfig(
      'tracks: [{name: web, repository: https://git.example.com/web.git, namespace: apps, prune: true, timeout: 2s}]',
      'driftless.yaml',
    ).tracks[0]!;
    answering = new InMemoryCluster();
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** Syncs `source`'s head to `cluster`, timed. */
  async function timedSync(cluster: KubernetesPort, source: GitSource) {
    const started = performance.now();
    const result = await syncTrack(
      track,
      { trigger: 'manual' },
      { cluster, source, artifacts: store, state: store },
    );
    return { result, seconds: (performance.now() - started) / 1000 };
  }

  it(
    'says the deadline once for the applies it cancelled, and an object refused on its own in its part',
    { timeout: 20_000 },
    async () => {
      // Prepare: 12 objects sent at once; a is applied, b refused, c to l never answered.
      const names = 'abcdefghijkl'.split('');
      const cluster = hangingOn(
        refusing(answering, 'b'),
        (call) => call.method === 'apply' && !['a', 'b'].includes(call.name ?? ''),
      );

      // Act
      const { result, seconds } = await timedSync(cluster, gitAt(FIRST, names));
      const state = await readTrackState(store, track.name);

      // Assess: the 10 cancelled told in one clause, the refusal in its own part
      assertAboutTwoSeconds(seconds);
      assert.equal(cluster.hung(), 10);
      assert.equal(result.result, 'failed');
      assert.equal(
        result.error,
        `${gaveUp('sync')}: 10 of 12 objects not applied (ConfigMap/apps/c, ConfigMap/apps/d, ConfigMap/apps/e and 7 more); ConfigMap/apps/b (b.yaml): admission webhook "policy" denied it`,
      );
      assert.equal(conditionOf(state, 'Ready')?.message, result.error);
      assert.equal(
        (await store.listHistory(track.name))[0]?.error,
        result.error,
        'the history entry says the same',
      );
      // Each object's entry keeps its own error.
      const entry = (name: string) =>
        result.changeset.find((e) => e.subject === `ConfigMap/apps/${name}`);
      assert.equal(entry('a')?.action, 'created');
      assert.equal(entry('c')?.action, 'failed');
      assert.equal(entry('c')?.error, `ConfigMap/apps/c (c.yaml): ${gaveUp('sync')}`);
    },
  );

  it(
    'says the deadline once for the deletes it cancelled when none was left unsent',
    { timeout: 20_000 },
    async () => {
      // Prepare: six objects applied; the next revision has only a. The prune reads b to f at
      // once (eight at a time) and none is answered.
      const names = 'abcdef'.split('');
      const applied = await timedSync(answering, gitAt(FIRST, names));
      assert.equal(applied.result.result, 'applied', applied.result.error);
      const cluster = hangingOn(answering, (call) => call.method === 'get' && call.name !== 'a');

      // Act
      const { result, seconds } = await timedSync(cluster, gitAt(SECOND, ['a']));
      const state = await readTrackState(store, track.name);

      // Assess
      assertAboutTwoSeconds(seconds);
      assert.equal(cluster.hung(), 5);
      assert.equal(result.result, 'failed');
      assert.equal(
        result.error,
        `${gaveUp('sync')}: 5 of 5 objects not deleted (ConfigMap/apps/b, ConfigMap/apps/c, ConfigMap/apps/d and 2 more)`,
      );
      // What was not deleted stays the track's, to prune next time.
      assert.deepEqual(
        state.inventory.map((e) => e.subject),
        names.map((name) => `ConfigMap/apps/${name}`),
      );
    },
  );

  it(
    'says the deadline once for the dry runs of a rollback it cancelled',
    { timeout: 20_000 },
    async () => {
      // Prepare: two revisions applied where the cluster answered; the rollback's dry runs of the
      // changes back are never answered.
      const names = 'abcd'.split('');
      await timedSync(answering, gitAt(FIRST, names, 'one'));
      const second = await timedSync(answering, gitAt(SECOND, names, 'two'));
      assert.equal(second.result.result, 'applied', second.result.error);
      const cluster = hangingOn(answering, (call) => call.method === 'apply');

      // Act
      const started = performance.now();
      const result = await rollbackTrack(
        track,
        { type: 'rollback', track: track.name, revision: FIRST },
        { cluster, artifacts: store, state: store },
      );

      // Assess
      assertAboutTwoSeconds((performance.now() - started) / 1000);
      assert.equal(cluster.hung(), 4);
      assert.equal(result.result, 'failed');
      assert.equal(
        result.error,
        `${gaveUp('rollback')}: 4 of 4 objects not applied (ConfigMap/apps/a, ConfigMap/apps/b, ConfigMap/apps/c and 1 more)`,
      );
    },
  );
});
