/**
 * Drift detection and correction against the real test cluster: changes made
 * by hand (as kubectl would make them: Update operations under kubectl's
 * field managers) are found, described and reverted; what others own, what
 * the server defaults or normalises, and what rules ignore are left alone.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AppsV1Api, CoreV1Api, type KubeConfig, type V1Deployment } from '@kubernetes/client-node';
import { applyObjects } from '../../src/apply/apply-objects.ts';
import { inventoryOf, ownedKeys } from '../../src/apply/inventory.ts';
import { KubeApiCluster } from '../../src/cluster/kube-api-cluster.ts';
import { createKubeTransport, type KubeRequest } from '../../src/cluster/kube-http.ts';
import type { KubeObject } from '../../src/cluster/kube-object.ts';
import type { IgnoreRule } from '../../src/config/types.ts';
import { correctDrift, detectDrift } from '../../src/drift/index.ts';
import {
  createTestNamespace,
  sharedCluster,
  sharedClusterEndpoint,
  sharedKubeConfig,
} from '../harness/shared-cluster.ts';

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

function secret(namespace: string, name: string, value: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace },
    type: 'Opaque',
    stringData: { value },
  };
}

/** A Deployment written the way people write them: quantities in any notation, defaults left out. */
function deployment(
  namespace: string,
  name: string,
  extra: { replicas?: number } = {},
): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace },
    spec: {
      ...(extra.replicas === undefined ? {} : { replicas: extra.replicas }),
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          containers: [
            {
              name: 'web',
              image: 'nginx:1.27',
              ports: [{ containerPort: 8080 }],
              resources: {
                requests: { cpu: '1000m', memory: '1024Mi' },
                limits: { cpu: 1.5, memory: '1.5Gi' },
              },
            },
          ],
        },
      },
    },
  };
}

function service(namespace: string, name: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace },
    // protocol and targetPort left out: the server defaults them (TCP, the port).
    spec: { selector: { app: name }, ports: [{ name: 'http', port: 80 }] },
  };
}

function track(name: string, ignore: IgnoreRule[] = []): { name: string; ignore: IgnoreRule[] } {
  return { name, ignore };
}

