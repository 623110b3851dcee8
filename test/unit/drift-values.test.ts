/**
 * The pure helpers of drift: loose value comparison, JSON pointers, label
 * selectors, ignore rules, Secret stringData and describing a drift.
 */
import assert from 'node:assert/strict';
import { maskValue } from '../../src/apply/mask-secret.ts';
import { describe, it } from 'node:test';
import type { KubeObject } from '../../src/cluster/kube-object.ts';
import { describeDrift } from '../../src/drift/describe-drift.ts';
import { ignoredPointers } from '../../src/drift/ignore-rules.ts';
import { InvalidIgnoreRuleError } from '../../src/drift/index.ts';
import { formatPointer, parsePointer, withoutPointers } from '../../src/apply/json-pointer.ts';
import { parseLabelSelector } from '../../src/config/label-selector.ts';
import { looseContains, looseScalarEqual, quantityValue } from '../../src/apply/loose-equal.ts';
import { fieldSetAsStored, manifestAsStored } from '../../src/apply/secret-string-data.ts';

describe('loose equality', () => {
  it('equates quantities the server rewrites', () => {
    // Assess
    assert.equal(looseScalarEqual('1000m', '1'), true);
    assert.equal(looseScalarEqual(0.5, '500m'), true);
    assert.equal(looseScalarEqual('1024Mi', '1Gi'), true);
    assert.equal(looseScalarEqual('1.5Gi', '1536Mi'), true);
    assert.equal(looseScalarEqual('80', 80), true);
    assert.equal(looseScalarEqual('1Gi', '1G'), false);
    assert.equal(looseScalarEqual('web', 'Web'), false);
    assert.equal(quantityValue('2e3'), 2000);
  });

  it('accepts extra live keys but not different list lengths', () => {
    // Assess
    assert.equal(looseContains({ a: 1 }, { a: '1', b: 2 }), true);
    assert.equal(looseContains(['a'], ['a', 'b']), false);
    assert.equal(looseContains({ a: null }, {}), true);
  });
});

describe('JSON pointers', () => {
  it('round-trips escaped tokens', () => {
    // Assess
    assert.deepEqual(parsePointer('/metadata/labels/driftless.dev~1track'), [
      'metadata',
      'labels',
      'driftless.dev/track',
    ]);
    assert.equal(formatPointer(['a~b', 'c/d']), '/a~0b/c~1d');
  });

  it('drops values, list elements and the maps they leave empty, but not maps empty before', () => {
    // Prepare
    const document = { a: { b: 1 }, c: [1, 2, 3], d: {}, e: { f: 1, g: 2 } };

    // Act
    const result = withoutPointers(document, [
      ['a', 'b'],
      ['c', '0'],
      ['c', '2'],
      ['e', 'f'],
    ]);

    // Assess
    assert.deepEqual(result, { c: [2], d: {}, e: { g: 2 } });
    assert.deepEqual(document.c, [1, 2, 3]);
  });
});

describe('label selectors', () => {
  it('reads equality and set requirements', () => {
    // Prepare
    const selects = parseLabelSelector(
      'app=web, tier != db, env in (prod, staging), !legacy, team',
    );

    // Assess
    assert.equal(selects({ app: 'web', env: 'prod', team: 'a' }), true);
    assert.equal(selects({ app: 'web', env: 'dev', team: 'a' }), false);
    assert.equal(selects({ app: 'web', env: 'prod', team: 'a', legacy: 'x' }), false);
    assert.equal(selects({ app: 'web', env: 'prod', team: 'a', tier: 'db' }), false);
    assert.throws(() => parseLabelSelector('app=(web'), /not a label selector/);
  });
});

