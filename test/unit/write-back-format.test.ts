/**
 * Write-back edits to manifest files, byte for byte: a JSON file stays JSON
 * in its own layout, and in a YAML file only the changed fields' text
 * changes — every other line (its spacing, comments, long lines) and the
 * other documents stay exactly as written.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import type { WriteBackChange } from '../../src/render/write-back-change.ts';
import { editManifests } from '../../src/source/edit-manifests.ts';

function change(file: string, fields: WriteBackChange['fields'], name = 'cm'): WriteBackChange {
  return {
    subject: `ConfigMap/apps/${name}`,
    apiVersion: 'v1',
    kind: 'ConfigMap',
    name,
    namespace: 'apps',
    file,
    line: 1,
    fields,
  };
}

/** The one file `changes` edit in `before`, with no conflict or refusal. */
function edited(file: string, before: string, ...changes: WriteBackChange[]): string {
  const edits = editManifests((path) => (path === file ? before : undefined), changes);
  assert.deepEqual(edits.conflicts, []);
  assert.deepEqual(edits.refused, []);
  const after = edits.files.get(file);
  assert.ok(after !== undefined, 'the file was edited');
  return after;
}

const JSON_FILE = `{
  "apiVersion": "v1",
  "kind": "ConfigMap",
  "metadata": {
    "name": "cm",
    "namespace": "apps"
  },
  "data": {"a": "1", "b": "2"}
}
`;

describe('write-back to a JSON manifest', () => {
  it('keeps it valid JSON, laid out as it was', () => {
    // Act
    const after = edited(
      'js/cm.json',
      JSON_FILE,
      change('js/cm.json', [
        { path: '/data/a', value: 'one', base: '1' },
        { path: '/data/b', value: '20', base: '2' },
        { path: '/data/c', value: '3' },
        { path: '/metadata/annotations/note', value: 'hello' },
      ]),
    );

    // Assess: quoted keys and strings, the file's own line breaks and indentation.
    assert.equal(
      after,
      `{
  "apiVersion": "v1",
  "kind": "ConfigMap",
  "metadata": {
    "name": "cm",
    "namespace": "apps",
    "annotations": {
      "note": "hello"
    }
  },
  "data": {"a": "one", "b": "20", "c": "3"}
}
`,
    );
    assert.deepEqual(JSON.parse(after).data, { a: 'one', b: '20', c: '3' });
  });

  it('takes a removed field out with its comma', () => {
    const after = edited(
      'js/cm.json',
      JSON_FILE,
      change('js/cm.json', [
        { path: '/data/a', base: '1' },
        { path: '/metadata/namespace', base: 'apps' },
      ]),
    );
    assert.equal(
      after,
      `{
  "apiVersion": "v1",
  "kind": "ConfigMap",
  "metadata": {
    "name": "cm"
  },
  "data": {"b": "2"}
}
`,
    );
  });

  it('writes an object new to Git as a JSON file', () => {
    const edits = editManifests(
      () => undefined,
      [
        {
          ...change('apps/configmap-fresh.json', [], 'fresh'),
          add: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'fresh' }, data: {} },
        },
      ],
    );
    assert.equal(
      edits.files.get('apps/configmap-fresh.json'),
      '{\n  "apiVersion": "v1",\n  "kind": "ConfigMap",\n  "metadata": {\n    "name": "fresh"\n  },\n  "data": {}\n}\n',
    );
  });
});

const LONG = `${'x'.repeat(50)} ${'y'.repeat(50)}`;

const YAML_FILE = `# Settings, tuned in the cluster.
apiVersion: v1
kind: ConfigMap
metadata:
    name: cm
    namespace: apps
data:
    a: one
    b:   spaced    # comment
    long: ${LONG}
    gone: bye   # going
    value: one   # tuned
    list: [a, b]   # the list
    last: z

---
# Another object, never touched.
apiVersion: v1
kind: ConfigMap
metadata: {name: other,   namespace: apps}
data: {long: ${LONG}}
`;

