/** The check before write: when a sync may leave an object alone, and why it may not. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { applyReason } from '../../src/apply/apply-reason.ts';
import type { KubeObject, ManagedFieldsEntry } from '../../src/cluster/kube-object.ts';
import type { FieldSet } from '../../src/apply/field-set.ts';

const TRACK = 'web';

const desired: KubeObject = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace: 'apps', labels: { 'driftless.dev/track': TRACK } },
  spec: {
    template: {
      spec: {
        containers: [
          {
            name: 'web',
            env: [
              { name: 'B', value: '2' },
              { name: 'A', value: '1' },
            ],
            resources: { requests: { cpu: '1000m' } },
          },
        ],
      },
    },
  },
};

interface Owned {
  /** Fields beyond the manifest's that driftless owns (left from an earlier apply). */
  readonly replicas?: boolean;
  readonly envC?: boolean;
  /** False when another manager took the resources. */
  readonly resources?: boolean;
  readonly apiVersion?: string;
}

/** What driftless owns after applying `desired`, as the server records it. */
function ours(owned: Owned = {}): ManagedFieldsEntry {
  const env: FieldSet = {
    'k:{"name":"B"}': { '.': {}, 'f:name': {}, 'f:value': {} },
    'k:{"name":"A"}': { '.': {}, 'f:name': {}, 'f:value': {} },
    ...(owned.envC ? { 'k:{"name":"C"}': { '.': {}, 'f:name': {} } } : {}),
  };
  const container: FieldSet = {
    '.': {},
    'f:name': {},
    'f:env': env,
    ...(owned.resources === false ? {} : { 'f:resources': { 'f:requests': { 'f:cpu': {} } } }),
  };
  return {
    manager: 'driftless',
    operation: 'Apply',
    apiVersion: owned.apiVersion ?? 'apps/v1',
    fieldsType: 'FieldsV1',
    fieldsV1: {
      'f:metadata': { 'f:labels': { 'f:driftless.dev/track': {} } },
      'f:spec': {
        ...(owned.replicas ? { 'f:replicas': {} } : {}),
        'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"web"}': container } } },
      },
    },
  };
}

interface Live {
  readonly owned?: Owned | null;
  readonly labels?: Record<string, string>;
  readonly env?: { name: string; value: string }[];
  readonly deletionTimestamp?: string;
}

/** `desired` as the server keeps it: normalised, defaulted, with another manager's field. */
function live(given: Live = {}): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: 'web',
      namespace: 'apps',
      uid: 'u1',
      resourceVersion: '7',
      labels: given.labels ?? { 'driftless.dev/track': TRACK },
      annotations: { 'deployment.kubernetes.io/revision': '1' },
      ...(given.deletionTimestamp ? { deletionTimestamp: given.deletionTimestamp } : {}),
      managedFields: [
        ...(given.owned === null ? [] : [ours(given.owned)]),
        {
          manager: 'kube-controller-manager',
          operation: 'Update',
          apiVersion: 'apps/v1',
          fieldsV1: { 'f:metadata': { 'f:annotations': {} } },
        },
      ],
    },
    spec: {
      replicas: 1,
      template: {
        spec: {
          containers: [
            {
              name: 'web',
              env: given.env ?? [
                { name: 'B', value: '2' },
                { name: 'A', value: '1' },
              ],
              imagePullPolicy: 'IfNotPresent',
              resources: { requests: { cpu: '1' } },
            },
          ],
        },
      },
    },
  };
}

describe('applyReason', () => {
  it('leaves alone an object the server only normalised, defaulted and annotated', () => {
    assert.equal(applyReason(desired, live(), TRACK), undefined);
  });

  it('applies an object that does not exist, or is being deleted', () => {
    const deleting = live({ deletionTimestamp: '2026-01-01T00:00:00Z' });
    assert.equal(applyReason(desired, undefined, TRACK), 'does not exist');
    assert.equal(applyReason(desired, deleting, TRACK), 'is being deleted');
  });

  it('applies an object without this track label', () => {
    const unlabelled = live({ labels: {} });
    const otherTrack = live({ labels: { 'driftless.dev/track': 'other' } });
    assert.match(applyReason(desired, unlabelled, TRACK) ?? '', /not labelled/);
    assert.match(applyReason(desired, otherTrack, TRACK) ?? '', /not labelled/);
  });

  it('applies a value that differs, and a field another manager took', () => {
    const changed = live({
      env: [
        { name: 'B', value: '2' },
        { name: 'A', value: '9' },
      ],
    });
    const taken = live({ owned: { resources: false } });
    assert.equal(
      applyReason(desired, changed, TRACK),
      '/spec/template/spec/containers/0/env/1/value: value differs',
    );
    assert.match(applyReason(desired, taken, TRACK) ?? '', /resources: not owned/);
  });

  it('applies when driftless owns a field or list element the manifest no longer sets', () => {
    const field = live({ owned: { replicas: true } });
    const element = live({ owned: { envC: true } });
    assert.match(applyReason(desired, field, TRACK) ?? '', /^\/spec\/replicas: owned by driftless/);
    assert.match(applyReason(desired, element, TRACK) ?? '', /"C"\}: owned by driftless/);
  });

  it('applies a keyed list the live object holds in another order', () => {
    const reordered = live({
      env: [
        { name: 'A', value: '1' },
        { name: 'B', value: '2' },
      ],
    });
    assert.match(applyReason(desired, reordered, TRACK) ?? '', /env\/1: out of order/);
  });

  it('applies without a field set of driftless, or one of another apiVersion', () => {
    const none = live({ owned: null });
    const older = live({ owned: { apiVersion: 'apps/v1beta2' } });
    assert.match(applyReason(desired, none, TRACK) ?? '', /no fields applied by driftless/);
    assert.match(applyReason(desired, older, TRACK) ?? '', /last applied as apps\/v1beta2/);
  });

  it("reads a Secret's stringData as the data the server keeps", () => {
    const secret: KubeObject = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 's', namespace: 'apps', labels: { 'driftless.dev/track': TRACK } },
      stringData: { token: 's3cret' },
    };
    const stored: KubeObject = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        ...secret.metadata,
        managedFields: [
          {
            manager: 'driftless',
            operation: 'Apply',
            apiVersion: 'v1',
            fieldsV1: {
              'f:metadata': { 'f:labels': { 'f:driftless.dev/track': {} } },
              'f:stringData': { 'f:token': {} },
            },
          },
        ],
      },
      data: { token: Buffer.from('s3cret').toString('base64') },
      type: 'Opaque',
    };
    const changed = { ...stored, data: { token: Buffer.from('other').toString('base64') } };
    assert.equal(applyReason(secret, stored, TRACK), undefined);
    assert.match(applyReason(secret, changed, TRACK) ?? '', /\/data\/token: value differs/);
  });
});
