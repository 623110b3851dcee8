/**
 * LISTs started before the apply (read-live.ts `prefetchLists`): a sync
 * starts them from the stored inventory while it reads the artifact, and
 * those of kinds new to the track (`prefetchObjects`) once it has placed it;
 * the apply's reads then take their answers instead of asking again — until the
 * apply writes a definition (a Namespace, a CRD), after which the rest is
 * read anew. In-memory cluster fake that counts LISTs.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { applyObjects } from '../../src/apply/apply-objects.ts';
import { inventoryOf } from '../../src/apply/inventory.ts';
import { prefetchLists, prefetchObjects, readLive } from '../../src/apply/read-live.ts';
import { UnknownResourceError } from '../../src/cluster/errors.ts';
import { objectKey, type KubeObject, type ObjectRef } from '../../src/cluster/kube-object.ts';
import type { ListQuery } from '../../src/cluster/kubernetes-port.ts';
import { parseConfig } from '../../src/config/index.ts';
import type { GitSource } from '../../src/source/ports.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import { syncTrack } from '../../src/sync/sync-track.ts';
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

describe('prefetchObjects', () => {
  it('adds the LISTs of the revision’s groups the inventory did not start, and none twice', async () => {
    // Prepare: the inventory knew the ConfigMaps of "apps"; the revision adds those of "other"
    const cluster = await clusterWith([]);
    const lists = prefetchLists(cluster, inventoryOf([configMap('a'), configMap('b')].map(refOf)));
    const revision = [
      configMap('a'),
      configMap('b'),
      configMap('c', 'other'),
      configMap('d', 'other'),
      configMap('e', 'single'),
    ];

    // Act
    prefetchObjects(lists, cluster, revision);

    // Assess: one LIST per group of two or more; the single object is left to the read's GET
    assert.deepEqual(cluster.lists, ['ConfigMap/apps', 'ConfigMap/other']);
    assert.deepEqual([...lists.keys()], ['v1|ConfigMap|apps', 'v1|ConfigMap|other']);
  });

  it('gives a first sync’s apply its reads without a LIST of its own', async () => {
    // Prepare: nothing applied before, so no inventory
    const objects = [configMap('a'), configMap('b')];
    const cluster = await clusterWith([]);
    const prefetched = prefetchLists(cluster, []);
    prefetchObjects(prefetched, cluster, objects);

    // Act
    await applyObjects(cluster, objects, { track: 'web', prefetched });

    // Assess
    assert.deepEqual(cluster.lists, ['ConfigMap/apps']);
  });
});

describe('a first sync', () => {
  const dirs: string[] = [];
  after(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it('starts the LIST of its objects before it notes them as pending, and lists them once', async () => {
    // Prepare: a track that never synced (no inventory); the cluster and the state store note
    // their calls in one list
    const events: string[] = [];
    class NotingCluster extends CountingCluster {
      override list(query: ListQuery): Promise<KubeObject[]> {
        events.push(`LIST ${query.kind}/${query.namespace ?? ''}`);
        return super.list(query);
      }
    }
    class NotingStore extends FsStore {
      override write<T>(track: string, value: T, expectedVersion: string | undefined) {
        const applying = (value as { applying?: unknown[] | null }).applying;
        if (applying?.length) events.push('pending noted');
        return super.write(track, value, expectedVersion);
      }
    }
    const dir = await mkdtemp(join(tmpdir(), 'driftless-prefetch-'));
    dirs.push(dir);
    const store = new NotingStore({ path: dir });
    const cluster = new NotingCluster();
    const track = parseConfig(
      'tracks: [{name: web, repository: https://git.example.com/web.git, namespace: apps}]',
      'driftless.yaml',
    ).tracks[0]!;
    const source: GitSource = {
      resolve: async () => ({ revision: '1'.repeat(40), ref: 'refs/heads/main' }),
      readFiles: async () =>
        ['a', 'b'].map((name) => ({
          path: `${name}.yaml`,
          content: new TextEncoder().encode(
            `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ${name}}\ndata: {value: v}\n`,
          ),
        })),
    };

    // Act
    const result = await syncTrack(
      track,
      { trigger: 'manual' },
      { cluster, source, artifacts: store, state: store },
    );

    // Assess
    assert.equal(result.result, 'applied', result.error);
    assert.deepEqual(events.slice(0, 2), ['LIST ConfigMap/apps', 'pending noted']);
    assert.deepEqual(cluster.lists, ['ConfigMap/apps']);
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
