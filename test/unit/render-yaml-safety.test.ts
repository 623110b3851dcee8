import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadAll } from 'js-yaml';
import {
  ManifestParseError,
  ManifestTooLargeError,
  renderManifests,
  type RevisionFile,
  type ScopeResolver,
} from '../../src/render/index.ts';
import { formatManifests } from '../../src/render/manifests-yaml.ts';

const encoder = new TextEncoder();

function file(path: string, text: string): RevisionFile {
  return { path, content: encoder.encode(text) };
}

const scopeOf: ScopeResolver = (group, _version, kind) =>
  group === '' && kind === 'ConfigMap' ? 'Namespaced' : undefined;

const options = { scopeOf, defaultNamespace: 'apps' };

/** The classic exponential-entity document: 9 levels of 9 aliases, ~10^9 nodes expanded. */
function billionLaughs(): string {
  const lines = ['apiVersion: v1', 'kind: ConfigMap', 'metadata: {name: lol}', 'data:'];
  lines.push('  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]');
  const names = 'abcdefghi';
  for (let i = 1; i < names.length; i++) {
    const previous = names[i - 1] ?? '';
    lines.push(`  ${names[i]}: &${names[i]} [${Array(9).fill(`*${previous}`).join(',')}]`);
  }
  return `${lines.join('\n')}\n`;
}

