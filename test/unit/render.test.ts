import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeSource } from '../../src/render/subject.ts';
import {
  DuplicateObjectError,
  InvalidManifestError,
  MissingNamespaceError,
  RenderInputError,
  UnknownResourceError,
  renderManifests,
  type ResourceScope,
  type RevisionFile,
  type ScopeResolver,
} from '../../src/render/index.ts';

const encoder = new TextEncoder();

function file(path: string, text: string): RevisionFile {
  return { path, content: encoder.encode(text) };
}

/** A fake of discovery: the built-in kinds the tests use. */
const CLUSTER: Record<string, ResourceScope> = {
  '/v1/ConfigMap': 'Namespaced',
  '/v1/Secret': 'Namespaced',
  '/v1/Service': 'Namespaced',
  '/v1/Namespace': 'Cluster',
  'apps/v1/Deployment': 'Namespaced',
  'rbac.authorization.k8s.io/v1/ClusterRole': 'Cluster',
  'apiextensions.k8s.io/v1/CustomResourceDefinition': 'Cluster',
};
const scopeOf: ScopeResolver = (group, version, kind) => CLUSTER[`${group}/${version}/${kind}`];

const configMap = (name: string, extra = ''): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n${extra}`;

describe('renderManifests', () => {
  it('reads every document of a multi-document file and skips empty ones', () => {
    // Prepare
    const files = [
      file(
        'app.yaml',
        `# leading comment\n---\n${configMap('a')}---\n---\n\n${configMap('b')}---\n`,
      ),
    ];

    // Act
    const bundle = renderManifests(files, { scopeOf, defaultNamespace: 'apps' });

    // Assess
    assert.deepEqual(
      bundle.objects.map((o) => [o.subject, o.source.line]),
      [
        ['ConfigMap/apps/a', 3],
        ['ConfigMap/apps/b', 10],
      ],
    );
  });

  it('reads .yaml, .yml and .json files recursively and ignores other files', () => {
    // Prepare
    const files = [
      file('z/one.yml', configMap('one')),
      file(
        'a/b/two.json',
        '{\n  "apiVersion": "v1",\n  "kind": "ConfigMap",\n  "metadata": {"name": "two"}\n}\n',
      ),
      file('three.YAML', configMap('three')),
      file('README.md', 'not: [a manifest'),
      file('script.sh', 'echo hi'),
    ];

    // Act
    const bundle = renderManifests(files, { scopeOf, defaultNamespace: 'apps' });

    // Assess
    assert.deepEqual(
      bundle.objects.map((o) => `${o.source.file}:${o.source.line} ${o.name}`),
      ['z/one.yml:1 one', 'three.YAML:1 three', 'a/b/two.json:1 two'],
    );
  });

  it('keeps the manifest as written and fills in the default namespace', () => {
    // Prepare
    const files = [file('cm.yaml', configMap('settings', 'data:\n  key: "value"\n'))];

    // Act
    const [object] = renderManifests(files, { scopeOf, defaultNamespace: 'apps' }).objects;

    // Assess
    assert.deepEqual(object, {
      manifest: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'settings', namespace: 'apps' },
        data: { key: 'value' },
      },
      group: '',
      version: 'v1',
      kind: 'ConfigMap',
      name: 'settings',
      namespace: 'apps',
      subject: 'ConfigMap/apps/settings',
      source: { file: 'cm.yaml', line: 1 },
    });
  });

  it('keeps a namespace written on the object over the default one', () => {
    // Prepare
    const files = [file('cm.yaml', configMap('settings', '  namespace: other\n'))];

    // Act
    const [object] = renderManifests(files, { scopeOf, defaultNamespace: 'apps' }).objects;

    // Assess
    assert.equal(object?.subject, 'ConfigMap/other/settings');
  });

  it('refuses a namespaced object without namespace when no default is set', () => {
    // Prepare
    const files = [file('deploy/cm.yaml', `---\n${configMap('settings')}`)];

    // Act
    const act = () => renderManifests(files, { scopeOf });

    // Assess
    assert.throws(act, (error: unknown) => {
      assert.ok(error instanceof MissingNamespaceError);
      assert.equal(error.code, 'RENDER_NO_NAMESPACE');
      assert.match(error.message, /^deploy\/cm\.yaml:2: ConfigMap\/settings: /);
      return true;
    });
  });

  it('drops the namespace of a cluster-scoped object', () => {
    // Prepare
    const files = [
      file(
        'ns.yaml',
        'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: apps\n  namespace: oops\n',
      ),
    ];

    // Act
    const [object] = renderManifests(files, { scopeOf, defaultNamespace: 'apps' }).objects;

    // Assess
    assert.equal(object?.subject, 'Namespace/apps');
    assert.equal(object?.namespace, undefined);
    assert.deepEqual(object?.manifest.metadata, { name: 'apps' });
  });

  it('flattens a List and a typed list, giving each item its own line', () => {
    // Prepare
    const files = [
      file(
        'lists.yaml',
        [
          'apiVersion: v1',
          'kind: List',
          'items:',
          '  - apiVersion: v1',
          '    kind: ConfigMap',
          '    metadata: {name: first}',
          '  - apiVersion: v1',
          '    kind: Secret',
          '    metadata: {name: second}',
          '---',
          'apiVersion: v1',
          'kind: ConfigMapList',
          'items: [{apiVersion: v1, kind: ConfigMap, metadata: {name: third}}]',
          '',
        ].join('\n'),
      ),
    ];

    // Act
    const bundle = renderManifests(files, { scopeOf, defaultNamespace: 'apps' });

    // Assess
    assert.deepEqual(
      bundle.objects.map((o) => [o.subject, o.source.line]),
      [
        ['ConfigMap/apps/first', 4],
        ['ConfigMap/apps/third', 13],
        ['Secret/apps/second', 7],
      ],
    );
  });

  it('names the file, line and missing field when metadata.name is missing', () => {
    // Prepare
    const files = [
      file('ok.yaml', configMap('fine')),
      file(
        'bad.yaml',
        `${configMap('fine2')}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels: {a: b}\n`,
      ),
    ];

    // Act
    const act = () => renderManifests(files, { scopeOf, defaultNamespace: 'apps' });

    // Assess
    assert.throws(act, (error: unknown) => {
      assert.ok(error instanceof InvalidManifestError);
      assert.equal(error.code, 'RENDER_INVALID');
      assert.equal(error.file, 'bad.yaml');
      assert.equal(error.line, 6);
      assert.match(error.message, /^bad\.yaml:6: ConfigMap\/<unnamed>: metadata\.name is missing$/);
      return true;
    });
  });

  it('names the missing apiVersion and kind', () => {
    // Prepare
    const noApiVersion = [file('a.yaml', 'kind: ConfigMap\nmetadata: {name: x}\n')];
    const noKind = [file('a.yaml', 'apiVersion: v1\nkind: ""\nmetadata: {name: x}\n')];

    // Act
    const actNoApiVersion = () => renderManifests(noApiVersion, { scopeOf });
    const actNoKind = () => renderManifests(noKind, { scopeOf });

    // Assess
    assert.throws(actNoApiVersion, /^InvalidManifestError: a\.yaml:1: apiVersion is missing$/);
    assert.throws(
      actNoKind,
      /^InvalidManifestError: a\.yaml:1: kind must be a non-empty string, not a string$/,
    );
  });

  it('refuses a document that is not a mapping beside an object', () => {
    // Prepare
    const sequence = [file('s.yaml', `${configMap('x')}---\n- a\n- b\n`)];
    const scalar = [
      file(
        't.yaml',
        `${configMap('y')}---
just a string
`,
      ),
    ];

    // Act
    const actSequence = () => renderManifests(sequence, { scopeOf, defaultNamespace: 'apps' });
    const actScalar = () => renderManifests(scalar, { scopeOf, defaultNamespace: 'apps' });

    // Assess
    assert.throws(
      actSequence,
      /s\.yaml:6: document must be a mapping \(a Kubernetes object\), not a sequence/,
    );
    assert.throws(actScalar, /t\.yaml:6: document must be a mapping .* not a string/);
  });

  it('refuses a file whose objects are written as a sequence, rather than skip it', () => {
    // Prepare: YAML items, and a JSON array
    const yaml = [file('a.yaml', `- ${configMap('x').trimEnd().replaceAll('\n', '\n  ')}\n`)];
    const json = [
      file(
        'b.json',
        JSON.stringify([{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'y' } }]),
      ),
    ];

    // Act
    const actYaml = () => renderManifests(yaml, { scopeOf, defaultNamespace: 'apps' });
    const actJson = () => renderManifests(json, { scopeOf, defaultNamespace: 'apps' });

    // Assess
    for (const [act, name] of [
      [actYaml, 'a\\.yaml'],
      [actJson, 'b\\.json'],
    ] as const) {
      assert.throws(
        act,
        new RegExp(
          `${name}:1: document must be a mapping .* not a sequence; write each object as a document of its own`,
        ),
      );
    }
  });

  it('refuses an apiVersion with more than one slash', () => {
    // Prepare
    const files = [file('a.yaml', 'apiVersion: a/b/c\nkind: X\nmetadata: {name: x}\n')];

    // Act
    const act = () => renderManifests(files, { scopeOf });

    // Assess
    assert.throws(act, /a\.yaml:1: X\/x: apiVersion "a\/b\/c" must be/);
  });

  it('refuses a kind the cluster does not serve and no CRD in the revision defines', () => {
    // Prepare
    const files = [
      file('w.yaml', 'apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n'),
    ];

    // Act
    const act = () => renderManifests(files, { scopeOf, defaultNamespace: 'apps' });

    // Assess
    assert.throws(act, (error: unknown) => {
      assert.ok(error instanceof UnknownResourceError);
      assert.equal(error.code, 'RENDER_UNKNOWN_RESOURCE');
      assert.equal(
        error.message,
        'w.yaml:1: Widget/w: no API resource for example.com/v1 Widget; is its CRD installed?',
      );
      return true;
    });
  });

  it('scopes a custom resource by the CRD in the same revision, over discovery', () => {
    // Prepare
    const crd = [
      'apiVersion: apiextensions.k8s.io/v1',
      'kind: CustomResourceDefinition',
      'metadata: {name: widgets.example.com}',
      'spec:',
      '  group: example.com',
      '  scope: Cluster',
      '  names: {kind: Widget, plural: widgets}',
      '  versions: [{name: v1, served: true, storage: true}]',
      '',
    ].join('\n');
    const files = [
      file('crds/widget.yaml', crd),
      file(
        'widget.yaml',
        'apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: ignored}\n',
      ),
    ];
    // Discovery still knows the kind as namespaced (an older CRD): the revision's CRD must win.
    const staleDiscovery: ScopeResolver = (group, version, kind) =>
      group === 'example.com' ? 'Namespaced' : scopeOf(group, version, kind);

    // Act
    const bundle = renderManifests(files, { scopeOf: staleDiscovery, defaultNamespace: 'apps' });

    // Assess
    assert.deepEqual(
      bundle.objects.map((o) => [o.subject, o.namespace]),
      [
        ['CustomResourceDefinition/widgets.example.com', undefined],
        ['Widget/w', undefined],
      ],
    );
    assert.deepEqual(bundle.objects[1]?.manifest.metadata, { name: 'w' });
  });

  it('refuses a custom resource in a version its CRD in the revision does not list', () => {
    // Prepare
    const files = [
      file(
        'crd.yaml',
        'apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\n' +
          'spec: {group: example.com, scope: Namespaced, names: {kind: Widget}, versions: [{name: v1}]}\n',
      ),
      file('w.yaml', 'apiVersion: example.com/v2\nkind: Widget\nmetadata: {name: w}\n'),
    ];

    // Act
    const act = () => renderManifests(files, { scopeOf, defaultNamespace: 'apps' });

    // Assess
    assert.throws(
      act,
      /^UnknownResourceError: w\.yaml:1: Widget\/w: no API resource for example\.com\/v2 Widget; CustomResourceDefinition\/widgets\.example\.com \(crd\.yaml:1\) serves only v1$/,
    );
  });

  it('refuses a CRD with an invalid scope', () => {
    // Prepare
    const files = [
      file(
        'crd.yaml',
        'apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\n' +
          'spec: {group: example.com, scope: Global, names: {kind: Widget}, versions: [{name: v1}]}\n',
      ),
    ];

    // Act
    const act = () => renderManifests(files, { scopeOf });

    // Assess
    assert.throws(
      act,
      /crd\.yaml:1: CustomResourceDefinition\/widgets\.example\.com: spec\.scope must be/,
    );
  });

  it('refuses duplicates across two files, naming both files and lines', () => {
    // Prepare
    const files = [
      file('a.yaml', configMap('settings')),
      file('b.yaml', `${configMap('other')}---\n${configMap('settings', '  namespace: apps\n')}`),
    ];

    // Act
    const act = () => renderManifests(files, { scopeOf, defaultNamespace: 'apps' });

    // Assess
    assert.throws(act, (error: unknown) => {
      assert.ok(error instanceof DuplicateObjectError);
      assert.equal(error.code, 'RENDER_DUPLICATE');
      assert.deepEqual(error.first, { file: 'a.yaml', line: 1 });
      assert.deepEqual(error.second, { file: 'b.yaml', line: 6 });
      assert.equal(
        error.message,
        'b.yaml:6: ConfigMap/apps/settings: duplicate object, also defined at a.yaml:1',
      );
      return true;
    });
  });

  it('accepts the same name in another namespace, kind or group', () => {
    // Prepare
    const files = [
      file('a.yaml', `${configMap('x')}---\n${configMap('x', '  namespace: other\n')}`),
      file('b.yaml', 'apiVersion: v1\nkind: Secret\nmetadata: {name: x}\n'),
    ];

    // Act
    const bundle = renderManifests(files, { scopeOf, defaultNamespace: 'apps' });

    // Assess
    assert.deepEqual(
      bundle.objects.map((o) => o.subject),
      ['ConfigMap/apps/x', 'ConfigMap/other/x', 'Secret/apps/x'],
    );
  });

  it('orders objects by group, kind, namespace and name', () => {
    // Prepare
    const files = [
      file('1.yaml', 'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n'),
      file('2.yaml', configMap('b')),
      file('3.yaml', 'apiVersion: v1\nkind: Namespace\nmetadata: {name: apps}\n'),
      file('4.yaml', configMap('a', '  namespace: zz\n')),
      file('5.yaml', configMap('c', '  namespace: aa\n')),
    ];

    // Act
    const bundle = renderManifests(files, { scopeOf, defaultNamespace: 'apps' });

    // Assess
    assert.deepEqual(
      bundle.objects.map((o) => o.subject),
      [
        'ConfigMap/aa/c',
        'ConfigMap/apps/b',
        'ConfigMap/zz/a',
        'Namespace/apps',
        'Deployment/apps/web',
      ],
    );
  });

  it('renders an empty revision as an empty bundle (allowEmpty is decided elsewhere)', () => {
    // Prepare
    const files = [file('empty.yaml', '---\n# nothing\n'), file('README.md', 'hi')];

    // Act
    const bundle = renderManifests(files, { scopeOf });

    // Assess
    assert.deepEqual(bundle.objects, []);
  });
});

