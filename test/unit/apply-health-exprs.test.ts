/** CEL health checks (Flux's healthCheckExprs): the verdicts, and the config check of their syntax. */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { checkHealthExprs, judgeByExprs, loadCel } from '../../src/apply/health-exprs.ts';
import { healthOf } from '../../src/apply/health.ts';
import type { KubeObject } from '../../src/cluster/kube-object.ts';
import { ConfigError } from '../../src/config/config-error.ts';

const RULE = {
  apiVersion: 'example.com/v1',
  kind: 'Widget',
  inProgress: "has(self.status) && self.status.phase == 'Pending'",
  failed: "has(self.status) && self.status.phase == 'Failed'",
  current: "self.status.phase == 'Ready'",
};

const widget = (status?: Record<string, unknown>): KubeObject => ({
  apiVersion: 'example.com/v1',
  kind: 'Widget',
  metadata: { name: 'w' },
  ...(status ? { status } : {}),
});

describe('healthCheckExprs', () => {
  before(loadCel);

  it('evaluates inProgress, then failed, then current; none true is still in progress', () => {
    // Act
    const states = [
      judgeByExprs(widget({ phase: 'Pending' }), [RULE]),
      judgeByExprs(widget({ phase: 'Failed' }), [RULE]),
      judgeByExprs(widget({ phase: 'Ready' }), [RULE]),
      judgeByExprs(widget({ phase: 'Other' }), [RULE]),
      judgeByExprs(widget(), [RULE]),
    ].map((j) => j?.state);

    // Assess
    assert.deepEqual(states, ['InProgress', 'Failed', 'Current', 'InProgress', 'InProgress']);
    assert.match(judgeByExprs(widget(), [RULE])?.message ?? '', /No such key: status/);
  });

  it('waits for the controller to observe the new generation before asking the expressions', () => {
    // Prepare: a status written for generation 1 that would read as Ready
    const stale = widget({ phase: 'Ready', observedGeneration: 1 });
    stale.metadata.generation = 2;
    const observed = widget({ phase: 'Ready', observedGeneration: 2 });
    observed.metadata.generation = 2;
    const custom = (object: KubeObject) => judgeByExprs(object, [RULE]);

    // Act
    const verdicts = [healthOf(stale, custom), healthOf(observed, custom)];

    // Assess
    assert.deepEqual(
      verdicts.map((v) => v.state),
      ['InProgress', 'Current'],
    );
    assert.match(verdicts[0]!.message, /generation 2 not yet observed \(observed 1\)/);
  });

  it('reads whole numbers as ints and fractions as doubles, as Kubernetes decodes them', () => {
    // Prepare
    const rule = (current: string) => [{ apiVersion: 'example.com/v1', kind: 'Widget', current }];
    const object = widget({ replicas: 4, ready: 2, ratio: 0.5 });

    // Act
    const verdicts = [
      'self.status.ready == self.status.replicas / 2',
      'self.status.ready >= 1',
      'self.status.ratio * 2.0 == 1.0',
    ].map((current) => judgeByExprs(object, rule(current)));

    // Assess
    assert.deepEqual(
      verdicts.map((v) => [v?.state, v?.message]),
      [
        ['Current', 'current: self.status.ready == self.status.replicas / 2'],
        ['Current', 'current: self.status.ready >= 1'],
        ['Current', 'current: self.status.ratio * 2.0 == 1.0'],
      ],
    );
  });

  it('leaves other kinds to the built-in checks', () => {
    // Act
    const verdict = judgeByExprs({ ...widget(), kind: 'Gizmo' }, [RULE]);

    // Assess
    assert.equal(verdict, undefined);
  });

  it('refuses expressions that do not parse, naming the field', async () => {
    // Act + Assess
    await assert.rejects(
      () =>
        checkHealthExprs(
          { tracks: [{ healthCheckExprs: [{ ...RULE, failed: "self.status.phase === 'x'" }] }] },
          'driftless.yaml',
        ),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.match(
          error.message,
          /^driftless\.yaml: tracks\[0\]\.healthCheckExprs\[0\]\.failed: "self\.status\.phase === 'x'" is not a CEL expression: /,
        );
        return true;
      },
    );
    await checkHealthExprs({ tracks: [{ healthCheckExprs: [RULE] }] }, 'f');
  });
});