describe('renderManifests YAML safety', () => {
  it('refuses a billion-laughs document before expanding it', () => {
    // Prepare
    const files = [file('bomb.yaml', billionLaughs())];

    // Act
    const act = () => renderManifests(files, options);

    // Assess
    assert.throws(act, (error: unknown) => {
      assert.ok(error instanceof ManifestTooLargeError);
      assert.equal(error.code, 'RENDER_TOO_LARGE');
      assert.equal(error.limit, 'maxAliasExpansion');
      assert.equal(error.file, 'bomb.yaml');
      assert.ok(error.line !== undefined && error.line >= 6, `line ${error.line}`);
      assert.match(error.message, /^bomb\.yaml:\d+: YAML aliases expand beyond the limit/);
      return true;
    });
  });

  it('counts alias expansion across files, not per file', () => {
    // Prepare: each file alone stays under the limit, together they do not.
    const text = (name: string) =>
      `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ${name}}\ndata:\n  a: &a "${'x'.repeat(60)}"\n  b: *a\n`;
    const files = [file('1.yaml', text('one')), file('2.yaml', text('two'))];

    // Act
    const act = () => renderManifests(files, { ...options, limits: { maxAliasExpansion: 100 } });

    // Assess
    assert.throws(act, /^ManifestTooLargeError: 2\.yaml:6: YAML aliases expand/);
  });

  it('refuses aliases nesting a document beyond the depth limit', () => {
    // Prepare
    const files = [
      file(
        'deep.yaml',
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\nd1: &a [[[[1]]]]\nd2: &b [[[[*a]]]]\nd3: [[[[*b]]]]\n',
      ),
    ];

    // Act
    const act = () => renderManifests(files, { ...options, limits: { maxDepth: 10 } });

    // Assess
    assert.throws(
      act,
      /^ManifestTooLargeError: deep\.yaml:1: document nests deeper than 10 levels/,
    );
  });

  it('expands aliases within the limit into independent copies', () => {
    // Prepare
    const files = [
      file(
        'anchors.yaml',
        [
          'apiVersion: v1',
          'kind: List',
          'items:',
          '  - &cm {apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: &data {k: v}}',
          '  - apiVersion: v1',
          '    kind: ConfigMap',
          '    metadata: {name: b}',
          '    data: *data',
          '',
        ].join('\n'),
      ),
    ];

    // Act
    const bundle = renderManifests(files, options);

    // Assess
    const [a, b] = bundle.objects;
    assert.deepEqual(a?.manifest.data, { k: 'v' });
    assert.notEqual(a?.manifest.data, b?.manifest.data);
    assert.deepEqual([a?.source.line, b?.source.line], [4, 5]);
  });

  it('refuses a !!js/function tag and a custom tag, naming line and column', () => {
    // Prepare
    const jsFunction = [
      file(
        'fn.yaml',
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  f: !!js/function "function () {}"\n',
      ),
    ];
    const custom = [
      file('custom.yml', 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: !custom x\n'),
    ];

    // Act
    const actFunction = () => renderManifests(jsFunction, options);
    const actCustom = () => renderManifests(custom, options);

    // Assess
    assert.throws(actFunction, (error: unknown) => {
      assert.ok(error instanceof ManifestParseError);
      assert.equal(error.code, 'RENDER_PARSE');
      assert.deepEqual([error.file, error.line, error.column], ['fn.yaml', 5, 6]);
      assert.match(error.message, /^fn\.yaml:5:6: unknown scalar tag .*js\/function/);
      return true;
    });
    assert.throws(
      actCustom,
      /^ManifestParseError: custom\.yml:4:9: unknown scalar tag !<!custom>$/,
    );
  });

  it('refuses other YAML 1.1 types that have no JSON form', () => {
    // Prepare
    const files = [
      file(
        'b.yaml',
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\nbinaryData:\n  b: !!binary aGk=\n',
      ),
    ];

    // Act
    const act = () => renderManifests(files, options);

    // Assess
    assert.throws(act, /b\.yaml:5:6: unknown scalar tag .*binary/);
  });

  it('refuses duplicate mapping keys in YAML and JSON, naming the key', () => {
    // Prepare
    const yaml = [
      file('d.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  name: b\n'),
    ];
    const json = [
      file(
        'd.json',
        '{"apiVersion": "v1", "kind": "ConfigMap",\n "metadata": {"name": "a"},\n "kind": "Secret"}',
      ),
    ];

    // Act
    const actYaml = () => renderManifests(yaml, options);
    const actJson = () => renderManifests(json, options);

    // Assess
    assert.throws(actYaml, /^ManifestParseError: d\.yaml:5:3: duplicated mapping key "name"$/);
    assert.throws(actJson, /^ManifestParseError: d\.json:3:3: duplicated mapping key "kind"$/);
  });

  it('reports a syntax error with its line and column', () => {
    // Prepare
    const files = [
      file('ok.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n'),
      file('s.yaml', 'apiVersion: v1\nkind: [ConfigMap\n'),
    ];

    // Act
    const act = () => renderManifests(files, options);

    // Assess
    assert.throws(act, (error: unknown) => {
      assert.ok(error instanceof ManifestParseError);
      assert.equal(error.file, 's.yaml');
      assert.equal(error.line, 3);
      return true;
    });
  });

  it('refuses a file that is not UTF-8', () => {
    // Prepare
    const content = new Uint8Array([
      ...encoder.encode('apiVersion: v1\nkind: "'),
      0xff,
      0x22,
      0x0a,
    ]);
    const files = [{ path: 'latin1.yaml', content }];

    // Act
    const act = () => renderManifests(files, options);

    // Assess
    assert.throws(act, /^ManifestParseError: latin1\.yaml:2:8: file is not valid UTF-8$/);
  });

  it('refuses a file over the per-file size limit', () => {
    // Prepare
    const files = [file('big.yaml', `# ${'x'.repeat(200)}\n`)];

    // Act
    const act = () => renderManifests(files, { ...options, limits: { maxFileBytes: 100 } });

    // Assess
    assert.throws(act, (error: unknown) => {
      assert.ok(error instanceof ManifestTooLargeError);
      assert.equal(error.limit, 'maxFileBytes');
      assert.equal(
        error.message,
        'big.yaml: file is 203 bytes, over the limit of 100 bytes per file',
      );
      return true;
    });
  });

  it('refuses a revision over the total size limit', () => {
    // Prepare
    const files = ['a', 'b', 'c'].map((name) => file(`${name}.yaml`, `# ${'x'.repeat(40)}\n`));

    // Act
    const act = () => renderManifests(files, { ...options, limits: { maxTotalBytes: 100 } });

    // Assess
    assert.throws(
      act,
      /^ManifestTooLargeError: c\.yaml: manifests reach 129 bytes with this file, over the limit of 100 bytes per revision$/,
    );
  });

  it('ignores oversized files outside subPath and of other types', () => {
    // Prepare
    const files = [
      file('deploy/cm.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n'),
      file('other/huge.yaml', 'x'.repeat(500)),
      file('deploy/blob.bin', 'x'.repeat(500)),
    ];

    // Act
    const bundle = renderManifests(files, {
      ...options,
      subPath: 'deploy',
      limits: { maxFileBytes: 100 },
    });

    // Assess
    assert.equal(bundle.objects.length, 1);
  });
});

describe('formatManifests source comments', () => {
  const configMap = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n';

  it('quotes a path with a line break, so it cannot add documents to the output', () => {
    // Prepare: a path committed to smuggle a Namespace into `render | kubectl apply -f -`.
    const path = 'deploy/z\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n---\n#.yaml';
    const bundle = renderManifests([file(path, configMap)], options);

    // Act
    const text = formatManifests(bundle);

    // Assess
    const documents = loadAll(text);
    assert.deepEqual(
      documents.map((d) => (d as { kind?: string } | null)?.kind),
      ['ConfigMap'],
    );
    assert.equal(text.split('\n')[1], `# Source: ${JSON.stringify(path)}:1`);
  });

  it('escapes what YAML 1.1 or a terminal takes as a line break or control, and keeps ordinary paths', () => {
    // Prepare: NEL, LS and PS end a line in YAML 1.1 (kubectl's parser); CR ends one anywhere.
    const paths = [
      'a\rb.yaml',
      'a\u0085b.yaml',
      'a\u2028b.yaml',
      'a\u2029b.yaml',
      'a\u001b[2Jb.yaml',
      'a\u202eb.yaml',
      '"quoted".yaml',
      'deploy/café web.yaml',
    ];
    const bundle = renderManifests(
      paths.map((path, i) => file(path, configMap.replace('web', `web${i}`))),
      options,
    );

    // Act
    const text = formatManifests(bundle);

    // Assess
    const comments = text.split('\n').filter((line) => line.startsWith('# Source: '));
    assert.deepEqual(comments.sort(), [
      '# Source: "\\"quoted\\".yaml":1',
      '# Source: "a\\rb.yaml":1',
      '# Source: "a\\u001b[2Jb.yaml":1',
      '# Source: "a\\u0085b.yaml":1',
      '# Source: "a\\u2028b.yaml":1',
      '# Source: "a\\u2029b.yaml":1',
      '# Source: "a\\u202eb.yaml":1',
      '# Source: deploy/café web.yaml:1',
    ]);
    for (const char of ['\r', '\u0085', '\u2028', '\u2029', '\u001b', '\u202e']) {
      assert.ok(!text.includes(char), JSON.stringify(char));
    }
    assert.equal(loadAll(text).length, paths.length);
  });
});
