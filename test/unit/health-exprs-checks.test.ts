/**
 * healthCheckExprs that can never judge health: an expression whose type is
 * known not to be bool is refused when the config loads, naming its field; one
 * that gives something other than true or false on a live object fails that
 * object at once instead of waiting for the track's timeout, as does an
 * expression CEL cannot evaluate on the object (mixing int and double), while
 * a field or list item not there yet waits; no message quotes a value of the
 * object; and a second entry for the same apiVersion and kind is refused.
 * In-memory cluster fake.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import {
  checkHealthExprs,
  exprHealth,
  judgeByExprs,
  loadCel,
} from '../../src/apply/health-exprs.ts';
import { describeUnhealthy, waitForHealth } from '../../src/apply/health.ts';
import { refOf, type KubeObject } from '../../src/cluster/kube-object.ts';
import { ConfigError, parseConfig } from '../../src/config/index.ts';
import type { HealthCheckExpr } from '../../src/config/types.ts';
import { InMemoryCluster } from './fakes/in-memory-cluster.ts';

const widgetRule = (fields: Partial<HealthCheckExpr>): HealthCheckExpr => ({
  apiVersion: 'example.com/v1',
  kind: 'Widget',
  current: "self.status.phase == 'Ready'",
  ...fields,
});

/** The messages of the ConfigError `check` throws, one per problem. */
async function refusal(check: () => Promise<unknown>): Promise<string[]> {
  try {
    await check();
  } catch (error) {
    assert.ok(error instanceof ConfigError, `expected a ConfigError, got ${String(error)}`);
    return error.message.split('\n');
  }
  return assert.fail('expected the config to be refused');
}

const widget = (status: Record<string, unknown>): KubeObject => ({
  apiVersion: 'example.com/v1',
  kind: 'Widget',
  metadata: { name: 'w', namespace: 'apps' },
  status,
});

const WIDGETS = [
  {
    group: 'example.com',
    version: 'v1',
    kind: 'Widget',
    plural: 'widgets',
    namespaced: true,
    listable: true,
  },
];

/** Waits (up to a minute by default) for `object` in a cluster holding it, judged by `rule`. */
async function waitFor(object: KubeObject, rule: HealthCheckExpr, timeoutMs = 60_000) {
  const cluster = new InMemoryCluster(WIDGETS);
  await cluster.apply(object, { fieldManager: 'controller', force: true });
  const started = performance.now();
  const health = await waitForHealth(
    cluster,
    [refOf(object)],
    timeoutMs,
    10,
    await exprHealth([rule]),
  );
  return { health, tookMs: performance.now() - started };
}

