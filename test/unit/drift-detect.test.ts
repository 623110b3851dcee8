/**
 * detectDrift's use of the cluster, with a fake port: what it asks, how
 * often, and how it files what it cannot read. Behaviour against a real
 * server is in test/integration/drift.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ResourceCatalog } from '../../src/cluster/discovery.ts';
import { UnknownResourceError } from '../../src/cluster/errors.ts';
import type { KubeObject, ObjectRef } from '../../src/cluster/kube-object.ts';
import type {
  ApplyOptions,
  ApplyResult,
  KubernetesPort,
  ListQuery,
} from '../../src/cluster/kubernetes-port.ts';
import { detectDrift } from '../../src/drift/detect-drift.ts';

function configMap(namespace: string, name: string, a: string): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data: { a } };
}

/** As the server would keep `configMap(...)` after our apply with the track label. */
function applied(object: KubeObject, track: string): KubeObject {
  return {
    ...object,
    metadata: {
      ...object.metadata,
      labels: { 'driftless.dev/track': track },
      managedFields: [
        {
          manager: 'driftless',
          operation: 'Apply',
          fieldsV1: {
            'f:metadata': { 'f:labels': { 'f:driftless.dev/track': {} } },
            'f:data': { 'f:a': {} },
          },
        },
      ],
    },
  };
}

class FakeCluster implements KubernetesPort {
  readonly calls: string[] = [];

  constructor(
    private readonly objects: KubeObject[],
    private readonly failList?: Error,
  ) {}

  serverVersion(): Promise<string> {
    return Promise.resolve('v1.36.3');
  }

  discover(): Promise<ResourceCatalog> {
    return Promise.resolve(new ResourceCatalog([]));
  }

  apply(object: KubeObject, options: ApplyOptions): Promise<ApplyResult> {
    this.calls.push(`apply ${object.metadata.name} dryRun=${options.dryRun}`);
    return Promise.resolve({ object: applied(object, 't'), created: false });
  }

  get(ref: ObjectRef): Promise<KubeObject | undefined> {
    this.calls.push(`get ${ref.kind} ${ref.namespace}/${ref.name}`);
    if (this.failList) return Promise.reject(this.failList);
    return Promise.resolve(
      this.objects.find(
        (o) =>
          o.kind === ref.kind &&
          o.metadata.name === ref.name &&
          o.metadata.namespace === ref.namespace,
      ),
    );
  }

  list(query: ListQuery): Promise<KubeObject[]> {
    this.calls.push(`list ${query.kind} ${query.namespace} ${query.labelSelector ?? ''}`.trim());
    if (this.failList) return Promise.reject(this.failList);
    return Promise.resolve(
      this.objects.filter((o) => o.kind === query.kind && o.metadata.namespace === query.namespace),
    );
  }

  delete(): Promise<'deleted' | 'not-found'> {
    throw new Error('drift detection never deletes');
  }
}

const track = { name: 't', ignore: [] };

describe('detectDrift with a fake cluster', () => {
  it('lists each kind and namespace once, without a label selector, and dry-runs only suspects', async () => {
    // Prepare
    const desired = [
      configMap('a', 'one', '1'),
      configMap('a', 'two', '1'),
      configMap('a', 'gone', '1'),
      configMap('b', 'only', '1'),
    ];
    const live = [
      applied(desired[0]!, 't'),
      { ...applied(desired[1]!, 't'), data: { a: 'changed' } },
      applied(desired[3]!, 't'),
    ];
    const cluster = new FakeCluster(live);

    // Act
    const report = await detectDrift(cluster, track, desired);

    // Assess
    assert.deepEqual(cluster.calls.sort(), [
      'apply two dryRun=true',
      'get ConfigMap b/only',
      'list ConfigMap a',
    ]);
    assert.deepEqual(report.missing, ['ConfigMap/a/gone']);
    assert.deepEqual(
      report.drifted.map((d) => [d.subject, d.patch]),
      [['ConfigMap/a/two', [{ op: 'replace', path: '/data/a', value: '1' }]]],
    );
    assert.equal(report.checked, 3);
    assert.equal(report.suspects, 1);
  });

  it('files objects it cannot read as errors, and those of an unserved kind as missing', async () => {
    // Prepare
    const desired = [configMap('a', 'one', '1'), configMap('a', 'two', '1')];

    // Act
    const forbidden = await detectDrift(
      new FakeCluster([], new Error('forbidden')),
      track,
      desired,
    );
    const unknown = await detectDrift(
      new FakeCluster([], new UnknownResourceError('v1', 'ConfigMap')),
      track,
      desired,
    );

    // Assess
    assert.deepEqual(forbidden.errors, [
      { subject: 'ConfigMap/a/one', error: 'ConfigMap/a/one: forbidden' },
      { subject: 'ConfigMap/a/two', error: 'ConfigMap/a/two: forbidden' },
    ]);
    assert.deepEqual(unknown.missing, ['ConfigMap/a/one', 'ConfigMap/a/two']);
  });

  it('accepts rendered objects', async () => {
    // Prepare
    const object = configMap('a', 'one', '1');
    const cluster = new FakeCluster([applied(object, 't')]);

    // Act
    const report = await detectDrift(cluster, track, [
      {
        manifest: object as unknown as Record<string, unknown>,
        group: '',
        version: 'v1',
        kind: 'ConfigMap',
        name: 'one',
        namespace: 'a',
        subject: 'ConfigMap/a/one',
        source: { file: 'cm.yaml', line: 1 },
      },
    ]);

    // Assess
    assert.equal(report.checked, 1);
    assert.equal(report.suspects, 0);
  });
});
