/**
 * applyObjects when the live state cannot be listed (RBAC allows get but not
 * list): it asks per object, so objects that must not be overwritten are
 * still recognised as existing. In-memory cluster fake.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { applyObjects } from '../../src/apply/apply-objects.ts';
import type { KubeObject, ObjectRef } from '../../src/cluster/kube-object.ts';
import type { ListQuery } from '../../src/cluster/kubernetes-port.ts';
import { InMemoryCluster } from './fakes/in-memory-cluster.ts';

/** A cluster that refuses every LIST and counts GETs. */
class NoListCluster extends InMemoryCluster {
  gets = 0;
  override async list(_query: ListQuery): Promise<KubeObject[]> {
    throw new Error('configmaps is forbidden: cannot list');
  }
  override async get(ref: ObjectRef): Promise<KubeObject | undefined> {
    this.gets++;
    return super.get(ref);
  }
}

function configMap(name: string, value: string, annotations = {}): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: 'apps', annotations },
    data: { value },
  };
}

describe('applyObjects without LIST rights', () => {
  it('reads each object with a GET and keeps an existing update-strategy "never" object as it is', async () => {
    // Prepare
    const cluster = new NoListCluster();
    const never = { 'driftless.dev/update-strategy': 'never' };
    await cluster.apply(configMap('kept', 'by hand', never), {
      fieldManager: 'someone',
      force: true,
    });
    const objects = [configMap('kept', 'from Git', never), configMap('new', 'from Git')];

    // Act
    const result = await applyObjects(cluster, objects, { track: 'web' });

    // Assess
    assert.deepEqual(
      result.changeset.map((entry) => [entry.subject, entry.action]),
      [
        ['ConfigMap/apps/kept', 'skipped'],
        ['ConfigMap/apps/new', 'created'],
      ],
    );
    assert.equal(cluster.gets, 2);
    const kept = await cluster.get({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      namespace: 'apps',
      name: 'kept',
    });
    assert.equal((kept as { data?: { value?: string } } | undefined)?.data?.value, 'by hand');
  });
});
