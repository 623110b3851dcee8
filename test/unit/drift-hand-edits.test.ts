/**
 * Fields added by hand, from managedFields: what only by-hand managers own,
 * shown as removals, and handed to Driftless' apply entry for correction.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '../../src/cluster/kube-object.ts';
import {
  DEFAULT_HAND_EDIT_MANAGERS,
  handAddedFields,
  handOnlyFields,
  removalPatch,
  subtractFieldSet,
  takeOverHandFields,
  withoutDesiredFields,
} from '../../src/drift/hand-edits.ts';

const live: KubeObject = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: {
    name: 'web',
    namespace: 'apps',
    labels: { 'driftless.dev/track': 'web', hand: 'added', shared: 'yes' },
    managedFields: [
      {
        manager: 'driftless',
        operation: 'Apply',
        apiVersion: 'apps/v1',
        fieldsV1: { 'f:metadata': { 'f:labels': { 'f:driftless.dev/track': {} } } },
      },
      {
        manager: 'kubectl-label',
        operation: 'Update',
        apiVersion: 'apps/v1',
        fieldsV1: { 'f:metadata': { 'f:labels': { 'f:hand': {}, 'f:shared': {} } } },
      },
      {
        manager: 'kubectl-scale',
        operation: 'Update',
        apiVersion: 'apps/v1',
        subresource: 'scale',
        fieldsV1: { 'f:spec': { 'f:replicas': {} } },
      },
      {
        manager: 'kube-controller-manager',
        operation: 'Update',
        apiVersion: 'apps/v1',
        subresource: 'scale',
        fieldsV1: { 'f:spec': { 'f:replicas': {} } },
      },
      {
        manager: 'operator',
        operation: 'Update',
        apiVersion: 'apps/v1',
        fieldsV1: { 'f:metadata': { 'f:labels': { 'f:shared': {} } } },
      },
    ],
  },
  spec: { replicas: 3 },
};

describe('hand edits', () => {
  it('finds what only the by-hand managers own: not what a controller or operator also owns', () => {
    // Act
    const hand = handOnlyFields(live, DEFAULT_HAND_EDIT_MANAGERS);

    // Assess
    assert.deepEqual(hand, {
      fields: { 'f:metadata': { 'f:labels': { 'f:hand': {} } } },
      by: ['kubectl-label', 'kubectl-scale'],
    });
    assert.deepEqual(removalPatch(live, hand!.fields), [
      { op: 'remove', path: '/metadata/labels/hand' },
    ]);
  });

  it('leaves out ignored fields, and the map that only they kept', () => {
    // Prepare
    const annotated: KubeObject = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'c',
        annotations: { keep: 'me' },
        managedFields: [
          {
            manager: 'kubectl-annotate',
            operation: 'Update',
            fieldsV1: { 'f:metadata': { 'f:annotations': { '.': {}, 'f:keep': {} } } },
          },
        ],
      },
    };

    // Act
    const hand = handAddedFields(
      annotated,
      { ...annotated, metadata: { name: 'c' } },
      DEFAULT_HAND_EDIT_MANAGERS,
      ['/metadata/annotations/keep'],
    );

    // Assess
    assert.equal(hand, undefined);
  });

  it('counts a manager as by hand only when listed', () => {
    // Act
    const none = handOnlyFields(live, ['k9s']);

    // Assess
    assert.equal(none, undefined);
  });

  it('leaves out fields Git sets: those are put back, not removed', () => {
    // Act
    const rest = withoutDesiredFields(
      { 'f:data': { 'f:a': {}, 'f:extra': {} } },
      { data: { a: '1' } },
    );

    // Assess
    assert.deepEqual(rest, { 'f:data': { 'f:extra': {} } });
  });

  it("reads a Secret's stringData in Git as its data: a key patched by hand is put back, not removed", () => {
    // Prepare: Git sets password in stringData; kubectl patched data.password
    const secret: KubeObject = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 's',
        namespace: 'apps',
        managedFields: [
          {
            manager: 'kubectl-patch',
            operation: 'Update',
            apiVersion: 'v1',
            fieldsV1: { 'f:data': { 'f:password': {}, 'f:added': {} } },
          },
        ],
      },
      data: { password: 'eA==', added: 'eQ==' },
    };
    const desired: KubeObject = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 's', namespace: 'apps' },
      stringData: { password: 'hunter2' },
    };

    // Act
    const found = handAddedFields(secret, desired, DEFAULT_HAND_EDIT_MANAGERS, []);

    // Assess: only the key Git does not set is a hand-added field
    assert.deepEqual(found?.fields, { 'f:data': { 'f:added': {} } });
  });

  it('subtracts whole fields only: a field the other set owns in part stays', () => {
    // Act
    const rest = subtractFieldSet(
      { 'f:spec': { 'f:template': {}, 'f:paused': {} } },
      { 'f:spec': { 'f:template': { 'f:metadata': {} } } },
    );

    // Assess
    assert.deepEqual(rest, { 'f:spec': { 'f:paused': {} } });
  });

  it('moves the fields to the driftless apply entry; by-hand entries keep the rest, the object stays as it was', () => {
    // Act
    const entries = takeOverHandFields(live, DEFAULT_HAND_EDIT_MANAGERS, {
      'f:metadata': { 'f:labels': { 'f:hand': {} } },
    });

    // Assess
    assert.deepEqual(
      entries.map((e) => e.manager),
      ['driftless', 'kubectl-label', 'kubectl-scale', 'kube-controller-manager', 'operator'],
    );
    // What was not taken over stays owned: a field nobody owns would go with its map.
    assert.deepEqual(entries[1]?.fieldsV1, { 'f:metadata': { 'f:labels': { 'f:shared': {} } } });
    assert.deepEqual(entries[0]?.fieldsV1, {
      'f:metadata': { 'f:labels': { 'f:driftless.dev/track': {}, 'f:hand': {} } },
    });
    assert.equal(live.metadata.managedFields?.length, 5, 'the live object is not changed');
  });
});