describe('healthCheckExprs type checks', () => {
  before(loadCel);

  it('refuses expressions whose type is known not to be bool, naming each field', async () => {
    // Prepare: a string literal, arithmetic, and Flux's top-level `status` (no such variable here).
    const config = {
      tracks: [
        { healthCheckExprs: [widgetRule({})] },
        {
          healthCheckExprs: [
            widgetRule({}),
            widgetRule({
              current: '"status.phase"',
              inProgress: 'size(self.status)',
              failed: "status.phase == 'Failed'",
            }),
          ],
        },
      ],
    };

    // Act
    const messages = await refusal(() => checkHealthExprs(config, 'driftless.yaml'));

    // Assess
    assert.deepEqual(messages, [
      'driftless.yaml: tracks[1].healthCheckExprs[1].current: "\\"status.phase\\"" has type string, not bool (true or false)',
      'driftless.yaml: tracks[1].healthCheckExprs[1].inProgress: "size(self.status)" has type int, not bool (true or false)',
      `driftless.yaml: tracks[1].healthCheckExprs[1].failed: "status.phase == 'Failed'" cannot be evaluated: Unknown variable: status (the object is the variable self, as in self.status)`,
    ]);
  });

  it('accepts bool expressions and fields of self, whose type only the object tells', async () => {
    // Prepare
    const rule = widgetRule({
      current: "self.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
      inProgress: 'self.status.ready',
      failed: 'self.status.replicas > 3',
    });

    // Act + Assess: resolves.
    await checkHealthExprs({ tracks: [{ healthCheckExprs: [rule] }] }, 'driftless.yaml');
  });

  it('fails an object at once when an expression returns a string, naming field, expression, object and type', async () => {
    // Prepare
    const rule = widgetRule({ current: 'self.status.phase' });

    // Act
    const { health, tookMs } = await waitFor(widget({ phase: 'Ready' }), rule);

    // Assess: Failed on the first poll, not after the minute's timeout.
    assert.equal(health.healthy, false);
    assert.equal(health.results[0]?.state, 'Failed');
    assert.ok(tookMs < 5_000, `took ${tookMs} ms`);
    assert.equal(
      describeUnhealthy(health),
      'Widget/apps/w: healthCheckExprs[0].current "self.status.phase" returned type string, not bool (true or false)',
    );
  });

  it('fails at once on a number from inProgress too, without quoting the value', async () => {
    // Prepare: the value could be a Secret's; only its type is told.
    const rule = widgetRule({ inProgress: 'self.status.token' });

    // Act
    const { health } = await waitFor(widget({ token: 4242, phase: 'Ready' }), rule);

    // Assess
    assert.equal(health.results[0]?.state, 'Failed');
    const message = describeUnhealthy(health);
    assert.match(
      message,
      /healthCheckExprs\[0\]\.inProgress "self\.status\.token" returned type int, not bool/,
    );
    assert.doesNotMatch(message, /4242/);
  });

  it('keeps waiting on a field the object does not have yet, and turns Current when it is true', async () => {
    // Act
    const missing = await waitFor(widget({}), widgetRule({ current: 'self.status.ready' }), 100);
    const ready = await waitFor(
      widget({ ready: true }),
      widgetRule({ current: 'self.status.ready' }),
    );

    // Assess
    assert.equal(missing.health.results[0]?.state, 'InProgress');
    assert.equal(missing.health.results[0]?.message, 'self.status.ready: No such key: ready');
    assert.equal(ready.health.healthy, true);
  });
});