describe('ignoredPointers', () => {
  const object: KubeObject = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'apps', labels: { tier: 'front' } },
  };

  it('collects the paths of every rule whose target matches', () => {
    // Act
    const pointers = ignoredPointers(
      [
        { paths: ['/spec/replicas'], target: { group: 'apps', kind: 'Deployment' } },
        {
          paths: ['/spec/replicas', '/metadata/annotations'],
          target: { labelSelector: 'tier=front' },
        },
        { paths: ['/data'], target: { kind: 'ConfigMap' } },
        { paths: ['/spec/paused'], target: { name: 'web', namespace: 'other' } },
        { paths: ['/spec/template'], target: { group: '', kind: 'Deployment' } },
      ],
      object,
    );

    // Assess
    assert.deepEqual(pointers, ['/spec/replicas', '/metadata/annotations']);
  });

  it('names the object and the selector when a selector cannot be read', () => {
    // Assess
    assert.throws(
      () => ignoredPointers([{ paths: ['/x'], target: { labelSelector: 'a in b' } }], object),
      (error: unknown) =>
        error instanceof InvalidIgnoreRuleError &&
        error.message.startsWith('Deployment/apps/web: '),
    );
  });
});

describe('Secret stringData', () => {
  it('reads stringData as the data the server stores', () => {
    // Prepare
    const secret: KubeObject = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 's' },
      data: { a: 'eA==', b: 'eA==' },
      stringData: { b: 'y' },
    };

    // Act
    const stored = manifestAsStored(secret);
    const set = fieldSetAsStored(secret, {
      'f:data': { 'f:a': {} },
      'f:stringData': { 'f:b': {} },
    });

    // Assess
    assert.deepEqual(stored.data, { a: 'eA==', b: 'eQ==' });
    assert.equal('stringData' in stored, false);
    assert.deepEqual(set, { 'f:data': { 'f:a': {}, 'f:b': {} } });
  });
});

describe('describeDrift', () => {
  function configMap(data: Record<string, string>, managedFields: unknown[]): KubeObject {
    return {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'c', namespace: 'n', managedFields: managedFields as never },
      data,
    };
  }

  it('describes only our fields, without ignored ones, and names who changed them', () => {
    // Prepare
    const ours = {
      manager: 'driftless',
      operation: 'Apply',
      fieldsV1: { 'f:data': { 'f:a': {}, 'f:b': {} } },
    };
    const live = configMap({ a: 'hand', b: 'hand', other: 'x' }, [
      { manager: 'driftless', operation: 'Apply', fieldsV1: {} },
      {
        manager: 'kubectl-edit',
        operation: 'Update',
        fieldsV1: { 'f:data': { 'f:a': {}, 'f:b': {} } },
      },
      { manager: 'someone', operation: 'Update', fieldsV1: { 'f:data': { 'f:other': {} } } },
    ]);
    const dryRun = configMap({ a: '1', b: '1', other: 'x' }, [ours]);

    // Act
    const drift = describeDrift(live, dryRun, ['/data/b']);

    // Assess
    assert.deepEqual(drift, {
      patch: [{ op: 'replace', path: '/data/a', value: '1' }],
      changedBy: ['kubectl-edit'],
    });
  });

  it('finds no drift when only others changed', () => {
    // Prepare
    const ours = {
      manager: 'driftless',
      operation: 'Apply',
      fieldsV1: { 'f:data': { 'f:a': {} } },
    };
    const live = configMap({ a: '1', other: 'changed' }, [ours]);
    const dryRun = configMap({ a: '1', other: 'changed' }, [ours]);

    // Act
    const drift = describeDrift(live, dryRun, []);

    // Assess
    assert.deepEqual(drift, { patch: [], changedBy: [] });
  });

  it('masks Secret values, with a digest that tells values apart', () => {
    // Prepare
    const set = { 'f:stringData': { 'f:password': {} } };
    const secret = (password: string): KubeObject => ({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 's',
        namespace: 'n',
        managedFields: [{ manager: 'driftless', operation: 'Apply', fieldsV1: set }],
      },
      data: { password: Buffer.from(password).toString('base64') },
    });

    // Act
    const drift = describeDrift(secret('changed'), secret('hunter2'), []);

    // Assess: the desired value's mask, which a mask of the live value would not equal.
    assert.deepEqual(drift.patch, [
      { op: 'replace', path: '/data/password', value: maskValue('hunter2') },
    ]);
    assert.match(maskValue('hunter2'), /^\*\*\* \(hmac:[0-9a-f]{12}\)$/);
    assert.notEqual(maskValue('hunter2'), maskValue('changed'));
    assert.ok(!JSON.stringify(drift).includes(Buffer.from('hunter2').toString('base64')));
  });
});
