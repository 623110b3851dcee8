/**
 * LISTs started before the apply (read-live.ts `prefetchLists`): a sync
 * starts them from the stored inventory while it reads the artifact; the
 * apply's reads then take their answers instead of asking again — until the
 * apply writes a definition (a Namespace, a CRD), after which the rest is
 * read anew. In-memory cluster fake that counts LISTs.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { applyObjects } from '../../src/apply/apply-objects.ts';
import { inventoryOf } from '../../src/apply/inventory.ts';
import { prefetchLists, readLive } from '../../src/apply/read-live.ts';
import { UnknownResourceError } from '../../src/cluster/errors.ts';
import { objectKey, type KubeObject, type ObjectRef } from '../../src/cluster/kube-object.ts';
import type { ListQuery } from '../../src/cluster/kubernetes-port.ts';
import { InMemoryCluster } from './fakes/in-memory-cluster.ts';

/** Records each LIST as `Kind/namespace`; LISTs of `failing` kinds throw `failWith`. */
class CountingCluster extends InMemoryCluster {
  readonly lists: string[] = [];
  failing = new Set<string>();
  failWith: () => Error = () => new Error('configmaps is forbidden: cannot list');
  override async list(query: ListQuery): Promise<KubeObject[]> {
    this.lists.push(`${query.kind}/${query.namespace ?? ''}`);
    if (this.failing.has(query.kind)) throw this.failWith();
    return super.list(query);
  }
}

function configMap(name: string, namespace = 'apps'): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data: { name } };
}

function refOf(object: KubeObject): ObjectRef {
  return {
    apiVersion: object.apiVersion,
    kind: object.kind,
    namespace: object.metadata.namespace,
    name: object.metadata.name,
  };
}

async function clusterWith(objects: readonly KubeObject[]): Promise<CountingCluster> {
  const cluster = new CountingCluster();
  for (const object of objects) await cluster.apply(object, { fieldManager: 'test', force: true });
  cluster.lists.length = 0;
  return cluster;
}

describe('prefetchLists', () => {
  it('lists each kind and namespace holding two or more of the refs, once, and leaves single objects to the read', async () => {
    // Prepare
    const cluster = await clusterWith([]);
    const refs = [configMap('a'), configMap('b'), configMap('c', 'other'), configMap('d')].map(
      refOf,
    );

    // Act
    const lists = prefetchLists(cluster, inventoryOf(refs));

    // Assess
    assert.deepEqual(cluster.lists, ['ConfigMap/apps']);
    assert.deepEqual([...lists.keys()], ['v1|ConfigMap|apps']);
  });

  it('skips an inventory entry it cannot read: a prefetch is a hint and never fails the job', async () => {
    // Prepare
    const cluster = await clusterWith([]);
    const inventory = [
      { subject: 'not-a-subject', apiVersion: 'v1' },
      ...inventoryOf([configMap('a'), configMap('b')].map(refOf)),
    ];

    // Act
    const lists = prefetchLists(cluster, inventory);

    // Assess
    assert.deepEqual([...lists.keys()], ['v1|ConfigMap|apps']);
  });

  it('lets a LIST nobody reads fail without an unhandled rejection', async () => {
    // Prepare
    const cluster = await clusterWith([]);
    cluster.failing.add('ConfigMap');
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);

    // Act
    try {
      prefetchLists(cluster, inventoryOf([configMap('a'), configMap('b')].map(refOf)));
      await new Promise((resolve) => setTimeout(resolve, 20));
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }

    // Assess
    assert.deepEqual(unhandled, []);
  });
});

