/**
 * Post-build variable substitution (Flux semantics, strict) and the
 * `substituteFrom` secret parser; then where a track substitutes: at render
 * time with `substitute:` alone, never twice.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseConfig } from '../../src/config/index.ts';
import { parseBundle, renderRevision, serializeBundle } from '../../src/render/index.ts';
import { substituteBundle, substitutesAtRender } from '../../src/render/substitute-bundle.ts';
import {
  parseVariables,
  referencedVariables,
  substituteVariables,
  substitutionDisabled,
  SubstitutionError,
} from '../../src/render/substitute-variables.ts';

const opts = { subject: 'ConfigMap apps/web (app.yaml)' };
const sub = <T>(object: T, variables: Record<string, string> = {}) =>
  substituteVariables(object, variables, opts);

function failure(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    assert.ok(
      error instanceof SubstitutionError,
      `expected a SubstitutionError, got ${String(error)}`,
    );
    return error.message;
  }
  assert.fail('expected a SubstitutionError');
}

describe('substituteVariables', () => {
  it('substitutes ${VAR} in values and keys, anywhere in the object', () => {
    const out = sub(
      {
        metadata: { name: 'web-${ENV}' },
        data: { '${KEY}': 'a ${ENV} b ${ENV}' },
        list: ['${ENV}'],
      },
      { ENV: 'prod', KEY: 'region' },
    );
    assert.deepEqual(out, {
      metadata: { name: 'web-prod' },
      data: { region: 'a prod b prod' },
      list: ['prod'],
    });
  });

  it('uses :- and := defaults when the variable is unset or empty, and the value when set', () => {
    const object = { a: '${A:-one}', b: '${B:=two}', c: '${C:-three}', d: '${D:-}' };
    assert.deepEqual(sub(object, { C: 'set', A: '' }), { a: 'one', b: 'two', c: 'set', d: '' });
  });

  it('keeps $${VAR} as the literal ${VAR} and leaves bare $VAR alone', () => {
    const out = sub({ script: 'echo $${HOME} $HOME ${X}' }, { X: 'x', HOME: 'never' });
    assert.deepEqual(out, { script: 'echo ${HOME} $HOME x' });
  });

  it('types a whole-expression result as YAML would (replicas: ${N}), except where Kubernetes takes strings', () => {
    const out = sub(
      {
        metadata: { labels: { n: '${N}' }, annotations: { b: '${B}' } },
        spec: {
          replicas: '${N}',
          paused: '${B}',
          ratio: '${F}',
          name: 'n-${N}',
          containers: [{ env: [{ name: 'X', value: '${N}' }] }],
        },
        data: { n: '${N}' },
      },
      { N: '3', B: 'true', F: '0.5' },
    );
    assert.deepEqual(out, {
      metadata: { labels: { n: '3' }, annotations: { b: 'true' } },
      spec: {
        replicas: 3,
        paused: true,
        ratio: 0.5,
        name: 'n-3',
        containers: [{ env: [{ name: 'X', value: '3' }] }],
      },
      data: { n: '3' },
    });
  });

  it('a value cannot add fields: line breaks and ": " stay inside the string', () => {
    const out = sub({ data: { v: '${V}' } }, { V: 'x\nextra: injected' });
    assert.deepEqual(out, { data: { v: 'x\nextra: injected' } });
  });

  it('returns the same object when nothing changes, and never touches its input', () => {
    const plain = { metadata: { name: 'web' }, spec: { list: [1, 'two'] } };
    assert.equal(sub(plain), plain);
    const input = { metadata: { name: '${N}' } };
    const out = sub(input, { N: 'x' });
    assert.deepEqual(input, { metadata: { name: '${N}' } });
    assert.notEqual(out, input);
  });

  it('leaves an object annotated driftless.dev/substitute: disabled (or Flux’s annotation) alone', () => {
    for (const key of ['driftless.dev/substitute', 'kustomize.toolkit.fluxcd.io/substitute']) {
      const object = {
        metadata: { annotations: { [key]: 'disabled' } },
        data: { a: '${MISSING}' },
      };
      assert.equal(substitutionDisabled(object), true);
      assert.equal(sub(object), object);
    }
    assert.equal(
      substitutionDisabled({
        metadata: { annotations: { 'driftless.dev/substitute': 'enabled' } },
      }),
      false,
    );
  });

  it('fails on a missing variable without a default, naming the variable and the object', () => {
    const message = failure(() => sub({ data: { a: '${CLUSTER_NAME}' } }, { OTHER: 'x' }));
    assert.equal(
      message,
      'ConfigMap apps/web (app.yaml): variable ${CLUSTER_NAME} is not set and has no default',
    );
  });

  it('fails on malformed expressions, naming the object and the text', () => {
    for (const [text, expected] of [
      ['a ${UNCLOSED', /"\$\{UNCLOSED" has \$\{ without a closing \}/],
      ['${1X}', /\$\{1X\} is not a valid variable expression/],
      ['${A B}', /\$\{A B\} is not a valid variable expression/],
      ['${}', /\$\{\} is not a valid variable expression/],
      ['${A/x/y}', /\$\{A\/x\/y\} is not a valid variable expression/],
      ['${A:-${B}}', /has a nested expression in its default/],
    ] as const) {
      const message = failure(() => sub({ data: { a: text } }, { A: 'a', B: 'b' }));
      assert.match(message, /^ConfigMap apps\/web \(app\.yaml\): /);
      assert.match(message, expected);
    }
  });

  it('quotes no part of a decrypted value that holds a broken or unknown expression', () => {
    // A SOPS plaintext (substitution follows decryption) such as a password with `${` in it.
    const plaintexts = ['hunter${PART-x9q!}tail', 'pass_${oops', 'pre${UNKNOWN_NAME}post'];
    const isSecret = (text: string) => plaintexts.includes(text);
    for (const plaintext of plaintexts) {
      const message = failure(() =>
        substituteVariables({ stringData: { password: plaintext } }, {}, { ...opts, isSecret }),
      );
      assert.match(message, /^ConfigMap apps\/web \(app\.yaml\): a decrypted value /);
      for (const piece of ['PART', 'x9q', 'oops', 'UNKNOWN_NAME', 'hunter', 'tail', 'pass_']) {
        assert.ok(!message.includes(piece), `${piece} in: ${message}`);
      }
    }
  });

  it('never puts a value in an error message', () => {
    const message = failure(() =>
      sub({ a: '${SECRET}', b: '${MISSING}' }, { SECRET: 'planted-value-123' }),
    );
    assert.doesNotMatch(message, /planted-value-123/);
  });

  it('lists the variables an object references', () => {
    assert.deepEqual(referencedVariables({ a: '${A} ${B:-x} $${C}', '${D}': ['${A}'] }), [
      'A',
      'B',
      'D',
    ]);
  });

  it('substitutes 1,000 objects of a few variables each', () => {
    const objects = Array.from({ length: 1000 }, (_, i) => ({
      metadata: { name: `cm-${i}-\${ENV}`, labels: { app: 'web' } },
      data: { a: '${A}', b: 'plain', c: 'x-${B:-d}' },
    }));
    const out = objects.map((o) => sub(o, { ENV: 'prod', A: 'a' }));
    assert.equal(out[999]!.metadata.name, 'cm-999-prod');
    assert.equal(out[0]!.data.c, 'x-d');
  });
});

describe('parseVariables', () => {
  it('reads KEY=VALUE lines: comments, blanks, export, quotes', () => {
    const text = '# vars\n\nexport A=1\nB="two words"\nC=\'x=y\'\nD=\nE = spaced \r\n';
    assert.deepEqual(parseVariables(text, 'secret env:V'), {
      A: '1',
      B: 'two words',
      C: 'x=y',
      D: '',
      E: 'spaced',
    });
  });

  it('reads a JSON object of strings, numbers and booleans', () => {
    assert.deepEqual(parseVariables('{"A": "x", "N": 3, "B": true}', 'secret env:V'), {
      A: 'x',
      N: '3',
      B: 'true',
    });
  });

  it('refuses bad names, lines and JSON shapes by line or name, never quoting a value', () => {
    const cases: [string, RegExp][] = [
      ['A=1\nnot a pair-value-777\n', /secret env:V, line 2: expected KEY=VALUE/],
      ['1A=value-777', /line 1: "1A" is not a variable name/],
      [
        '{"A": {"x": "value-777"}}',
        /variable A must be a string, number or boolean, not an object/,
      ],
      ['{"A": "value-777", ', /is neither a JSON object nor KEY=VALUE lines/],
      ['["value-777"]', /expected KEY=VALUE/],
    ];
    for (const [text, expected] of cases) {
      const message = failure(() => parseVariables(text, 'secret env:V'));
      assert.match(message, expected);
      assert.doesNotMatch(message, /value-777/);
    }
  });
});

describe('where a track substitutes', () => {
  const file = (path: string, text: string) => ({ path, content: new TextEncoder().encode(text) });
  const track = (extra: string) =>
    parseConfig(
      `tracks:\n  - name: web\n    repository: https://git.example.com/org/repo.git\n${extra}`,
      'driftless.yaml',
    ).tracks[0]!;
  const files = [
    file(
      'app.yaml',
      'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web-${ENV}\n  namespace: apps\nspec:\n  replicas: ${N}\n  note: "$${KEEP}"\n',
    ),
  ];

  it('substitute: alone is done at render time, recorded in the bundle, and the identity follows', async () => {
    const spec = track('    substitute: {ENV: prod, N: "2"}\n');
    const bundle = await renderRevision(spec, files);
    assert.equal(bundle.substituted, true);
    const [object] = bundle.objects;
    assert.equal(object!.name, 'web-prod');
    assert.equal(object!.subject, 'Deployment/apps/web-prod');
    assert.deepEqual(object!.manifest.spec, { replicas: 2, note: '${KEEP}' });
    // Stored and read back, it says it is done: the apply step must not substitute again.
    const stored = parseBundle(serializeBundle(bundle));
    assert.equal(stored.substituted, true);
    assert.equal(substitutesAtRender(spec, stored), true);
  });

  it('a track without substitute or substituteFrom leaves ${...} alone', async () => {
    const bundle = await renderRevision(track(''), files);
    assert.equal(bundle.substituted, undefined);
    assert.equal(bundle.objects[0]!.name, 'web-${ENV}');
  });

  it('with substituteFrom, render leaves it to the apply step', async () => {
    const spec = track(
      '    substitute: {ENV: prod}\n    substituteFrom: [{secret: "env:WEB_VARS"}]\n',
    );
    const bundle = await renderRevision(spec, files);
    assert.equal(bundle.substituted, undefined);
    assert.equal(substitutesAtRender(spec, bundle), false);
  });

  it('a missing variable fails the render naming variable and file; a duplicate made by substitution is refused', async () => {
    await assert.rejects(
      renderRevision(track('    substitute: {ENV: prod}\n'), files),
      /web-\$\{ENV\} \(app\.yaml\): variable \$\{N\} is not set/,
    );
    const two = [
      file(
        'a.yaml',
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "cm-${A}", namespace: x}\n',
      ),
      file(
        'b.yaml',
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "cm-${B}", namespace: x}\n',
      ),
    ];
    const bundle = await renderRevision(track(''), two);
    assert.throws(
      () => substituteBundle(bundle, { A: 'same', B: 'same' }),
      /ConfigMap\/x\/cm-same: duplicate object/,
    );
  });
});
