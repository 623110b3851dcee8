/**
 * The pure parts of drift that read server-side apply field sets: projection,
 * differing paths, ownership, suspects and the re-apply plan.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '../../src/cluster/kube-object.ts';
import { differingPaths, ownsPath, project, type FieldSet } from '../../src/apply/field-set.ts';
import { ownsManifestField, suspectReason } from '../../src/apply/manifest-fields.ts';
import { planApply } from '../../src/drift/plan-apply.ts';

/** Our field set for the manifest below, as the server records it. */
const ours: FieldSet = {
  'f:metadata': { 'f:labels': { 'f:driftless.dev/track': {} } },
  'f:spec': {
    'f:selector': {},
    'f:template': {
      'f:spec': {
        'f:containers': {
          'k:{"name":"web"}': {
            '.': {},
            'f:name': {},
            'f:image': {},
            'f:args': {},
            'f:ports': {
              'k:{"containerPort":8080,"protocol":"TCP"}': { '.': {}, 'f:containerPort': {} },
            },
            'f:resources': { 'f:requests': { 'f:cpu': {}, 'f:memory': {} } },
          },
        },
      },
    },
  },
};

const manifest = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace: 'apps', labels: { 'driftless.dev/track': 't' } },
  spec: {
    selector: { matchLabels: { app: 'web' } },
    template: {
      spec: {
        containers: [
          {
            name: 'web',
            image: 'nginx:1',
            args: ['a', 'b'],
            ports: [{ containerPort: 8080 }],
            resources: { requests: { cpu: '1000m', memory: '1024Mi' } },
          },
        ],
      },
    },
  },
};

/** The same object as the server keeps it: normalised, defaulted, with others' fields. */
function liveObject(change: (live: typeof manifestLive) => void = () => {}): KubeObject {
  const live = structuredClone(manifestLive);
  change(live);
  return live as unknown as KubeObject;
}

const manifestLive = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: {
    name: 'web',
    namespace: 'apps',
    labels: { 'driftless.dev/track': 't' },
    managedFields: [{ manager: 'driftless', operation: 'Apply', fieldsV1: ours }] as unknown[],
  },
  spec: {
    replicas: 3,
    selector: { matchLabels: { app: 'web' } },
    template: {
      spec: {
        containers: [
          {
            name: 'sidecar',
            image: 'envoy',
          },
          {
            name: 'web',
            image: 'nginx:1',
            args: ['a', 'b'],
            ports: [{ containerPort: 8080, protocol: 'TCP' }],
            resources: { requests: { cpu: '1', memory: '1Gi' } },
            imagePullPolicy: 'IfNotPresent',
          },
        ],
      },
    },
  },
  status: { replicas: 3 },
};

describe('field sets', () => {
  it('project keeps only the fields the set names, list elements by key', () => {
    // Act
    const projected = project(liveObject(), ours) as typeof manifestLive;

    // Assess
    assert.deepEqual(projected, {
      metadata: { labels: { 'driftless.dev/track': 't' } },
      spec: {
        selector: { matchLabels: { app: 'web' } },
        template: {
          spec: {
            containers: [
              {
                name: 'web',
                image: 'nginx:1',
                args: ['a', 'b'],
                ports: [{ containerPort: 8080 }],
                resources: { requests: { cpu: '1', memory: '1Gi' } },
              },
            ],
          },
        },
      },
    });
  });

  it('differingPaths names the owned leaves that differ, nothing else', () => {
    // Prepare
    const before = liveObject();
    const after = liveObject((l) => {
      l.spec.template.spec.containers[1]!.image = 'nginx:2';
      l.spec.replicas = 7;
    });

    // Act
    const paths = differingPaths(ours, before, after);

    // Assess
    assert.deepEqual(paths, [
      ['f:spec', 'f:template', 'f:spec', 'f:containers', 'k:{"name":"web"}', 'f:image'],
    ]);
  });

  it('ownsPath counts the path, an atomic ancestor and parts below', () => {
    // Assess
    assert.equal(ownsPath(ours, ['f:spec', 'f:selector', 'f:matchLabels', 'f:app']), true);
    assert.equal(ownsPath(ours, ['f:spec', 'f:template']), true);
    assert.equal(ownsPath(ours, ['f:spec', 'f:replicas']), false);
    assert.equal(
      ownsPath(ours, [
        'f:spec',
        'f:template',
        'f:spec',
        'f:containers',
        'k:{"name":"web"}',
        'f:tty',
      ]),
      false,
    );
  });
});