describe('renderManifests subPath', () => {
  const files = [
    file('deploy/prod/app.yaml', configMap('prod')),
    file('deploy/prod/nested/more.yml', configMap('nested')),
    file('deploy/production/app.yaml', configMap('production')),
    file('deploy/staging/app.yaml', configMap('staging')),
    file('root.yaml', configMap('root')),
  ];

  it('reads only the files under subPath, recursively', () => {
    // Act
    const bundle = renderManifests(files, {
      scopeOf,
      defaultNamespace: 'apps',
      subPath: 'deploy/prod',
    });

    // Assess
    assert.deepEqual(
      bundle.objects.map((o) => o.source.file),
      ['deploy/prod/nested/more.yml', 'deploy/prod/app.yaml'],
    );
  });

  it('accepts ./ prefixes and trailing slashes', () => {
    // Act
    const bundle = renderManifests(files, {
      scopeOf,
      defaultNamespace: 'apps',
      subPath: './deploy/prod/',
    });

    // Assess
    assert.equal(bundle.objects.length, 2);
  });

  it('reads the whole repository by default', () => {
    // Act
    const bundle = renderManifests(files, { scopeOf, defaultNamespace: 'apps' });

    // Assess
    assert.equal(bundle.objects.length, 5);
  });

  it('refuses a subPath leaving the repository or absolute', () => {
    // Prepare
    const subPaths = ['../other', 'deploy/../../etc', '/etc', 'C:/x', 'deploy\\prod'];

    for (const subPath of subPaths) {
      // Act
      const act = () => renderManifests(files, { scopeOf, subPath });

      // Assess
      assert.throws(act, RenderInputError, subPath);
    }
  });

  it('refuses a subPath that does not exist in the revision', () => {
    // Act
    const act = () => renderManifests(files, { scopeOf, subPath: 'deploy/dev' });

    // Assess
    assert.throws(
      act,
      /RenderInputError: subPath "deploy\/dev" has no files left to render: .* or it does not exist in the revision$/,
    );
  });
});

