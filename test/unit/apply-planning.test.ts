/** The pure parts of apply: staging, inventory arithmetic, annotations and health judgements. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { healthOf } from '../../src/apply/health.ts';
import { inventoryOf, refOfEntry, staleEntries } from '../../src/apply/inventory.ts';
import {
  isPruneDisabled,
  isReconcileDisabled,
  updateStrategyOf,
} from '../../src/apply/ownership.ts';
import { splitStages } from '../../src/apply/stages.ts';
import type { KubeObject } from '../../src/cluster/kube-object.ts';

const object = (
  apiVersion: string,
  kind: string,
  name: string,
  namespace?: string,
  extra: Partial<KubeObject> = {},
): KubeObject => ({
  apiVersion,
  kind,
  metadata: { name, ...(namespace ? { namespace } : {}) },
  ...extra,
});

describe('splitStages', () => {
  it('puts CRDs, namespaces and cluster roles first, keeping order inside each stage', () => {
    // Prepare
    const items = [
      object('apps/v1', 'Deployment', 'web', 'apps'),
      object('apiextensions.k8s.io/v1', 'CustomResourceDefinition', 'widgets.example.com'),
      object('v1', 'ConfigMap', 'settings', 'apps'),
      object('v1', 'Namespace', 'apps'),
      object('rbac.authorization.k8s.io/v1', 'ClusterRole', 'reader'),
      object('rbac.authorization.k8s.io/v1', 'Role', 'local', 'apps'),
    ].map((o) => ({ object: o }));

    // Act
    const [first, second] = splitStages(items);

    // Assess
    assert.deepEqual(
      first.map((i) => i.object.kind),
      ['CustomResourceDefinition', 'Namespace', 'ClusterRole'],
    );
    assert.deepEqual(
      second.map((i) => i.object.kind),
      ['Deployment', 'ConfigMap', 'Role'],
    );
  });

  it('does not stage a kind named Namespace from another group first', () => {
    // Act
    const [first] = splitStages([{ object: object('example.com/v1', 'Namespace', 'x') }]);

    // Assess
    assert.equal(first.length, 0);
  });
});

describe('inventory', () => {
  it('round-trips subjects of namespaced and cluster-scoped objects', () => {
    // Act
    const entries = inventoryOf([
      { apiVersion: 'v1', kind: 'Namespace', name: 'apps' },
      { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'apps', name: 'web' },
    ]);

    // Assess
    assert.deepEqual(entries, [
      { subject: 'Deployment/apps/web', apiVersion: 'apps/v1' },
      { subject: 'Namespace/apps', apiVersion: 'v1' },
    ]);
    assert.deepEqual(refOfEntry(entries[0]!), {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      namespace: 'apps',
      name: 'web',
    });
    assert.deepEqual(refOfEntry(entries[1]!), {
      apiVersion: 'v1',
      kind: 'Namespace',
      name: 'apps',
    });
  });

  it('finds stale entries by group, kind, namespace and name, not by version', () => {
    // Prepare
    const previous = [
      { subject: 'Deployment/apps/web', apiVersion: 'apps/v1beta2' },
      { subject: 'ConfigMap/apps/old', apiVersion: 'v1' },
      { subject: 'ConfigMap/other/old', apiVersion: 'v1' },
    ];

    // Act
    const stale = staleEntries(previous, [
      { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'apps', name: 'web' },
      { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'other', name: 'old' },
    ]);

    // Assess
    assert.deepEqual(
      stale.map((e) => e.subject),
      ['ConfigMap/apps/old'],
    );
  });

  it('refuses a malformed inventory subject', () => {
    assert.throws(() => refOfEntry({ subject: 'just-a-name', apiVersion: 'v1' }), /Kind\/name/);
  });
});

describe('ownership annotations', () => {
  const annotated = (annotations: Record<string, string>): KubeObject =>
    object('v1', 'ConfigMap', 'c', 'ns', { metadata: { name: 'c', namespace: 'ns', annotations } });

  it('reads the update strategy from driftless and Faros annotations, defaulting to update', () => {
    assert.equal(updateStrategyOf(annotated({})), 'update');
    assert.equal(
      updateStrategyOf(annotated({ 'driftless.dev/update-strategy': 'recreate' })),
      'recreate',
    );
    assert.equal(
      updateStrategyOf(annotated({ 'faros.pusher.com/update-strategy': 'never' })),
      'never',
    );
  });

  it('refuses an unknown strategy, naming the annotation', () => {
    assert.throws(
      () => updateStrategyOf(annotated({ 'driftless.dev/update-strategy': 'sometimes' })),
      /driftless\.dev\/update-strategy: "sometimes"/,
    );
  });

  it('recognises prune and reconcile opt-outs', () => {
    assert.equal(isPruneDisabled(annotated({ 'driftless.dev/prune': 'disabled' })), true);
    assert.equal(isPruneDisabled(annotated({ 'driftless.dev/prune': 'enabled' })), false);
    assert.equal(isReconcileDisabled(annotated({ 'driftless.dev/reconcile': 'disabled' })), true);
  });
});

describe('healthOf', () => {
  const deployment = (status: Record<string, unknown>, generation = 1): KubeObject => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'apps', generation },
    spec: { replicas: 2 },
    status: { observedGeneration: 1, ...status },
  });

  it('judges a Deployment by updated and available replicas', () => {
    assert.equal(
      healthOf(deployment({ replicas: 2, updatedReplicas: 2, availableReplicas: 2 })).state,
      'Current',
    );
    const waiting = healthOf(deployment({ replicas: 2, updatedReplicas: 2, availableReplicas: 1 }));
    assert.equal(waiting.state, 'InProgress');
    assert.match(waiting.message, /1 of 2 replicas available/);
  });

  it('waits for the controller to observe a new generation', () => {
    const judged = healthOf(
      deployment({ replicas: 2, updatedReplicas: 2, availableReplicas: 2 }, 2),
    );
    assert.equal(judged.state, 'InProgress');
    assert.match(judged.message, /generation 2/);
  });

  it('fails a Deployment past its progress deadline', () => {
    const judged = healthOf(
      deployment({
        conditions: [
          {
            type: 'Progressing',
            status: 'False',
            reason: 'ProgressDeadlineExceeded',
            message: 'too slow',
          },
        ],
      }),
    );
    assert.deepEqual(judged, { state: 'Failed', message: 'too slow' });
  });

  it('judges Jobs, PVCs, LoadBalancer Services and Ready conditions', () => {
    const job = (conditions: unknown[]): KubeObject =>
      object('batch/v1', 'Job', 'j', 'ns', { status: { conditions } });
    assert.equal(healthOf(job([{ type: 'Complete', status: 'True' }])).state, 'Current');
    assert.equal(
      healthOf(job([{ type: 'Failed', status: 'True', message: 'backoff' }])).state,
      'Failed',
    );
    assert.equal(
      healthOf(object('v1', 'PersistentVolumeClaim', 'p', 'ns', { status: { phase: 'Pending' } }))
        .state,
      'InProgress',
    );
    const lb = (ingress: unknown[]): KubeObject =>
      object('v1', 'Service', 's', 'ns', {
        spec: { type: 'LoadBalancer' },
        status: { loadBalancer: { ingress } },
      });
    assert.equal(healthOf(lb([])).state, 'InProgress');
    assert.equal(healthOf(lb([{ ip: '1.2.3.4' }])).state, 'Current');
    const custom = (status: string): KubeObject =>
      object('example.com/v1', 'Widget', 'w', 'ns', {
        status: { conditions: [{ type: 'Ready', status, message: 'warming up' }] },
      });
    assert.equal(healthOf(custom('True')).state, 'Current');
    assert.match(healthOf(custom('False')).message, /warming up/);
  });
});
