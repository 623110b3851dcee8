/**
 * waitForHealth with the copies an apply just saw: what is Current in its
 * copy costs no request; anything else is read from the cluster, so nothing
 * is judged not ready or failed from a copy. In-memory cluster fake.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { applyObjects } from '../../src/apply/apply-objects.ts';
import { describeUnhealthy, waitForHealth } from '../../src/apply/health.ts';
import { KubernetesApiError, UnknownResourceError } from '../../src/cluster/errors.ts';
import {
  objectKey,
  refOf,
  type KubeObject,
  type ObjectRef,
} from '../../src/cluster/kube-object.ts';
import { InMemoryCluster } from './fakes/in-memory-cluster.ts';

/** Counts GETs. */
class CountingCluster extends InMemoryCluster {
  gets = 0;
  override async get(ref: ObjectRef): Promise<KubeObject | undefined> {
    this.gets++;
    return super.get(ref);
  }
}

const configMap = (name: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'apps' },
  data: { value: name },
});

/** A Deployment whose status says `available` of 2 replicas are available. */
const deployment = (available: number): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace: 'apps', generation: 1 },
  spec: { replicas: 2 },
  status: { observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: available },
});

describe('waitForHealth with observed copies', () => {
  it('judges Current copies without a request and reads the others', async () => {
    // Prepare
    const cluster = new CountingCluster();
    await cluster.apply(deployment(2), { fieldManager: 'controller', force: true });
    const ready = configMap('ready');
    const stale = deployment(0); // the copy says not ready; the cluster says ready
    const observed = new Map([
      [objectKey(refOf(ready)), ready],
      [objectKey(refOf(stale)), stale],
    ]);

    // Act
    const health = await waitForHealth(
      cluster,
      [refOf(ready), refOf(stale)],
      1_000,
      10,
      undefined,
      undefined,
      observed,
    );

    // Assess
    assert.equal(health.healthy, true);
    assert.equal(cluster.gets, 1, 'only the Deployment, not Current in its copy, is read');
  });

  it('reads an object again on later polls, not from its copy', async () => {
    // Prepare: the copy is Current but the object is gone by the second poll
    const cluster = new CountingCluster();
    const missing = configMap('missing');
    const observed = new Map([[objectKey(refOf(missing)), missing]]);
    const notReady = deployment(0);
    await cluster.apply(notReady, { fieldManager: 'controller', force: true });

    // Act
    const health = await waitForHealth(
      cluster,
      [refOf(missing), refOf(notReady)],
      50,
      10,
      undefined,
      undefined,
      observed,
    );

    // Assess
    assert.equal(health.healthy, false);
    const states = Object.fromEntries(health.results.map((r) => [r.subject, r.state]));
    assert.equal(states['ConfigMap/apps/missing'], 'NotFound');
    assert.equal(states['Deployment/apps/web'], 'InProgress');
  });

  it('gets the apply answers and LIST copies from applyObjects', async () => {
    // Prepare: one object exists and is unchanged, one is new
    const cluster = new CountingCluster();
    await applyObjects(cluster, [configMap('old')], { track: 'web' });
    cluster.gets = 0;

    // Act
    const result = await applyObjects(cluster, [configMap('old'), configMap('new')], {
      track: 'web',
    });
    const health = await waitForHealth(
      cluster,
      result.applied,
      1_000,
      10,
      undefined,
      undefined,
      result.observed,
    );

    // Assess
    assert.deepEqual(
      result.changeset.map((entry) => entry.action),
      ['unchanged', 'created'],
    );
    assert.deepEqual([...result.observed.keys()].sort(), result.applied.map(objectKey).sort());
    assert.equal(health.healthy, true);
    assert.equal(cluster.gets, 0);
  });

  it('fails at once, naming the object once, when a check can never be answered', async () => {
    // Prepare: reading the object is refused as malformed (no namespace for a namespaced kind)
    const cluster = new (class extends InMemoryCluster {
      override async get(ref: ObjectRef): Promise<KubeObject | undefined> {
        throw new KubernetesApiError(`${ref.kind}/${ref.name}`, {
          code: 400,
          message: `${ref.kind} is namespaced but no namespace was given`,
        });
      }
    })();
    const unnamespaced: ObjectRef = { apiVersion: 'v1', kind: 'ConfigMap', name: 'base' };

    // Act
    const health = await waitForHealth(cluster, [unnamespaced], 2_000, 10);

    // Assess: Failed (judged), not InProgress (waited out)
    assert.equal(health.results[0]?.state, 'Failed');
    assert.equal(health.healthy, false);
    assert.equal(
      describeUnhealthy(health),
      'ConfigMap/base: ConfigMap is namespaced but no namespace was given',
    );
  });
});

describe('waitForHealth of a kind the cluster does not serve', () => {
  it('names the object once in its message', async () => {
    // Prepare: the cluster fails the read as the real one does, the error naming the subject
    const cluster = new (class extends InMemoryCluster {
      override async get(ref: ObjectRef): Promise<KubeObject | undefined> {
        throw new UnknownResourceError(ref.apiVersion, ref.kind, 'Gizmo/apps/g');
      }
    })();
    const gizmo = { apiVersion: 'example.com/v1', kind: 'Gizmo', namespace: 'apps', name: 'g' };

    // Act
    const health = await waitForHealth(cluster, [gizmo], 30, 10);

    // Assess
    assert.equal(
      describeUnhealthy(health),
      'Gizmo/apps/g: no API resource serves example.com/v1 Gizmo; is its CRD installed?',
    );
  });
});