describe('renderManifests scalars', () => {
  it('reads legacy octal integers as kubectl and Flux do, and honours merge keys', () => {
    // Prepare
    const files = [
      file(
        'cm.yaml',
        [
          'apiVersion: v1',
          'kind: ConfigMap',
          'metadata:',
          '  name: x',
          '  labels: &labels {app: web}',
          '  annotations:',
          '    <<: *labels',
          '    extra: "yes"',
          'spec: {mode: 0644, plain: 644, octal: 0o644, flag: yes, date: 2024-01-01}',
          '',
        ].join('\n'),
      ),
    ];

    // Act
    const [object] = renderManifests(files, { scopeOf, defaultNamespace: 'apps' }).objects;

    // Assess
    assert.deepEqual(object?.manifest.spec, {
      mode: 420,
      plain: 644,
      octal: 420,
      flag: 'yes',
      date: '2024-01-01',
    });
    assert.deepEqual((object?.manifest.metadata as Record<string, unknown>).annotations, {
      app: 'web',
      extra: 'yes',
    });
  });

  it('refuses numbers JSON cannot carry exactly', () => {
    // Prepare
    const infinite = [file('a.yaml', `${configMap('x')}data:\n  n: .inf\n`)];
    const huge = [file('a.yaml', `${configMap('x')}spec:\n  n: 12345678901234567890\n`)];

    // Act
    const actInfinite = () => renderManifests(infinite, { scopeOf, defaultNamespace: 'apps' });
    const actHuge = () => renderManifests(huge, { scopeOf, defaultNamespace: 'apps' });

    // Assess
    assert.throws(actInfinite, /a\.yaml:1: ConfigMap\/x: \/data\/n: Infinity is not a JSON number/);
    assert.throws(actHuge, /a\.yaml:1: ConfigMap\/x: \/spec\/n: integer .* is too large/);
  });
});

describe('describeSource', () => {
  it('names the line in a manifest, and only the file where the line is not the file’s', () => {
    assert.equal(describeSource({ file: 'apps/web.yaml', line: 12 }), 'apps/web.yaml:12');
    assert.equal(describeSource({ file: 'apps/web.yaml', line: 1 }), 'apps/web.yaml');
    // kustomize's build output is placed at the kustomization, at its own line numbers.
    assert.equal(
      describeSource({ file: 'overlays/prod/kustomization.yaml', line: 847 }),
      'overlays/prod/kustomization.yaml',
    );
  });
});