describe('healthCheckExprs evaluation errors', () => {
  before(loadCel);

  it('fails an object at once when CEL cannot mix int and double, with the hint', async () => {
    // Prepare: whole numbers are ints, so `* 0.5` has no overload; a 3-second timeout
    // stands for the track's (minutes): waiting would end in InProgress.
    const rule = widgetRule({ current: 'self.status.readyReplicas >= self.status.replicas * 0.5' });

    // Act
    const { health } = await waitFor(widget({ readyReplicas: 2, replicas: 3 }), rule, 3_000);

    // Assess
    assert.equal(health.results[0]?.state, 'Failed');
    assert.equal(
      describeUnhealthy(health),
      'Widget/apps/w: healthCheckExprs[0].current "self.status.readyReplicas >= self.status.replicas * 0.5" cannot be evaluated on this object: no such overload: dyn<int> * double (CEL does not mix int and double: whole numbers of the object are ints, so convert with double(...), as in double(self.spec.replicas) * 0.5)',
    );
  });

  it('fails at once from failed too, and turns Current once converted with double()', () => {
    // Act
    const broken = judgeByExprs(widget({ ready: 1 }), [
      widgetRule({ failed: 'self.status.ready + 0.5 > 2.0', current: 'true' }),
    ]);
    const converted = judgeByExprs(widget({ readyReplicas: 2, replicas: 3 }), [
      widgetRule({ current: 'self.status.readyReplicas >= double(self.status.replicas) * 0.5' }),
    ]);

    // Assess
    assert.equal(broken?.state, 'Failed');
    assert.match(broken?.message ?? '', /^healthCheckExprs\[0\]\.failed .*dyn<int> \+ double/);
    assert.equal(converted?.state, 'Current');
  });

  it('keeps waiting on a key or a list item the object does not have yet', () => {
    // Prepare: conditions not filled yet, and a status not written at all.
    const rule = widgetRule({ current: "self.status.conditions[0].status == 'True'" });

    // Act
    const emptyList = judgeByExprs(widget({ conditions: [] }), [rule]);
    const noStatus = judgeByExprs({ ...widget({}), status: undefined }, [rule]);

    // Assess
    assert.deepEqual(emptyList, {
      state: 'InProgress',
      message: "self.status.conditions[0].status == 'True': No such key: index 0 out of bounds",
    });
    assert.deepEqual(noStatus, {
      state: 'InProgress',
      message: "self.status.conditions[0].status == 'True': No such key: status",
    });
  });

  it("never quotes a Secret's value, whichever error CEL raises on it", () => {
    // Prepare: a planted value CEL's own messages would quote (a duration, a bool, a regular
    // expression, a key computed from it, an overflowing product).
    const MARKER = 'c2VjcmV0LW1hcmtlcg==';
    const secret: KubeObject = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'db', namespace: 'apps' },
      data: { password: MARKER, pin: 4_294_967_311 },
    };
    const expressions = {
      "duration(self.data.password) > duration('1s')": 'Failed',
      'bool(self.data.password)': 'Failed',
      "self.data.password.matches(self.data.password + '(')": 'Failed',
      'self.data.pin * self.data.pin > 0': 'Failed',
      'self.data[self.data.password] == 1': 'InProgress',
    };

    // Act
    const verdicts = Object.keys(expressions).map((current) =>
      judgeByExprs(secret, [{ apiVersion: 'v1', kind: 'Secret', current }]),
    );

    // Assess: no message quotes the value; each names its expression and the verdict is as
    // expected (a computed key may be filled later: it waits).
    const messages = verdicts.map((v) => v?.message ?? '');
    for (const message of messages) {
      for (const value of [MARKER, '4294967311', String(4_294_967_311n ** 2n)]) {
        assert.ok(!message.includes(value), `${message} quotes ${value}`);
      }
    }
    for (const [i, expression] of Object.keys(expressions).entries()) {
      assert.ok(messages[i]?.includes(expression), messages[i]);
      assert.match(messages[i] ?? '', /\(the value is not shown\)$/);
    }
    assert.deepEqual(
      verdicts.map((v) => v?.state),
      Object.values(expressions),
    );
  });
});

describe('healthCheckExprs entries', () => {
  const track = (entries: string[]) =>
    [
      'tracks:',
      '  - name: web',
      '    repository: https://git.example.com/org/web.git',
      '    healthCheckExprs:',
      ...entries.map((entry) => `      - ${entry}`),
      '',
    ].join('\n');

  it('refuses a second entry for the same apiVersion and kind, naming both indexes', async () => {
    // Prepare: [2] repeats [0]; [1] differs by apiVersion only and is fine.
    const text = track([
      "{apiVersion: example.com/v1, kind: Widget, current: 'true'}",
      "{apiVersion: example.com/v2, kind: Widget, current: 'true'}",
      "{apiVersion: example.com/v1, kind: Widget, current: 'false'}",
    ]);

    // Act
    const messages = await refusal(async () => parseConfig(text, 'driftless.yaml'));

    // Assess
    assert.deepEqual(messages, [
      'driftless.yaml: tracks[0].healthCheckExprs[2]: example.com/v1 Widget is already checked by healthCheckExprs[0] (one entry per apiVersion and kind)',
    ]);
  });

  it("reports a repeated entry alongside the other entries' errors", async () => {
    // Prepare
    const text = track([
      "{apiVersion: example.com/v1, kind: Widget, current: 'true', colour: red}",
      '{apiVersion: example.com/v1, kind: Widget}',
    ]);

    // Act
    const messages = await refusal(async () => parseConfig(text, 'driftless.yaml'));

    // Assess
    assert.deepEqual(messages, [
      'driftless.yaml: tracks[0].healthCheckExprs[0].colour: unknown field',
      'driftless.yaml: tracks[0].healthCheckExprs[1].current: is required',
      'driftless.yaml: tracks[0].healthCheckExprs[1]: example.com/v1 Widget is already checked by healthCheckExprs[0] (one entry per apiVersion and kind)',
    ]);
  });
});