describe('write-back to a YAML manifest', () => {
  it('changes only the changed fields: every other byte stays', () => {
    // Act
    const after = edited(
      'cm.yaml',
      YAML_FILE,
      change('cm.yaml', [
        { path: '/data/a', value: 'two', base: 'one' },
        { path: '/data/c', value: 'yes' },
        { path: '/data/gone', base: 'bye' },
        { path: '/data/value', value: 'multi\nline', base: 'one' },
        { path: '/data/list', value: ['a', 'b', 'c'], base: ['a', 'b'] },
        { path: '/metadata/labels/team', value: 'ops' },
      ]),
    );

    // Assess: the spacing of `b`, the long line unfolded, the indentation of 4, the other
    // document; new lines in the document's own indentation, quoted for YAML 1.1.
    assert.equal(
      after,
      `# Settings, tuned in the cluster.
apiVersion: v1
kind: ConfigMap
metadata:
    name: cm
    namespace: apps
    labels:
        team: ops
data:
    a: two
    b:   spaced    # comment
    long: ${LONG}
    value: "multi\\nline"   # tuned
    list: # the list
        - a
        - b
        - c
    last: z
    c: "yes"

---
# Another object, never touched.
apiVersion: v1
kind: ConfigMap
metadata: {name: other,   namespace: apps}
data: {long: ${LONG}}
`,
    );
    const [cm] = parseAllDocuments(after, { version: '1.1' }).map((doc) => doc.toJS());
    assert.deepEqual(cm.data, {
      a: 'two',
      b: 'spaced',
      long: LONG,
      value: 'multi\nline',
      list: ['a', 'b', 'c'],
      last: 'z',
      c: 'yes',
    });
    assert.deepEqual(cm.metadata.labels, { team: 'ops' });
  });

  it('gives a key Git leaves empty the fields put under it', () => {
    const before =
      'kind: ConfigMap\nmetadata:\n  name: cm\n  namespace: apps\n  annotations:\ndata: {}\n';
    const after = edited(
      'cm.yaml',
      before,
      change('cm.yaml', [{ path: '/metadata/annotations/note', value: 'hello' }]),
    );
    assert.equal(
      after,
      'kind: ConfigMap\nmetadata:\n  name: cm\n  namespace: apps\n  annotations:\n    note: hello\ndata: {}\n',
    );
  });

  it('edits flow collections in flow style, and a file without a final line break', () => {
    const before =
      'kind: ConfigMap\nmetadata: {name: cm, namespace: apps}\ndata: { a: "1",   b: x }\nextra:\n  k: v';
    const after = edited(
      'cm.yaml',
      before,
      change('cm.yaml', [
        { path: '/data/a', base: '1' },
        { path: '/data/c', value: 'on' },
        { path: '/metadata/labels', value: { team: 'ops' } },
        { path: '/extra/k2', value: 'v2' },
      ]),
    );
    assert.equal(
      after,
      'kind: ConfigMap\nmetadata: {name: cm, namespace: apps, labels: {team: ops}}\ndata: { b: x, c: "on" }\nextra:\n  k: v\n  k2: v2',
    );
  });

  it('writes objects new to Git without folding long lines', () => {
    const add = (name: string): WriteBackChange => ({
      ...change('apps/cm.yaml', [], name),
      add: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { long: LONG } },
    });
    const edits = editManifests(() => undefined, [add('first'), add('second')]);
    assert.equal(
      edits.files.get('apps/cm.yaml'),
      `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: first\ndata:\n  long: ${LONG}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: second\ndata:\n  long: ${LONG}\n`,
    );
  });
});

describe('write-back of what Git already holds', () => {
  it('takes an object it added before (not synced yet) as written, not as a conflict', () => {
    // Prepare: the first drift check added it; the next one, before a sync, finds it new again.
    const add: WriteBackChange = {
      ...change('apps/configmap-made.yaml', [], 'made'),
      add: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'made' }, data: { a: '1' } },
    };
    const first = editManifests(() => undefined, [add]).files.get('apps/configmap-made.yaml');
    assert.ok(first !== undefined);

    // Act
    const again = editManifests(() => first, [add]);

    // Assess
    assert.deepEqual(again.conflicts, []);
    assert.deepEqual(again.written, ['ConfigMap/apps/made']);
    assert.equal(again.files.size, 0);
    // Someone else's different object under that name is Git's: a conflict, saying so.
    const other = editManifests(() => first.replace('a: "1"', 'a: "2"'), [add]);
    assert.deepEqual(
      other.conflicts.map((c) => c.message),
      ['apps/configmap-made.yaml already holds it, not as the cluster has it: Git wins'],
    );
  });

  it('says that an object rendered from a Helm template cannot be written back', () => {
    const template =
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\ndata:\n  value: {{ .Values.value | quote }}\n';
    const edits = editManifests(
      () => template,
      [change('charts/web/templates/cm.yaml', [{ path: '/data/value', value: 'x', base: 'y' }])],
    );
    assert.deepEqual(
      edits.refused.map((r) => r.error),
      [
        'charts/web/templates/cm.yaml is a Helm template, not ConfigMap/apps/cm as applied: objects rendered by Helm or kustomize cannot be written back; change it in the chart or its values',
      ],
    );
  });
});