describe('suspectReason', () => {
  it('finds nothing when the server only normalised, defaulted and added fields', () => {
    // Act
    const reason = suspectReason(manifest, ours, liveObject(), []);

    // Assess
    assert.equal(reason, undefined);
  });

  it('suspects a field no longer owned', () => {
    // Prepare
    const set = structuredClone(ours);
    delete set['f:spec']!['f:template']!['f:spec']!['f:containers']!['k:{"name":"web"}']![
      'f:image'
    ];

    // Act
    const reason = suspectReason(manifest, set, liveObject(), []);

    // Assess
    assert.equal(reason, '/spec/template/spec/containers/0/image: not owned by driftless');
  });

  it('suspects a value that differs although still owned', () => {
    // Act
    const reason = suspectReason(
      manifest,
      ours,
      liveObject((l) => (l.spec.template.spec.containers[1]!.args = ['a'])),
      [],
    );

    // Assess
    assert.equal(reason, '/spec/template/spec/containers/0/args: value differs');
  });

  it('suspects an object without our entry, and a removed label', () => {
    // Assess
    assert.equal(suspectReason(manifest, undefined, liveObject(), []), '/: not owned by driftless');
    assert.match(
      suspectReason(
        manifest,
        { 'f:spec': ours['f:spec'] as FieldSet },
        liveObject((l) => (l.metadata.labels = {} as never)),
        [],
      ) ?? '',
      /^\/metadata: not owned/,
    );
  });

  it('skips ignored paths', () => {
    // Act
    const reason = suspectReason(
      manifest,
      ours,
      liveObject((l) => (l.spec.template.spec.containers[1]!.args = ['a'])),
      ['/spec/template/spec/containers/0/args'],
    );

    // Assess
    assert.equal(reason, undefined);
  });
});

describe('planApply', () => {
  const taken: FieldSet = structuredClone(ours);
  delete taken['f:spec']!['f:template']!['f:spec']!['f:containers']!['k:{"name":"web"}']![
    'f:image'
  ];

  it('leaves out ignored fields another manager took, keeps those still ours', () => {
    // Prepare
    const live = liveObject(
      (l) =>
        (l.metadata.managedFields = [
          { manager: 'driftless', operation: 'Apply', fieldsV1: taken },
        ]),
    );
    const desired = manifest as unknown as KubeObject;

    // Act
    const plan = planApply(desired, live, [
      '/spec/template/spec/containers/0/image',
      '/spec/template/spec/containers/0/args',
    ]) as unknown as typeof manifest;

    // Assess
    const container = plan.spec.template.spec.containers[0]!;
    assert.equal('image' in container, false);
    assert.deepEqual(container.args, ['a', 'b']);
    assert.equal(
      ownsManifestField(desired, taken, ['spec', 'template', 'spec', 'containers', '0', 'args']),
      true,
    );
    assert.equal(
      ownsManifestField(desired, taken, ['spec', 'selector', 'matchLabels', 'app']),
      true,
    );
  });

  it('never leaves out the name or the ownership label, and drops emptied maps', () => {
    // Prepare
    const live = liveObject((l) => (l.metadata.managedFields = []));
    const desired = manifest as unknown as KubeObject;

    // Act
    const plan = planApply(desired, live, [
      '/metadata',
      '/spec/template/spec/containers/0/resources',
    ]);

    // Assess
    assert.equal(plan.metadata.name, 'web');
    assert.deepEqual(plan.metadata.labels, { 'driftless.dev/track': 't' });
    const container = (plan as unknown as typeof manifest).spec.template.spec.containers[0]!;
    assert.equal('resources' in container, false);
  });

  it('applies the desired object unchanged when it does not exist', () => {
    // Act
    const plan = planApply(manifest as unknown as KubeObject, undefined, ['/spec']);

    // Assess
    assert.equal(plan, manifest);
  });
});
