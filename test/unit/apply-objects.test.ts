/**
 * applyObjects when the live state cannot be listed (RBAC allows get but not
 * list): it asks per object, so objects that must not be overwritten are
 * still recognised as existing; and how many applies it keeps in flight.
 * In-memory cluster fake.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { APPLY_CONCURRENCY, applyObjects } from '../../src/apply/apply-objects.ts';
import type { KubeObject, ObjectRef } from '../../src/cluster/kube-object.ts';
import type { ApplyOptions, ApplyResult, ListQuery } from '../../src/cluster/kubernetes-port.ts';
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

/** A cluster whose applies answer only when released, and which counts those waiting. */
class HeldApplyCluster extends InMemoryCluster {
  inFlight = 0;
  peak = 0;
  private readonly waiting: (() => void)[] = [];
  override async apply(object: KubeObject, options: ApplyOptions): Promise<ApplyResult> {
    this.inFlight++;
    this.peak = Math.max(this.peak, this.inFlight);
    await new Promise<void>((release) => this.waiting.push(release));
    this.inFlight--;
    return super.apply(object, options);
  }
  /** Answers the applies waiting now, once each turn, until `done` settles. */
  async answerUntil(done: Promise<unknown>): Promise<void> {
    let finished = false;
    void done.finally(() => (finished = true));
    while (!finished) {
      for (const release of this.waiting.splice(0)) release();
      await new Promise((tick) => setImmediate(tick));
    }
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

describe('applyObjects in flight', () => {
  it(`keeps ${APPLY_CONCURRENCY} applies in flight, and no more, while objects are left`, async () => {
    // Prepare: more objects than the limit, every answer held until the test releases it.
    const cluster = new HeldApplyCluster();
    const objects = Array.from({ length: APPLY_CONCURRENCY * 2 + 7 }, (_, index) =>
      configMap(`cm-${index}`, 'from Git'),
    );

    // Act
    const applying = applyObjects(cluster, objects, { track: 'web' });
    await cluster.answerUntil(applying);
    const result = await applying;

    // Assess
    assert.equal(cluster.peak, APPLY_CONCURRENCY);
    assert.equal(
      result.changeset.filter((entry) => entry.action === 'created').length,
      objects.length,
    );
  });
});
