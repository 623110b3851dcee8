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

/** The documents of `text` as the `yaml` library reads them, which must find no error. */
function documents(text: string): unknown[] {
  const parsed = parseAllDocuments(text);
  assert.deepEqual(
    parsed.flatMap((doc) => doc.errors.map((error) => error.message)),
    [],
  );
  return parsed.map((doc) => doc.toJS());
}

const HEAD = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: apps\n';

describe('write-back around what YAML writes in several ways', () => {
  it('keeps a comment after a value Git leaves empty apart from the value written there', () => {
    // Act: `replicas: # HPA` is null in Git; a number and a string of two lines fill it.
    const after = edited(
      'cm.yaml',
      `${HEAD}spec:\n  replicas: # HPA\n  x: 1\ndata:\n  a:   # c\n  b: x\n`,
      change('cm.yaml', [
        { path: '/spec/replicas', value: 3, base: null },
        { path: '/data/a', value: 'l1\nl2', base: null },
      ]),
    );

    // Assess: the comment stays a comment, with the spacing before it.
    assert.equal(
      after,
      `${HEAD}spec:\n  replicas: 3 # HPA\n  x: 1\ndata:\n  a: "l1\\nl2"   # c\n  b: x\n`,
    );
    assert.deepEqual(documents(after), [
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'cm', namespace: 'apps' },
        spec: { replicas: 3, x: 1 },
        data: { a: 'l1\nl2', b: 'x' },
      },
    ]);
  });

  it('writes the value of an explicit key (`? a`) as a pair, not into the key', () => {
    const after = edited(
      'cm.yaml',
      `${HEAD}data:\n  ? a\n  : "1"\n  b: x\n`,
      change('cm.yaml', [{ path: '/data/a', value: '2', base: '1' }]),
    );
    assert.equal(after, `${HEAD}data:\n  a: "2"\n  b: x\n`);
    assert.deepEqual(documents(after), [
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'cm', namespace: 'apps' },
        data: { a: '2', b: 'x' },
      },
    ]);
  });

  it('refuses a field written with a YAML anchor or alias, naming the field, and edits nothing', () => {
    const before = `${HEAD}data:\n  a: &x "1"\n  b: *x\nbase: &b\n  k: v\nextra: *b\nmerged:\n  <<: *b\n  own: w\n`;

    // Act: each of these would change other places too (or be read wrong through the alias).
    const edits = editManifests(
      () => before,
      [
        change('cm.yaml', [
          { path: '/data/a', value: '2', base: '1' },
          { path: '/data/b', value: '2', base: '1' },
          { path: '/extra/k', value: '2', base: 'v' },
          { path: '/merged/k', value: '2', base: 'v' },
        ]),
      ],
    );

    // Assess
    const shared =
      ': a YAML anchor and its aliases share one value, so it is not written back; change it in Git';
    assert.deepEqual(
      edits.conflicts.map((c) => `${c.path}: ${c.message}`),
      [
        `/data/a: Git writes it with the anchor &x, used by *x${shared}`,
        `/data/b: Git writes it through the alias *x${shared}`,
        `/extra/k: Git writes it through the alias *b${shared}`,
        `/merged/k: Git writes it through a merge key (<<: *alias)${shared}`,
      ],
    );
    assert.equal(edits.files.size, 0);

    // A field of the same map that is its own is written.
    const own = edited(
      'cm.yaml',
      before,
      change('cm.yaml', [{ path: '/merged/own', value: 'z', base: 'w' }]),
    );
    assert.equal(own, before.replace('own: w', 'own: z'));
  });

  it('refuses an object of a Helm template that parses as YAML, without editing it', () => {
    const file = 'chart/templates/cm.yaml';
    const template = `${HEAD}data:\n  a: {{ .Values.a }}\n  c: fixed\n`;
    assert.deepEqual(documents(template).length, 1, 'the template parses as YAML');

    // Act: a literal field and a templated one.
    const edits = editManifests(
      (path) => (path === file ? template : undefined),
      [
        change(file, [
          { path: '/data/c', value: 'changed', base: 'fixed' },
          { path: '/data/a', value: 'y', base: 'x' },
        ]),
      ],
    );

    // Assess: the template untouched, and no "Git changed it" conflict.
    assert.equal(edits.files.size, 0);
    assert.deepEqual(edits.conflicts, []);
    assert.deepEqual(edits.written, []);
    assert.deepEqual(
      edits.refused.map((r) => r.error),
      [
        'chart/templates/cm.yaml is a Helm template, not ConfigMap/apps/cm as applied: objects rendered by Helm or kustomize cannot be written back; change it in the chart or its values',
      ],
    );
  });

  it('breaks the lines it writes as a CRLF file does', () => {
    const crlf = (text: string) => text.replace(/\n/g, '\r\n');
    const after = edited(
      'cm.yaml',
      crlf(`${HEAD}data:\n  a: "1"\n  gone: x\n  b: x\n`),
      change('cm.yaml', [
        { path: '/data/a', value: 'l1\nl2\n', base: '1' },
        { path: '/data/gone', base: 'x' },
        { path: '/data/c', value: { k: 'v' } },
      ]),
    );
    assert.equal(after, crlf(`${HEAD}data:\n  a: |\n    l1\n    l2\n  b: x\n  c:\n    k: v\n`));
    assert.deepEqual(documents(after), [
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'cm', namespace: 'apps' },
        data: { a: 'l1\nl2\n', b: 'x', c: { k: 'v' } },
      },
    ]);

    // An object new to Git, added to the file as a document of its own.
    const added = editManifests(
      () => after,
      [
        {
          ...change('cm.yaml', [], 'fresh'),
          add: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'fresh' } },
        },
      ],
    );
    assert.equal(
      added.files.get('cm.yaml'),
      `${after}${crlf('---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fresh\n')}`,
    );
  });

  it('indents what it adds to a JSON file with its tabs', () => {
    const before =
      '{\n\t"apiVersion": "v1",\n\t"kind": "ConfigMap",\n\t"metadata": {\n\t\t"name": "cm",\n\t\t"namespace": "apps"\n\t},\n\t"data": {\n\t\t"a": "1"\n\t}\n}\n';
    const after = edited(
      'cm.json',
      before,
      change('cm.json', [
        { path: '/data/b', value: { x: [1, 2] } },
        { path: '/metadata/labels/l', value: 'v' },
      ]),
    );
    assert.equal(
      after,
      '{\n\t"apiVersion": "v1",\n\t"kind": "ConfigMap",\n\t"metadata": {\n\t\t"name": "cm",\n\t\t"namespace": "apps",\n\t\t"labels": {\n\t\t\t"l": "v"\n\t\t}\n\t},\n\t"data": {\n\t\t"a": "1",\n\t\t"b": {\n\t\t\t"x": [\n\t\t\t\t1,\n\t\t\t\t2\n\t\t\t]\n\t\t}\n\t}\n}\n',
    );
    assert.deepEqual(JSON.parse(after), {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'cm', namespace: 'apps', labels: { l: 'v' } },
      data: { a: '1', b: { x: [1, 2] } },
    });
    assert.deepEqual(documents(after), [JSON.parse(after)]);
  });
});
