/**
 * An apply whose dry runs the track's deadline or Ctrl-C cuts short: the API server refused
 * nothing, so no object is held back "for the sake" of a refusal that never was. The objects
 * are not applied for the signal's reason and the result says it was interrupted, which
 * describeFailures tells once for all of them (timeout-failures.test.ts); a refusal the server
 * did answer keeps its own part. The real TrackDeadline; a cluster port that never answers the
 * calls a test picks stands in for a hung API server, the in-memory cluster fake answers the rest.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { applyObjects } from '../../src/apply/apply-objects.ts';
import { describeFailures } from '../../src/apply/changeset.ts';
import type { KubeObject } from '../../src/cluster/kube-object.ts';
import type { KubernetesPort } from '../../src/cluster/kubernetes-port.ts';
import { InterruptedError } from '../../src/errors.ts';
import { TrackDeadline } from '../../src/sync/track-cluster.ts';
import { hangingOn } from './fakes/hanging-cluster.ts';
import { InMemoryCluster } from './fakes/in-memory-cluster.ts';

const TRACK = { name: 'web', timeout: 300 };

function configMap(name: string, value: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: 'apps' },
    data: { value },
  };
}

function namespace(team: string): KubeObject {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'apps', labels: { team } } };
}

/** A cluster holding `objects` as the track applied them. */
async function clusterWith(objects: readonly KubeObject[]): Promise<InMemoryCluster> {
  const cluster = new InMemoryCluster([
    {
      group: '',
      version: 'v1',
      kind: 'ConfigMap',
      plural: 'configmaps',
      namespaced: true,
      listable: true,
    },
    {
      group: '',
      version: 'v1',
      kind: 'Namespace',
      plural: 'namespaces',
      namespaced: false,
      listable: true,
    },
  ]);
  const first = await applyObjects(cluster, objects, { track: TRACK.name });
  assert.ok(
    first.changeset.every((entry) => entry.action === 'created'),
    JSON.stringify(first.changeset),
  );
  return cluster;
}

/** `cluster`, refusing every apply (dry run or not) of the object named `name`. */
function refusing(cluster: KubernetesPort, name: string, before?: () => void): KubernetesPort {
  return {
    discover: (refresh) => cluster.discover(refresh),
    serverVersion: () => cluster.serverVersion(),
    get: (ref) => cluster.get(ref),
    list: (query) => cluster.list(query),
    delete: (ref, options) => cluster.delete(ref, options),
    apply: async (object, options) => {
      if (object.metadata.name !== name) return cluster.apply(object, options);
      before?.();
      throw new Error('admission webhook "policy" denied it');
    },
  };
}

/** The value of ConfigMap `name` in `cluster`. */
async function valueOf(cluster: KubernetesPort, name: string): Promise<unknown> {
  const live = await cluster.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'apps', name });
  return (live as { data?: { value?: string } } | undefined)?.data?.value;
}

describe('an apply whose dry runs the deadline or Ctrl-C cut short', () => {
  it(
    'reports the objects as not applied at the deadline, not held back for a refusal',
    { timeout: 10_000 },
    async () => {
      // Prepare: a, b and c exist; each changes. The dry runs of a and b answer, c's never does.
      const names = ['a', 'b', 'c'];
      const answering = await clusterWith(names.map((name) => configMap(name, 'one')));
      const cluster = hangingOn(answering, (call) => call.method === 'apply' && call.name === 'c');
      const deadline = new TrackDeadline(TRACK, 'sync', undefined);

      // Act
      const result = await applyObjects(
        deadline.bound(cluster),
        names.map((name) => configMap(name, 'two')),
        { track: TRACK.name, signal: deadline.signal },
      ).finally(() => deadline.dispose());

      // Assess: the deadline stopped all three; nothing is held back, nothing was changed.
      const reason = deadline.error.message;
      const subjects = names.map((name) => `ConfigMap/apps/${name}`);
      assert.equal(cluster.hung(), 1);
      assert.deepEqual(result.interrupted, { reason, notSent: subjects });
      assert.deepEqual(
        result.changeset,
        subjects.map((subject) => ({
          subject,
          action: 'failed',
          error: `${subject}: not applied: ${reason}`,
        })),
      );
      assert.equal(
        describeFailures(result.changeset, {
          interrupted: result.interrupted!,
          of: 3,
          verb: 'applied',
        }),
        `${reason}: 3 of 3 objects not applied (ConfigMap/apps/a, ConfigMap/apps/b, ConfigMap/apps/c)`,
      );
      for (const name of names) assert.equal(await valueOf(answering, name), 'one');
    },
  );

  it(
    'keeps a refusal the server answered in its own part, the others not applied at the deadline',
    { timeout: 10_000 },
    async () => {
      // Prepare: a's dry run is refused, b's taken, c's never answered.
      const names = ['a', 'b', 'c'];
      const answering = await clusterWith(names.map((name) => configMap(name, 'one')));
      const cluster = hangingOn(
        refusing(answering, 'a'),
        (call) => call.method === 'apply' && call.name === 'c',
      );
      const deadline = new TrackDeadline(TRACK, 'sync', undefined);

      // Act
      const result = await applyObjects(
        deadline.bound(cluster),
        names.map((name) => configMap(name, 'two')),
        { track: TRACK.name, signal: deadline.signal },
      ).finally(() => deadline.dispose());

      // Assess
      const reason = deadline.error.message;
      assert.deepEqual(result.interrupted, {
        reason,
        notSent: ['ConfigMap/apps/b', 'ConfigMap/apps/c'],
      });
      assert.ok(
        result.changeset.every((entry) => entry.heldBack === undefined),
        JSON.stringify(result.changeset),
      );
      assert.equal(
        describeFailures(result.changeset, {
          interrupted: result.interrupted!,
          of: 3,
          verb: 'applied',
        }),
        `${reason}: 2 of 3 objects not applied (ConfigMap/apps/b, ConfigMap/apps/c); ConfigMap/apps/a: admission webhook "policy" denied it`,
      );
    },
  );

  it(
    'says it was interrupted when a cluster definition is refused as Ctrl-C stops the apply',
    { timeout: 10_000 },
    async () => {
      // Prepare: the Namespace and a ConfigMap in it exist and change; the Namespace's dry run
      // is in flight when Ctrl-C comes, and the server refuses it.
      const answering = await clusterWith([namespace('one'), configMap('a', 'one')]);
      const stop = new AbortController();
      const cluster = refusing(answering, 'apps', () =>
        stop.abort(new InterruptedError('interrupted (SIGINT)')),
      );

      // Act
      const result = await applyObjects(cluster, [namespace('two'), configMap('a', 'two')], {
        track: TRACK.name,
        signal: stop.signal,
      });

      // Assess: the refusal keeps its part; the ConfigMap is not applied for the interruption.
      const reason = 'interrupted (SIGINT)';
      assert.deepEqual(result.interrupted, { reason, notSent: ['ConfigMap/apps/a'] });
      assert.deepEqual(result.changeset[1], {
        subject: 'ConfigMap/apps/a',
        action: 'failed',
        error: `ConfigMap/apps/a: not applied: ${reason}`,
      });
      assert.equal(
        describeFailures(result.changeset, {
          interrupted: result.interrupted!,
          of: 2,
          verb: 'applied',
        }),
        `${reason}: 1 of 2 objects not applied (ConfigMap/apps/a); ${result.changeset[0]?.subject}: admission webhook "policy" denied it`,
      );
      assert.equal(await valueOf(answering, 'a'), 'one');
    },
  );
});
