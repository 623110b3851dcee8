/**
 * The apply engine against the real test cluster: staged server-side apply,
 * update strategies, ownership-checked pruning and health.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { applyObjects } from '../../src/apply/apply-objects.ts';
import { describeFailures } from '../../src/apply/changeset.ts';
import { waitForHealth } from '../../src/apply/health.ts';
import { inventoryOf, staleEntries } from '../../src/apply/inventory.ts';
import { pruneObjects } from '../../src/apply/prune.ts';
import { reconcileObjects } from '../../src/apply/reconcile-objects.ts';
import { KubeApiCluster } from '../../src/cluster/kube-api-cluster.ts';
import { refOf, subjectOf } from '../../src/cluster/kube-object.ts';
import type { KubeObject } from '../../src/cluster/kube-object.ts';
import { createTestNamespace, sharedCluster, sharedKubeConfig } from '../harness/shared-cluster.ts';

function configMap(
  namespace: string,
  name: string,
  data: Record<string, string>,
  annotations?: Record<string, string>,
): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace, ...(annotations ? { annotations } : {}) },
    data,
  };
}

function refOfNamespace(name: string) {
  return { apiVersion: 'v1', kind: 'Namespace', name };
}

function actions(
  changeset: readonly { subject: string; action: string }[],
): Record<string, string> {
  return Object.fromEntries(changeset.map((e) => [e.subject, e.action]));
}

describe('applyObjects, pruneObjects and waitForHealth', () => {
  let kc: KubeConfig;
  let cluster: KubeApiCluster;
  let core: CoreV1Api;
  let ns: string;
  const track = 'apply-test';

  before(async () => {
    kc = sharedKubeConfig();
    cluster = sharedCluster();
    core = kc.makeApiClient(CoreV1Api);
    ns = await createTestNamespace(kc, 'apply');
  });

  after(async () => {
    await core.deleteNamespace({ name: ns });
  });

  it('creates objects, then reports them unchanged, then configured after a change', async () => {
    // Prepare
    const objects = [configMap(ns, 'a', { k: '1' }), configMap(ns, 'b', { k: '1' })];

    // Act
    const first = await applyObjects(cluster, objects, { track });
    const second = await applyObjects(cluster, objects, { track });
    const third = await applyObjects(cluster, [configMap(ns, 'a', { k: '2' }), objects[1]!], {
      track,
    });

    // Assess
    assert.deepEqual(actions(first.changeset), {
      [`ConfigMap/${ns}/a`]: 'created',
      [`ConfigMap/${ns}/b`]: 'created',
    });
    assert.deepEqual(actions(second.changeset), {
      [`ConfigMap/${ns}/a`]: 'unchanged',
      [`ConfigMap/${ns}/b`]: 'unchanged',
    });
    assert.deepEqual(actions(third.changeset), {
      [`ConfigMap/${ns}/a`]: 'configured',
      [`ConfigMap/${ns}/b`]: 'unchanged',
    });
    const live = await core.readNamespacedConfigMap({ name: 'a', namespace: ns });
    assert.equal(live.data?.k, '2');
    assert.equal(live.metadata?.labels?.['driftless.dev/track'], track);
  });

  it('sends the manifest as written, binaryData included', async () => {
    // Prepare
    const object: KubeObject = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'binary', namespace: ns },
      binaryData: { blob: Buffer.from('hello').toString('base64') },
    };

    // Act
    const result = await applyObjects(cluster, [object], { track });

    // Assess
    assert.equal(result.changeset[0]?.action, 'created');
    const live = await core.readNamespacedConfigMap({ name: 'binary', namespace: ns });
    assert.equal(Buffer.from(live.binaryData?.blob ?? '', 'base64').toString(), 'hello');
  });

  it('prunes only owned objects and keeps those annotated prune: disabled', async () => {
    // Prepare
    const keep = configMap(ns, 'p-keep', { k: '1' });
    const gone = configMap(ns, 'p-gone', { k: '1' });
    const protectedOne = configMap(
      ns,
      'p-protected',
      { k: '1' },
      { 'driftless.dev/prune': 'disabled' },
    );
    const first = await applyObjects(cluster, [keep, gone, protectedOne], { track });
    const previous = inventoryOf(first.applied);
    // Someone else's object that happens to sit in our previous inventory (taken over by hand):
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: 'p-foreign' } },
    });
    const foreignEntry = { subject: `ConfigMap/${ns}/p-foreign`, apiVersion: 'v1' };

    // Act
    const second = await applyObjects(cluster, [keep], { track });
    const stale = staleEntries([...previous, foreignEntry], second.applied);
    const pruned = await pruneObjects(cluster, stale, { track });

    // Assess
    assert.equal(pruned.interrupted, undefined);
    assert.deepEqual(actions(pruned.changeset), {
      [`ConfigMap/${ns}/p-gone`]: 'deleted',
      [`ConfigMap/${ns}/p-protected`]: 'skipped',
      [`ConfigMap/${ns}/p-foreign`]: 'skipped',
    });
    const names = (await core.listNamespacedConfigMap({ namespace: ns })).items.map(
      (c) => c.metadata?.name,
    );
    assert.ok(
      names.includes('p-keep') && names.includes('p-protected') && names.includes('p-foreign'),
    );
    assert.ok(!names.includes('p-gone'));
  });

  it('leaves a Namespace in place while it holds what the track does not own, and prunes it after', async () => {
    // Prepare: a Namespace of the track, its ConfigMap, someone else's ConfigMap in it
    const name = `${ns}-cascade`;
    const namespace: KubeObject = { apiVersion: 'v1', kind: 'Namespace', metadata: { name } };
    const first = await applyObjects(cluster, [namespace, configMap(name, 'ours', { k: '1' })], {
      track,
    });
    await core.createNamespacedConfigMap({
      namespace: name,
      body: { metadata: { name: 'precious' } },
    });
    const stale = staleEntries(inventoryOf(first.applied), []);

    try {
      // Act: the revision no longer holds either
      const held = await pruneObjects(cluster, stale, { track });
      const reconciled = await reconcileObjects(
        cluster,
        {
          name: track,
          prune: true,
          wait: false,
          healthChecks: [],
          timeout: 30_000,
          adopt: false,
          force: false,
        },
        [],
        inventoryOf(first.applied),
      );

      // Assess: its own ConfigMap goes, the Namespace and the other one stay, named
      assert.deepEqual(actions(held.changeset), {
        [`Namespace/${name}`]: 'skipped',
        [`ConfigMap/${name}/ours`]: 'deleted',
      });
      assert.match(
        held.changeset.find((e) => e.subject === `Namespace/${name}`)?.reason ?? '',
        new RegExp(`would also delete 1 object .*ConfigMap/${name}/precious`),
      );
      assert.deepEqual(held.retained, [`Namespace/${name}`]);
      // Still the track's: the next prune tries again.
      assert.deepEqual(
        reconciled.inventory.map((entry) => entry.subject),
        [`Namespace/${name}`],
      );
      assert.equal((await core.readNamespace({ name })).status?.phase, 'Active');

      // Act: once the other ConfigMap is gone
      await core.deleteNamespacedConfigMap({ name: 'precious', namespace: name });
      const pruned = await pruneObjects(
        cluster,
        staleEntries(inventoryOf([refOfNamespace(name)]), []),
        {
          track,
        },
      );

      // Assess
      assert.deepEqual(actions(pruned.changeset), { [`Namespace/${name}`]: 'deleted' });
    } finally {
      await core.deleteNamespace({ name }).catch(() => undefined);
    }
  });

  it('leaves a Namespace in place while it holds an object of the track annotated prune: disabled', async () => {
    // Prepare
    const name = `${ns}-protect`;
    const namespace: KubeObject = { apiVersion: 'v1', kind: 'Namespace', metadata: { name } };
    const protectedOne = configMap(name, 'kept', { k: '1' }, { 'driftless.dev/prune': 'disabled' });
    const first = await applyObjects(cluster, [namespace, protectedOne], { track });

    try {
      // Act: both left Git
      const pruned = await pruneObjects(cluster, staleEntries(inventoryOf(first.applied), []), {
        track,
      });

      // Assess
      assert.deepEqual(actions(pruned.changeset), {
        [`Namespace/${name}`]: 'skipped',
        [`ConfigMap/${name}/kept`]: 'skipped',
      });
      assert.equal(
        (await core.readNamespacedConfigMap({ name: 'kept', namespace: name })).data?.k,
        '1',
      );
    } finally {
      await core.deleteNamespace({ name }).catch(() => undefined);
    }
  });

  it('leaves a Namespace in place while the revision still applies objects in it', async () => {
    // Prepare
    const name = `${ns}-still`;
    const namespace: KubeObject = { apiVersion: 'v1', kind: 'Namespace', metadata: { name } };
    const inside = configMap(name, 'still-in-git', { k: '1' });
    const first = await applyObjects(cluster, [namespace, inside], { track });

    try {
      // Act: the Namespace left Git, the ConfigMap in it did not
      const second = await applyObjects(cluster, [inside], { track });
      const pruned = await pruneObjects(
        cluster,
        staleEntries(inventoryOf(first.applied), second.applied),
        {
          track,
          inRevision: new Set(second.applied.map(subjectOf)),
        },
      );

      // Assess
      assert.deepEqual(actions(pruned.changeset), { [`Namespace/${name}`]: 'skipped' });
      assert.match(pruned.changeset[0]?.reason ?? '', new RegExp(`ConfigMap/${name}/still-in-git`));
      assert.equal(
        (await core.readNamespacedConfigMap({ name: 'still-in-git', namespace: name })).data?.k,
        '1',
      );
    } finally {
      await core.deleteNamespace({ name }).catch(() => undefined);
    }
  });

  it('creates but never updates objects with update strategy never or reconcile disabled', async () => {
    // Prepare
    const never = configMap(ns, 'never', { k: '1' }, { 'driftless.dev/update-strategy': 'never' });
    const frozen = configMap(ns, 'frozen', { k: '1' }, { 'driftless.dev/reconcile': 'disabled' });
    await applyObjects(cluster, [never, frozen], { track });

    // Act
    const result = await applyObjects(
      cluster,
      [
        configMap(ns, 'never', { k: '2' }, { 'faros.pusher.com/update-strategy': 'never' }),
        configMap(ns, 'frozen', { k: '2' }, { 'driftless.dev/reconcile': 'disabled' }),
      ],
      { track },
    );

    // Assess
    assert.deepEqual(actions(result.changeset), {
      [`ConfigMap/${ns}/never`]: 'skipped',
      [`ConfigMap/${ns}/frozen`]: 'skipped',
    });
    assert.equal(
      (await core.readNamespacedConfigMap({ name: 'never', namespace: ns })).data?.k,
      '1',
    );
    assert.equal(
      (await core.readNamespacedConfigMap({ name: 'frozen', namespace: ns })).data?.k,
      '1',
    );
  });

  it('fails an immutable change naming the object, and recreates it with strategy recreate', async () => {
    // Prepare
    const secret = (value: string, annotations?: Record<string, string>): KubeObject => ({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'frozen-secret', namespace: ns, ...(annotations ? { annotations } : {}) },
      immutable: true,
      stringData: { password: value },
    });
    await applyObjects(cluster, [secret('one')], { track });
    const before = await core.readNamespacedSecret({ name: 'frozen-secret', namespace: ns });

    // Act
    const refused = await applyObjects(cluster, [secret('two')], { track });
    const recreated = await applyObjects(
      cluster,
      [secret('two', { 'driftless.dev/update-strategy': 'recreate' })],
      { track },
    );

    // Assess
    const failure = refused.changeset[0];
    assert.equal(failure?.action, 'failed');
    assert.match(failure?.error ?? '', new RegExp(`^Secret/${ns}/frozen-secret: .*immutable`));
    assert.equal(refused.applied.length, 0);
    assert.equal(recreated.changeset[0]?.action, 'recreated');
    const after = await core.readNamespacedSecret({ name: 'frozen-secret', namespace: ns });
    assert.notEqual(after.metadata?.uid, before.metadata?.uid);
    assert.equal(Buffer.from(after.data?.password ?? '', 'base64').toString(), 'two');
  });

  it('replaces an object only for an immutable field: an invalid change fails and the object stays', async () => {
    // Prepare
    const recreate = { 'driftless.dev/update-strategy': 'recreate' };
    await applyObjects(cluster, [configMap(ns, 'kept', { k: '1' }, recreate)], { track });
    const before = await core.readNamespacedConfigMap({ name: 'kept', namespace: ns });
    const invalid: KubeObject = {
      ...configMap(ns, 'kept', { k: '2' }, recreate),
      metadata: {
        name: 'kept',
        namespace: ns,
        annotations: recreate,
        labels: { tier: 'bad value!' },
      },
    };

    // Act: the strategy on the object, and force on the track
    const annotated = await applyObjects(cluster, [invalid], { track });
    const forced = await applyObjects(cluster, [invalid], { track, force: true });

    // Assess
    for (const result of [annotated, forced]) {
      assert.equal(result.changeset[0]?.action, 'failed');
      assert.match(
        result.changeset[0]?.error ?? '',
        /metadata\.labels: Invalid value: "bad value!"/,
      );
      assert.doesNotMatch(result.changeset[0]?.error ?? '', /recreate|set force/);
    }
    const after = await core.readNamespacedConfigMap({ name: 'kept', namespace: ns });
    assert.equal(after.metadata?.uid, before.metadata?.uid);
    assert.equal(after.data?.k, '1');
  });

  it('keeps the running object when an immutable change comes with an invalid one, under force', async () => {
    // Prepare: a Service with a fixed clusterIP in the test cluster's range (10.0.0.0/24)
    const service = (clusterIP: string, targetPort: number): KubeObject => ({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'fixed-ip', namespace: ns },
      spec: { clusterIP, ports: [{ port: 80, targetPort }] },
    });
    const created = await applyObjects(cluster, [service('10.0.0.171', 8080)], { track });
    assert.equal(created.changeset[0]?.action, 'created', created.changeset[0]?.error);
    const before = await core.readNamespacedService({ name: 'fixed-ip', namespace: ns });

    try {
      // Act: the clusterIP changes (immutable) and the port becomes invalid
      const result = await applyObjects(cluster, [service('10.0.0.172', 70000)], {
        track,
        force: true,
      });

      // Assess: refused, not replaced
      assert.equal(result.changeset[0]?.action, 'failed');
      assert.match(result.changeset[0]?.error ?? '', /targetPort/);
      assert.doesNotMatch(result.changeset[0]?.error ?? '', /deleted to be recreated/);
      const after = await core.readNamespacedService({ name: 'fixed-ip', namespace: ns });
      assert.equal(after.metadata?.uid, before.metadata?.uid);
      assert.equal(after.spec?.clusterIP, '10.0.0.171');
    } finally {
      // Frees the address at once, for a run of the tests after this one on the same cluster.
      await core.deleteNamespacedService({ name: 'fixed-ip', namespace: ns });
    }
  });

  it('sends nothing of a revision that changes running objects when the API server refuses one of them', async () => {
    // Prepare: two ConfigMaps running; the next revision changes one and adds an invalid one
    await applyObjects(
      cluster,
      [configMap(ns, 'running-a', { k: '1' }), configMap(ns, 'running-b', { k: '1' })],
      { track },
    );
    const invalid: KubeObject = {
      ...configMap(ns, 'invalid', { k: '1' }),
      metadata: { name: 'invalid', namespace: ns, labels: { tier: 'bad value!' } },
    };

    // Act
    const result = await applyObjects(
      cluster,
      [configMap(ns, 'running-a', { k: '2' }), configMap(ns, 'running-b', { k: '1' }), invalid],
      { track },
    );

    // Assess: the refusal named, the change held back, nothing created
    assert.deepEqual(actions(result.changeset), {
      [`ConfigMap/${ns}/running-a`]: 'failed',
      [`ConfigMap/${ns}/running-b`]: 'unchanged',
      [`ConfigMap/${ns}/invalid`]: 'failed',
    });
    assert.match(
      result.changeset[2]?.error ?? '',
      new RegExp(`^ConfigMap/${ns}/invalid: .*metadata\\.labels: Invalid value: "bad value!"`),
    );
    assert.equal(result.changeset[0]?.heldBack, true);
    assert.match(describeFailures(result.changeset), /1 other object not applied for their sake$/);
    assert.equal(
      (await core.readNamespacedConfigMap({ name: 'running-a', namespace: ns })).data?.k,
      '1',
    );
    await assert.rejects(core.readNamespacedConfigMap({ name: 'invalid', namespace: ns }));
  });

  it('sends nothing of a revision when the API server refuses a change to a running definition', async () => {
    // Prepare: a Namespace and a ConfigMap in it, running; the next revision gives the
    // Namespace a label value the API server refuses and changes the ConfigMap
    const name = `${ns}-defs`;
    const namespace = (labels: Record<string, string>): KubeObject => ({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name, labels },
    });
    await applyObjects(
      cluster,
      [namespace({ tier: 'web' }), configMap(name, 'settings', { k: '1' })],
      { track },
    );

    try {
      // Act
      const result = await applyObjects(
        cluster,
        [namespace({ tier: 'bad value!' }), configMap(name, 'settings', { k: '2' })],
        { track },
      );

      // Assess: the refusal named, the ConfigMap held back, neither changed
      assert.deepEqual(actions(result.changeset), {
        [`Namespace/${name}`]: 'failed',
        [`ConfigMap/${name}/settings`]: 'failed',
      });
      assert.match(
        result.changeset[0]?.error ?? '',
        new RegExp(`^Namespace/${name}: .*metadata\\.labels: Invalid value: "bad value!"`),
      );
      assert.equal(result.changeset[1]?.heldBack, true);
      assert.equal(
        (await core.readNamespacedConfigMap({ name: 'settings', namespace: name })).data?.k,
        '1',
      );
      assert.equal((await core.readNamespace({ name })).metadata?.labels?.['tier'], 'web');
    } finally {
      await core.deleteNamespace({ name });
    }
  });

  it('sends none of the rest when the API server refuses a new definition of the revision', async () => {
    // Prepare: a ConfigMap running; the next revision changes it and brings a new Namespace
    // with a label value the API server refuses (a create: sent without a dry run)
    await applyObjects(cluster, [configMap(ns, 'beside-ns', { k: '1' })], { track });
    const refusedNamespace: KubeObject = {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: `${ns}-refused`, labels: { tier: 'bad value!' } },
    };

    // Act
    const result = await applyObjects(
      cluster,
      [configMap(ns, 'beside-ns', { k: '2' }), refusedNamespace],
      { track },
    );

    // Assess
    assert.deepEqual(actions(result.changeset), {
      [`ConfigMap/${ns}/beside-ns`]: 'failed',
      [`Namespace/${ns}-refused`]: 'failed',
    });
    assert.equal(result.changeset[0]?.heldBack, true);
    assert.match(result.changeset[0]?.error ?? '', /so the rest of it was not sent$/);
    assert.equal(
      (await core.readNamespacedConfigMap({ name: 'beside-ns', namespace: ns })).data?.k,
      '1',
    );
  });

  it('applies a CRD and its custom resources from one revision', async () => {
    // Prepare
    const crd: KubeObject = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'gadgets.apply.driftless.dev' },
      spec: {
        group: 'apply.driftless.dev',
        scope: 'Namespaced',
        names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget', listKind: 'GadgetList' },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: {
              openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
            },
          },
        ],
      },
    };
    const gadget: KubeObject = {
      apiVersion: 'apply.driftless.dev/v1',
      kind: 'Gadget',
      metadata: { name: 'g1', namespace: ns },
      spec: { size: 1 },
    };

    // Act: the custom resource comes first in the list; staging must still apply the CRD first.
    const result = await applyObjects(cluster, [gadget, crd], { track });

    // Assess
    assert.deepEqual(actions(result.changeset), {
      [`Gadget/${ns}/g1`]: 'created',
      'CustomResourceDefinition/gadgets.apply.driftless.dev': 'created',
    });
    assert.ok(
      await cluster.get({
        apiVersion: 'apply.driftless.dev/v1',
        kind: 'Gadget',
        namespace: ns,
        name: 'g1',
      }),
    );

    // Act: the CRD leaves Git while its custom resource stays, then both leave
    const crdOnly = staleEntries(inventoryOf(result.applied), [refOf(gadget)]);
    const held = await pruneObjects(cluster, crdOnly, {
      track,
      inRevision: new Set([subjectOf(refOf(gadget))]),
    });
    const pruned = await pruneObjects(cluster, staleEntries(inventoryOf(result.applied), []), {
      track,
    });

    // Assess: deleting the CRD would have deleted the custom resource the revision applies
    assert.deepEqual(actions(held.changeset), {
      'CustomResourceDefinition/gadgets.apply.driftless.dev': 'skipped',
    });
    assert.match(held.changeset[0]?.reason ?? '', new RegExp(`Gadget/${ns}/g1`));
    assert.equal(
      actions(pruned.changeset)['CustomResourceDefinition/gadgets.apply.driftless.dev'],
      'deleted',
    );
  });

  it('says an object failed, not that time ran out, when a failure ends the health wait early', async () => {
    // Prepare: a Job past its deadline at once (the Job controller fails it; no kubelet needed)
    const job: KubeObject = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'past-deadline', namespace: ns },
      spec: {
        activeDeadlineSeconds: 1,
        template: {
          spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox:1' }] },
        },
      },
    };

    // Act
    const result = await reconcileObjects(
      cluster,
      {
        name: track,
        prune: false,
        wait: true,
        healthChecks: [],
        timeout: 60_000,
        adopt: false,
        force: false,
      },
      [job],
      [],
    );

    // Assess
    assert.equal(result.outcome, 'failed');
    assert.match(
      result.error ?? '',
      new RegExp(`^not healthy: an object failed: Job/${ns}/past-deadline: `),
    );
  });

  it('reports a health timeout naming the object that is not ready', async () => {
    // Prepare: no kubelet runs in the test cluster, so pods never become available.
    const deployment: KubeObject = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'never-ready', namespace: ns },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'never-ready' } },
        template: {
          metadata: { labels: { app: 'never-ready' } },
          spec: { containers: [{ name: 'c', image: 'busybox' }] },
        },
      },
    };
    const settings = configMap(ns, 'health-settings', { k: '1' });
    const applied = await applyObjects(cluster, [deployment, settings], { track });

    // Act
    const health = await waitForHealth(cluster, applied.applied, 2_000, 200);

    // Assess
    assert.equal(health.healthy, false);
    const notReady = health.results.filter((r) => r.state !== 'Current');
    assert.deepEqual(
      notReady.map((r) => r.subject),
      [`Deployment/${ns}/never-ready`],
    );
    assert.match(notReady[0]?.message ?? '', /replicas/);
  });
});
