/**
 * What `diff` says sync would do (previewChanges), against the real test
 * cluster, where it depends on the track and on the rest of the revision: a
 * forced replacement, a custom resource whose CRD the revision changes, a
 * Namespace that prune would leave in place.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { applyObjects } from '../../src/apply/apply-objects.ts';
import { inventoryOf } from '../../src/apply/inventory.ts';
import { previewChanges, type PlannedChange } from '../../src/apply/preview-changes.ts';
import type { KubeApiCluster } from '../../src/cluster/kube-api-cluster.ts';
import type { KubeObject } from '../../src/cluster/kube-object.ts';
import { parseConfig } from '../../src/config/parse-config.ts';
import type { Track } from '../../src/config/types.ts';
import { renderManifests } from '../../src/render/render-manifests.ts';
import type { RenderedObject } from '../../src/render/types.ts';
import { createTestNamespace, sharedCluster, sharedKubeConfig } from '../harness/shared-cluster.ts';

const TRACK = 'preview-test';

function trackWith(fields: string): Track {
  return parseConfig(
    `tracks: [{name: ${TRACK}, repository: https://git.example.com/app.git${fields}}]`,
    'driftless.yaml',
  ).tracks[0]!;
}

function summary(changes: readonly PlannedChange[]): Record<string, string> {
  return Object.fromEntries(
    changes.map((c) => [c.subject, 'error' in c ? `${c.action}: error` : c.action]),
  );
}

describe('previewChanges', () => {
  let kc: KubeConfig;
  let cluster: KubeApiCluster;
  let core: CoreV1Api;
  let ns: string;

  const render = async (yaml: string): Promise<RenderedObject[]> => {
    const catalog = await cluster.discover(true);
    return [
      ...renderManifests([{ path: 'objects.yaml', content: new TextEncoder().encode(yaml) }], {
        scopeOf: (group, version, kind) => catalog.scopeOf(group, version, kind),
      }).objects,
    ];
  };
  const manifests = (objects: readonly RenderedObject[]) =>
    objects.map((object) => object.manifest as unknown as KubeObject);

  before(async () => {
    kc = sharedKubeConfig();
    cluster = sharedCluster();
    core = kc.makeApiClient(CoreV1Api);
    ns = await createTestNamespace(kc, 'preview');
  });

  after(async () => {
    await core.deleteNamespace({ name: ns });
  });

  it('tells an immutable change the track replaces (force: true) as a note, not a refusal', async () => {
    // Prepare: a Job, whose template is immutable, running; the revision changes it
    const job = (image: string) =>
      `apiVersion: batch/v1\nkind: Job\nmetadata: {name: once, namespace: ${ns}}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: c, image: ${image}}]\n`;
    const running = await render(job('busybox:1'));
    const applied = await applyObjects(cluster, manifests(running), { track: TRACK });
    const changed = await render(job('busybox:2'));
    const inventory = inventoryOf(applied.applied);

    // Act
    const forced = await previewChanges(cluster, trackWith(', force: true'), changed, inventory);
    const plain = await previewChanges(cluster, trackWith(''), changed, inventory);

    // Assess
    assert.deepEqual(summary(forced), { [`Job/${ns}/once`]: 'update' });
    assert.match((forced[0] as { note?: string }).note ?? '', /deleted and created again/);
    assert.deepEqual(summary(plain), { [`Job/${ns}/once`]: 'update: error' });
  });

  it('tells a custom resource refused by the CRD the revision changes as a note, not a refusal', async () => {
    // Prepare: a CRD with a closed schema and one resource, running; the revision adds a
    // field to both
    const group = `${ns}.preview.driftless.dev`;
    const crd = (fields: string) => `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.${group}}
spec:
  group: ${group}
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties: {${fields}}
`;
    const widget = (spec: string) =>
      `apiVersion: ${group}/v1\nkind: Widget\nmetadata: {name: w1, namespace: ${ns}}\nspec: {${spec}}\n`;
    const crdSubject = `CustomResourceDefinition/widgets.${group}`;
    try {
      await applyObjects(cluster, manifests(await render(crd('size: {type: integer}'))), {
        track: TRACK,
      });
      const applied = await applyObjects(cluster, manifests(await render(widget('size: 1'))), {
        track: TRACK,
      });
      const next = await render(
        `${crd('size: {type: integer}, shape: {type: string}')}---\n${widget('size: 1, shape: round')}`,
      );

      // Act
      const changes = await previewChanges(
        cluster,
        trackWith(''),
        next,
        inventoryOf(applied.applied),
      );

      // Assess
      assert.deepEqual(summary(changes), {
        [crdSubject]: 'update',
        [`Widget/${ns}/w1`]: 'update',
      });
      const note = (changes.find((c) => c.subject === `Widget/${ns}/w1`) as { note?: string }).note;
      assert.match(note ?? '', /this revision changes its CustomResourceDefinition.*shape/);
    } finally {
      await cluster.delete({
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        name: `widgets.${group}`,
      });
    }
  });

  it('leaves out of the prunes a Namespace that holds what the track does not own', async () => {
    // Prepare
    const name = `${ns}-held`;
    const first = await applyObjects(
      cluster,
      manifests(await render(`apiVersion: v1\nkind: Namespace\nmetadata: {name: ${name}}\n`)),
      { track: TRACK },
    );
    await core.createNamespacedConfigMap({
      namespace: name,
      body: { metadata: { name: 'theirs' } },
    });
    const kept = await render(
      `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kept, namespace: ${ns}}\n`,
    );

    try {
      // Act
      const changes = await previewChanges(
        cluster,
        trackWith(''),
        kept,
        inventoryOf(first.applied),
      );

      // Assess
      assert.deepEqual(summary(changes), { [`ConfigMap/${ns}/kept`]: 'create' });
    } finally {
      await core.deleteNamespace({ name });
    }
  });
});
