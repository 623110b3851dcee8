/**
 * Proves the test substrate is a real Kubernetes: server-side apply with
 * managedFields, CRDs, and the controller-manager's garbage collection and
 * namespace deletion.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubernetesObjectApi,
  PatchStrategy,
  VersionApi,
  type KubeConfig,
  type KubernetesObject,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { createTestNamespace, sharedKubeConfig } from '../harness/shared-cluster.ts';
import { eventuallyValue } from '../harness/eventually.ts';

function isNotFound(error: unknown): boolean {
  return (error as { code?: number }).code === 404;
}

describe('the test cluster', () => {
  let kc: KubeConfig;
  let objects: KubernetesObjectApi;
  let namespace: string;

  before(async () => {
    kc = sharedKubeConfig();
    objects = KubernetesObjectApi.makeApiClient(kc);
    namespace = await createTestNamespace(kc, 'substrate');
  });

  after(async () => {
    await kc.makeApiClient(CoreV1Api).deleteNamespace({ name: namespace });
  });

  it('reports a v1.36 server', async () => {
    // Act
    const version = await kc.makeApiClient(VersionApi).getCode();

    // Assess
    assert.equal(version.major, '1');
    assert.equal(version.minor, '36');
    assert.match(version.gitVersion, /^v1\.36\.\d+$/);
  });

  it('server-side applies a Deployment and records driftless as its field manager', async () => {
    // Prepare
    const deployment = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace, labels: { 'driftless.dev/track': 'substrate' } },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: { containers: [{ name: 'web', image: 'nginx:1.27' }] },
        },
      },
    };

    // Act
    await objects.patch(
      deployment,
      undefined,
      undefined,
      'driftless',
      true,
      PatchStrategy.ServerSideApply,
    );
    const stored = await kc
      .makeApiClient(AppsV1Api)
      .readNamespacedDeployment({ name: 'web', namespace });

    // Assess
    const entry = stored.metadata?.managedFields?.find((f) => f.manager === 'driftless');
    assert.ok(
      entry,
      `no managedFields entry for driftless: ${JSON.stringify(stored.metadata?.managedFields)}`,
    );
    assert.equal(entry.operation, 'Apply');
    const owned = entry.fieldsV1 as { 'f:spec'?: Record<string, unknown> };
    assert.ok(owned['f:spec']?.['f:replicas'], 'driftless does not own spec.replicas');
    // Defaulting happened on the server, so the strategy is set though we sent none.
    assert.equal(stored.spec?.strategy?.type, 'RollingUpdate');
  });

  it('runs the deployment controller, which creates a ReplicaSet', async () => {
    // Act
    const replicaSet = await eventuallyValue('a ReplicaSet owned by Deployment web', async () => {
      const list = await kc.makeApiClient(AppsV1Api).listNamespacedReplicaSet({ namespace });
      return list.items.find((rs) => rs.metadata?.ownerReferences?.some((o) => o.name === 'web'));
    });

    // Assess
    assert.equal(replicaSet.spec?.replicas, 2);
  });

  it('round-trips a CustomResourceDefinition and a custom resource', async () => {
    // Prepare
    const crd: V1CustomResourceDefinition = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'widgets.substrate.driftless.dev' },
      spec: {
        group: 'substrate.driftless.dev',
        scope: 'Namespaced',
        names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: {
              openAPIV3Schema: {
                type: 'object',
                properties: { spec: { type: 'object', properties: { size: { type: 'integer' } } } },
              },
            },
          },
        ],
      },
    };
    await objects.patch(
      crd,
      undefined,
      undefined,
      'driftless',
      true,
      PatchStrategy.ServerSideApply,
    );
    await eventuallyValue('the Widget CRD to be Established', async () => {
      const read = (await objects.read({
        ...crd,
        metadata: { name: crd.metadata!.name! },
      })) as V1CustomResourceDefinition;
      return read.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')
        ? true
        : undefined;
    });
    const widget: KubernetesObject & { spec: { size: number } } = {
      apiVersion: 'substrate.driftless.dev/v1',
      kind: 'Widget',
      metadata: { name: 'small', namespace },
      spec: { size: 3 },
    };

    // Act: discovery may lag the Established condition by a moment.
    await eventuallyValue('the Widget to be applied', () =>
      objects.patch(widget, undefined, undefined, 'driftless', true, PatchStrategy.ServerSideApply),
    );
    const read = (await kc.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({
      group: 'substrate.driftless.dev',
      version: 'v1',
      namespace,
      plural: 'widgets',
      name: 'small',
    })) as { spec: { size: number }; metadata: { managedFields?: { manager: string }[] } };

    // Assess
    assert.equal(read.spec.size, 3);
    assert.ok(read.metadata.managedFields?.some((f) => f.manager === 'driftless'));

    await objects.delete({ ...crd, metadata: { name: crd.metadata!.name! } });
  });

  it('garbage-collects dependents of a deleted owner', async () => {
    // Prepare
    const core = kc.makeApiClient(CoreV1Api);
    const owner = await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: 'owner' } },
    });
    await core.createNamespacedConfigMap({
      namespace,
      body: {
        metadata: {
          name: 'dependent',
          ownerReferences: [
            { apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata!.uid! },
          ],
        },
      },
    });

    // Act
    await core.deleteNamespacedConfigMap({
      name: 'owner',
      namespace,
      propagationPolicy: 'Background',
    });

    // Assess
    await eventuallyValue('the dependent ConfigMap to be garbage-collected', async () => {
      try {
        await core.readNamespacedConfigMap({ name: 'dependent', namespace });
        return undefined;
      } catch (error) {
        return isNotFound(error) ? true : undefined;
      }
    });
  });

  it('completes a namespace deletion, removing what was in it', async () => {
    // Prepare
    const core = kc.makeApiClient(CoreV1Api);
    const doomed = await createTestNamespace(kc, 'doomed');
    await core.createNamespacedConfigMap({
      namespace: doomed,
      body: { metadata: { name: 'inside' } },
    });

    // Act
    await core.deleteNamespace({ name: doomed });

    // Assess: without the namespace controller it would stay Terminating forever.
    await eventuallyValue(`namespace ${doomed} to be gone`, async () => {
      try {
        await core.readNamespace({ name: doomed });
        return undefined;
      } catch (error) {
        return isNotFound(error) ? true : undefined;
      }
    });
  });
});