describe('readLive with prefetched LISTs', () => {
  it('takes a group from its prefetched LIST instead of listing again, once', async () => {
    // Prepare
    const objects = [configMap('a'), configMap('b')];
    const cluster = await clusterWith(objects);
    const prefetched = prefetchLists(cluster, inventoryOf(objects.map(refOf)));

    // Act
    const live = await readLive(cluster, objects, prefetched);
    const again = await readLive(cluster, objects, prefetched);

    // Assess
    assert.deepEqual([...live.found.keys()].sort(), [...again.found.keys()].sort());
    assert.equal(live.found.size, 2);
    // One LIST by the prefetch, one by the second read: a prefetched answer serves one read.
    assert.deepEqual(cluster.lists, ['ConfigMap/apps', 'ConfigMap/apps']);
    assert.equal(prefetched.size, 0);
  });

  it('reports a failed prefetched LIST as the read error of each of its objects', async () => {
    // Prepare
    const objects = [configMap('a'), configMap('b')];
    const cluster = await clusterWith(objects);
    cluster.failing.add('ConfigMap');
    const prefetched = prefetchLists(cluster, inventoryOf(objects.map(refOf)));

    // Act
    const live = await readLive(cluster, objects, prefetched);

    // Assess
    assert.equal(live.found.size, 0);
    assert.deepEqual(
      [...live.errors.values()],
      ['configmaps is forbidden: cannot list', 'configmaps is forbidden: cannot list'],
    );
    assert.equal(cluster.lists.length, 1);
  });

  it('reads the objects of a kind no resource serves (its prefetched LIST found none) as absent', async () => {
    // Prepare
    const objects = [configMap('a'), configMap('b')];
    const cluster = await clusterWith([]);
    cluster.failing.add('ConfigMap');
    cluster.failWith = () => new UnknownResourceError('v1', 'ConfigMap');
    const prefetched = prefetchLists(cluster, inventoryOf(objects.map(refOf)));

    // Act
    const live = await readLive(cluster, objects, prefetched);

    // Assess
    assert.equal(live.found.size, 0);
    assert.equal(live.errors.size, 0);
  });

  it('answers with what the cluster held when the LIST ran, as a read made then would', async () => {
    // Prepare
    const objects = [configMap('a'), configMap('b')];
    const cluster = await clusterWith([objects[0] as KubeObject]);
    const prefetched = prefetchLists(cluster, inventoryOf(objects.map(refOf)));
    await new Promise((resolve) => setImmediate(resolve));
    await cluster.apply(objects[1] as KubeObject, { fieldManager: 'test', force: true });

    // Act
    const live = await readLive(cluster, objects, prefetched);

    // Assess
    assert.deepEqual([...live.found.keys()], [objectKey(refOf(objects[0] as KubeObject))]);
  });
});

describe('applyObjects with prefetched LISTs', () => {
  it('reads the objects with the prefetched LIST and no LIST of its own', async () => {
    // Prepare
    const objects = [configMap('a'), configMap('b')];
    const cluster = await clusterWith([]);
    const prefetched = prefetchLists(cluster, inventoryOf(objects.map(refOf)));

    // Act
    const result = await applyObjects(cluster, objects, { track: 'web', prefetched });

    // Assess
    assert.deepEqual(
      result.changeset.map((entry) => entry.action),
      ['created', 'created'],
    );
    assert.deepEqual(cluster.lists, ['ConfigMap/apps']);
  });

  it('lists again after it wrote a definition: a LIST started before the write may be out of date', async () => {
    // Prepare
    const namespace: KubeObject = {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'apps' },
    };
    const objects = [namespace, configMap('a'), configMap('b')];
    const cluster = await clusterWith([]);
    const prefetched = prefetchLists(cluster, inventoryOf(objects.map(refOf)));

    // Act
    const result = await applyObjects(cluster, objects, { track: 'web', prefetched });

    // Assess
    assert.deepEqual(
      result.changeset.map((entry) => entry.action),
      ['created', 'created', 'created'],
    );
    // The prefetch's LIST, then the apply's own after the Namespace was created.
    assert.deepEqual(cluster.lists, ['ConfigMap/apps', 'ConfigMap/apps']);
  });
});