describe('detectDrift and correctDrift', () => {
  let kc: KubeConfig;
  let cluster: KubeApiCluster;
  let core: CoreV1Api;
  let apps: AppsV1Api;
  let ns: string;

  before(async () => {
    kc = sharedKubeConfig();
    cluster = sharedCluster();
    core = kc.makeApiClient(CoreV1Api);
    apps = kc.makeApiClient(AppsV1Api);
    ns = await createTestNamespace(kc, 'drift');
  });

  after(async () => {
    await core.deleteNamespace({ name: ns });
  });

  /** Changes a ConfigMap key as `kubectl edit` does: a full update under its field manager. */
  async function editConfigMap(name: string, change: Record<string, string | null>): Promise<void> {
    const live = await core.readNamespacedConfigMap({ name, namespace: ns });
    const data = { ...live.data };
    for (const [key, value] of Object.entries(change)) {
      if (value === null) delete data[key];
      else data[key] = value;
    }
    await core.replaceNamespacedConfigMap({
      name,
      namespace: ns,
      body: { ...live, data },
      fieldManager: 'kubectl-edit',
    });
  }

  /**
   * Changes a Deployment as `kubectl edit` does: read, change, update under a
   * field manager — again on a conflict, as the controller updates it meanwhile.
   */
  async function editDeployment(
    name: string,
    change: (d: V1Deployment) => void,
    fieldManager: string,
  ): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const live = await apps.readNamespacedDeployment({ name, namespace: ns });
      change(live);
      try {
        await apps.replaceNamespacedDeployment({ name, namespace: ns, body: live, fieldManager });
        return;
      } catch (error) {
        if ((error as { code?: number }).code !== 409 || attempt >= 10) throw error;
      }
    }
  }

  it('reports a changed owned field with a patch naming its path and who changed it, then reverts it', async () => {
    // Prepare
    const t = track('drift-owned');
    const desired = [configMap(ns, 'owned', { a: '1', b: '1' })];
    await applyObjects(cluster, desired, { track: t.name });
    await editConfigMap('owned', { a: 'by-hand' });

    // Act
    const report = await detectDrift(cluster, t, desired);
    const changeset = await correctDrift(cluster, t, report, desired);
    const after = await detectDrift(cluster, t, desired);

    // Assess
    assert.deepEqual(
      report.drifted.map((d) => [d.subject, d.patch, d.changedBy]),
      [
        [
          `ConfigMap/${ns}/owned`,
          [{ op: 'replace', path: '/data/a', value: '1' }],
          ['kubectl-edit'],
        ],
      ],
    );
    assert.deepEqual(changeset, [{ subject: `ConfigMap/${ns}/owned`, action: 'configured' }]);
    const live = await core.readNamespacedConfigMap({ name: 'owned', namespace: ns });
    assert.deepEqual(live.data, { a: '1', b: '1' });
    assert.deepEqual(after.drifted, []);
  });

  it('reports a Deployment change made by another tool and corrects it', async () => {
    // Prepare
    const t = track('drift-deploy');
    const desired = [deployment(ns, 'image')];
    await applyObjects(cluster, desired, { track: t.name });
    await editDeployment(
      'image',
      (d) => (d.spec!.template.spec!.containers[0]!.image = 'nginx:by-hand'),
      'kubectl-set',
    );

    // Act
    const report = await detectDrift(cluster, t, desired);
    await correctDrift(cluster, t, report, desired);

    // Assess
    assert.deepEqual(report.drifted[0]?.patch, [
      { op: 'replace', path: '/spec/template/spec/containers/0/image', value: 'nginx:1.27' },
    ]);
    assert.deepEqual(report.drifted[0]?.changedBy, ['kubectl-set']);
    const corrected = await apps.readNamespacedDeployment({ name: 'image', namespace: ns });
    assert.equal(corrected.spec?.template.spec?.containers[0]?.image, 'nginx:1.27');
  });

  it('does not count scaling a Deployment whose replicas are not in Git as drift', async () => {
    // Prepare
    const t = track('drift-scale');
    const desired = [deployment(ns, 'scaled')];
    await applyObjects(cluster, desired, { track: t.name });
    await apps.replaceNamespacedDeploymentScale({
      name: 'scaled',
      namespace: ns,
      body: { metadata: { name: 'scaled', namespace: ns }, spec: { replicas: 4 } },
    });

    // Act
    const report = await detectDrift(cluster, t, desired);

    // Assess
    assert.deepEqual(report.drifted, []);
    assert.equal(report.suspects, 0);
    const live = await apps.readNamespacedDeployment({ name: 'scaled', namespace: ns });
    assert.equal(live.spec?.replicas, 4);
  });

  it('does not count defaulted or normalised fields as drift, nor suspect them', async () => {
    // Prepare
    const t = track('drift-normal');
    const desired = [deployment(ns, 'normal'), service(ns, 'normal')];
    await applyObjects(cluster, desired, { track: t.name });
    const live = await apps.readNamespacedDeployment({ name: 'normal', namespace: ns });
    const svc = await core.readNamespacedService({ name: 'normal', namespace: ns });

    // Act
    const report = await detectDrift(cluster, t, desired);

    // Assess: the server did rewrite what Git says...
    const resources = live.spec?.template.spec?.containers[0]?.resources;
    assert.deepEqual(resources?.requests, { cpu: '1', memory: '1Gi' });
    assert.deepEqual(resources?.limits, { cpu: '1500m', memory: '1536Mi' });
    assert.equal(live.spec?.template.spec?.containers[0]?.ports?.[0]?.protocol, 'TCP');
    assert.deepEqual(svc.spec?.ports?.[0]?.targetPort, 80);
    // ...and none of it is drift, or even worth a dry-run.
    assert.deepEqual(report.drifted, []);
    assert.equal(report.checked, 2);
    assert.equal(report.suspects, 0);
  });

  it('neither reports nor reverts ignored paths, and keeps ignored fields it still owns', async () => {
    // Prepare
    const ignore: IgnoreRule[] = [
      { paths: ['/data/b', '/data/c'], target: { kind: 'ConfigMap', name: 'ignored' } },
      { paths: ['/spec/replicas'], target: { group: 'apps', kind: 'Deployment' } },
    ];
    const t = track('drift-ignore', ignore);
    const desired = [
      configMap(ns, 'ignored', { a: '1', b: '1', c: '1' }),
      deployment(ns, 'pinned-replicas', { replicas: 2 }),
    ];
    await applyObjects(cluster, desired, { track: t.name });
    await editConfigMap('ignored', { a: 'by-hand', b: 'by-hand' });
    // Scaled as an autoscaler does (the scale subresource), and its image changed too,
    // so the correction re-applies the Deployment.
    await apps.replaceNamespacedDeploymentScale({
      name: 'pinned-replicas',
      namespace: ns,
      body: { metadata: { name: 'pinned-replicas', namespace: ns }, spec: { replicas: 5 } },
    });
    await editDeployment(
      'pinned-replicas',
      (d) => (d.spec!.template.spec!.containers[0]!.image = 'nginx:by-hand'),
      'kubectl-edit',
    );

    // Act
    const report = await detectDrift(cluster, t, desired);
    await correctDrift(cluster, t, report, desired);

    // Assess
    assert.deepEqual(
      report.drifted.map((d) => [d.subject, d.patch]),
      [
        [`ConfigMap/${ns}/ignored`, [{ op: 'replace', path: '/data/a', value: '1' }]],
        [
          `Deployment/${ns}/pinned-replicas`,
          [{ op: 'replace', path: '/spec/template/spec/containers/0/image', value: 'nginx:1.27' }],
        ],
      ],
    );
    const cm = await core.readNamespacedConfigMap({ name: 'ignored', namespace: ns });
    // a reverted; b left as changed by hand; c (ignored, still ours) not deleted by the re-apply.
    assert.deepEqual(cm.data, { a: '1', b: 'by-hand', c: '1' });
    const dep = await apps.readNamespacedDeployment({ name: 'pinned-replicas', namespace: ns });
    assert.equal(dep.spec?.replicas, 5);
    assert.equal(dep.spec?.template.spec?.containers[0]?.image, 'nginx:1.27');
  });

  it('recreates a deleted object', async () => {
    // Prepare
    const t = track('drift-missing');
    const desired = [configMap(ns, 'deleted', { a: '1' }), configMap(ns, 'kept', { a: '1' })];
    await applyObjects(cluster, desired, { track: t.name });
    await core.deleteNamespacedConfigMap({ name: 'deleted', namespace: ns });

    // Act
    const report = await detectDrift(cluster, t, desired);
    const changeset = await correctDrift(cluster, t, report, desired);

    // Assess
    assert.deepEqual(report.missing, [`ConfigMap/${ns}/deleted`]);
    assert.deepEqual(report.drifted, []);
    assert.deepEqual(changeset, [{ subject: `ConfigMap/${ns}/deleted`, action: 'created' }]);
    const live = await core.readNamespacedConfigMap({ name: 'deleted', namespace: ns });
    assert.equal(live.metadata?.labels?.['driftless.dev/track'], t.name);
  });

  it('changes nothing when only detecting', async () => {
    // Prepare
    const t = track('drift-detect');
    const desired = [configMap(ns, 'detect', { a: '1' }), configMap(ns, 'detect-gone', { a: '1' })];
    await applyObjects(cluster, desired, { track: t.name });
    await editConfigMap('detect', { a: 'by-hand' });
    await core.deleteNamespacedConfigMap({ name: 'detect-gone', namespace: ns });
    const before = await core.readNamespacedConfigMap({ name: 'detect', namespace: ns });

    // Act
    const report = await detectDrift(cluster, t, desired);

    // Assess
    assert.equal(report.drifted.length, 1);
    assert.deepEqual(report.missing, [`ConfigMap/${ns}/detect-gone`]);
    const live = await core.readNamespacedConfigMap({ name: 'detect', namespace: ns });
    assert.equal(live.metadata?.resourceVersion, before.metadata?.resourceVersion);
    assert.equal(live.data?.a, 'by-hand');
    await assert.rejects(core.readNamespacedConfigMap({ name: 'detect-gone', namespace: ns }));
  });

  it('never reports objects whose reconciliation is disabled, in Git or by hand', async () => {
    // Prepare
    const t = track('drift-disabled');
    const inGit = configMap(
      ns,
      'disabled-git',
      { a: '1' },
      { 'driftless.dev/reconcile': 'disabled' },
    );
    const byHand = configMap(ns, 'disabled-hand', { a: '1' });
    const gone = configMap(
      ns,
      'disabled-gone',
      { a: '1' },
      { 'driftless.dev/reconcile': 'disabled' },
    );
    await applyObjects(cluster, [inGit, byHand, gone], { track: t.name });
    await editConfigMap('disabled-git', { a: 'by-hand' });
    const live = await core.readNamespacedConfigMap({ name: 'disabled-hand', namespace: ns });
    await core.replaceNamespacedConfigMap({
      name: 'disabled-hand',
      namespace: ns,
      body: {
        ...live,
        metadata: { ...live.metadata, annotations: { 'driftless.dev/reconcile': 'disabled' } },
        data: { a: 'by-hand' },
      },
      fieldManager: 'kubectl-edit',
    });
    await core.deleteNamespacedConfigMap({ name: 'disabled-gone', namespace: ns });

    // Act
    const report = await detectDrift(cluster, t, [inGit, byHand, gone]);

    // Assess
    assert.deepEqual(report.drifted, []);
    assert.deepEqual(report.missing, []);
  });

  it('still checks an object whose ownership label was removed by hand', async () => {
    // Prepare
    const t = track('drift-label');
    const desired = [
      configMap(ns, 'unlabelled', { a: '1' }),
      configMap(ns, 'labelled', { a: '1' }),
    ];
    const applied = await applyObjects(cluster, desired, { track: t.name });
    const live = await core.readNamespacedConfigMap({ name: 'unlabelled', namespace: ns });
    await core.replaceNamespacedConfigMap({
      name: 'unlabelled',
      namespace: ns,
      body: { ...live, metadata: { ...live.metadata, labels: {} }, data: { a: 'by-hand' } },
      fieldManager: 'kubectl-edit',
    });

    // Act
    const report = await detectDrift(cluster, t, desired);
    // The track's inventory still holds it: without its label it is the track's all the same.
    await correctDrift(cluster, t, report, desired, {
      owned: ownedKeys(inventoryOf(applied.applied)),
    });

    // Assess
    assert.deepEqual(
      report.drifted.map((d) => d.subject),
      [`ConfigMap/${ns}/unlabelled`],
    );
    assert.deepEqual(
      [...(report.drifted[0]?.patch ?? [])].sort((x, y) => x.path.localeCompare(y.path)),
      [
        { op: 'replace', path: '/data/a', value: '1' },
        { op: 'add', path: '/metadata/labels', value: { 'driftless.dev/track': t.name } },
      ],
    );
    const corrected = await core.readNamespacedConfigMap({ name: 'unlabelled', namespace: ns });
    assert.equal(corrected.metadata?.labels?.['driftless.dev/track'], t.name);
    assert.equal(corrected.data?.a, '1');
  });

  it('never shows Secret values in a patch', async () => {
    // Prepare
    const t = track('drift-secret');
    const desired = [secret(ns, 'password', 'hunter2')];
    await applyObjects(cluster, desired, { track: t.name });
    const live = await core.readNamespacedSecret({ name: 'password', namespace: ns });
    await core.replaceNamespacedSecret({
      name: 'password',
      namespace: ns,
      body: { ...live, data: { value: Buffer.from('changed').toString('base64') } },
      fieldManager: 'kubectl-edit',
    });

    // Act
    const report = await detectDrift(cluster, t, desired);

    // Assess
    assert.equal(report.drifted.length, 1);
    const text = JSON.stringify(report);
    assert.ok(
      !text.includes('hunter2') && !text.includes(Buffer.from('hunter2').toString('base64')),
    );
    assert.ok(
      report.drifted[0]?.patch.every(
        (op) => !('value' in op) || /^\*\*\* \(hmac:[0-9a-f]{12}\)$/.test(String(op.value)),
      ),
    );
  });

  it('checks 60 objects of 3 kinds without drift in at most kinds + 10 requests', async () => {
    // Prepare
    const t = track('drift-count');
    const desired = Array.from({ length: 20 }, (_, i) => [
      configMap(ns, `count-${i}`, { i: String(i) }),
      secret(ns, `count-${i}`, String(i)),
      deployment(ns, `count-${i}`),
    ]).flat();
    const applied = await applyObjects(cluster, desired, { track: t.name });
    assert.ok(applied.changeset.every((e) => e.action === 'created'));
    const requests: KubeRequest[] = [];
    const transport = createKubeTransport(sharedClusterEndpoint());
    const counted = new KubeApiCluster((request) => {
      requests.push(request);
      return transport(request);
    });

    // Act
    const report = await detectDrift(counted, t, desired);

    // Assess
    assert.deepEqual(report.drifted, []);
    assert.deepEqual(report.missing, []);
    assert.equal(report.checked, 60);
    assert.equal(report.suspects, 0);
    const summary = requests.map((r) => `${r.method} ${r.path}`);
    console.log(`# no-op drift check of 60 objects, 3 kinds: ${requests.length} requests`, summary);
    assert.ok(requests.length <= 3 + 10, summary.join('\n'));
  });

  it('spends one dry-run per drifted object on top of the lists', async () => {
    // Prepare
    const t = track('drift-count-one');
    const desired = Array.from({ length: 10 }, (_, i) => configMap(ns, `one-${i}`, { a: '1' }));
    await applyObjects(cluster, desired, { track: t.name });
    await editConfigMap('one-3', { a: 'by-hand' });
    const requests: KubeRequest[] = [];
    const transport = createKubeTransport(sharedClusterEndpoint());
    const counted = new KubeApiCluster((request) => {
      requests.push(request);
      return transport(request);
    });

    // Act
    const report = await detectDrift(counted, t, desired);

    // Assess
    assert.deepEqual(
      report.drifted.map((d) => d.subject),
      [`ConfigMap/${ns}/one-3`],
    );
    assert.deepEqual(
      requests.map((r) => `${r.method} ${r.query?.dryRun ?? ''}`.trim()),
      ['GET', 'GET', 'GET', 'PATCH All'],
    );
  });
});
