import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  BUNDLE_FORMAT,
  InvalidBundleError,
  bundleDigest,
  parseBundle,
  renderManifests,
  serializeBundle,
  type RenderedBundle,
  type ResourceScope,
  type RevisionFile,
  type ScopeResolver,
} from '../../src/render/index.ts';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function file(path: string, text: string): RevisionFile {
  return { path, content: encoder.encode(text) };
}

const SCOPES: Record<string, ResourceScope> = {
  '/ConfigMap': 'Namespaced',
  'apps/Deployment': 'Namespaced',
  '/Namespace': 'Cluster',
};
const scopeOf: ScopeResolver = (group, _version, kind) => SCOPES[`${group}/${kind}`];

const FILES = [
  file(
    'app/deploy.yaml',
    'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels: {z: "1", a: "2"}\nspec:\n  replicas: 2\n',
  ),
  file(
    'app/cm.yaml',
    'kind: ConfigMap\napiVersion: v1\nmetadata: {name: settings}\ndata: {b: "2", a: "1"}\n',
  ),
  file('ns.json', '{"metadata": {"name": "apps"}, "kind": "Namespace", "apiVersion": "v1"}'),
];

function render(files: readonly RevisionFile[] = FILES): RenderedBundle {
  return renderManifests(files, { scopeOf, defaultNamespace: 'apps' });
}

/** Edits the JSON of serialized bytes and re-serializes it the canonical way, as a tamperer would. */
function tamper(
  bytes: Uint8Array,
  edit: (data: { objects: Record<string, unknown>[] }) => void,
): Uint8Array {
  const data = JSON.parse(decoder.decode(bytes)) as { objects: Record<string, unknown>[] };
  edit(data);
  return encoder.encode(JSON.stringify(data));
}

describe('serializeBundle', () => {
  it('writes canonical JSON: sorted objects, sorted keys, no whitespace', () => {
    // Prepare
    const bundle = render();

    // Act
    const text = decoder.decode(serializeBundle(bundle));

    // Assess
    assert.ok(
      text.startsWith(`{"format":"${BUNDLE_FORMAT}","objects":[{"group":"","kind":"ConfigMap",`),
    );
    assert.ok(
      text.includes('"manifest":{"apiVersion":"v1","data":{"a":"1","b":"2"},"kind":"ConfigMap"'),
    );
    assert.ok(!/\s/.test(text));
    const subjects = [...text.matchAll(/"subject":"([^"]+)"/g)].map((match) => match[1]);
    assert.deepEqual(subjects, [
      'ConfigMap/apps/settings',
      'Namespace/apps',
      'Deployment/apps/web',
    ]);
  });

  it('gives byte-identical output and digest for the same files in any order', () => {
    // Prepare
    const reordered = [...FILES].reverse();

    // Act
    const first = serializeBundle(render());
    const second = serializeBundle(render(reordered));

    // Assess
    assert.deepEqual(first, second);
    assert.equal(bundleDigest(first), bundleDigest(second));
  });

  it('gives a different digest when one value changes', () => {
    // Prepare
    const changed = FILES.map((f) =>
      f.path === 'app/deploy.yaml'
        ? file(f.path, decoder.decode(f.content).replace('2\n', '3\n'))
        : f,
    );

    // Act
    const before = bundleDigest(serializeBundle(render()));
    const after = bundleDigest(serializeBundle(render(changed)));

    // Assess
    assert.notEqual(before, after);
  });
});

describe('bundleDigest', () => {
  it('returns sha256:<hex> of the bytes', () => {
    // Act
    const digest = bundleDigest(encoder.encode('abc'));

    // Assess
    assert.equal(digest, 'sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});

describe('parseBundle', () => {
  it('reads back what serializeBundle wrote', () => {
    // Prepare
    const bundle = render();
    const bytes = serializeBundle(bundle);

    // Act
    const parsed = parseBundle(bytes, bundleDigest(bytes));

    // Assess
    assert.deepEqual(parsed, bundle);
    assert.deepEqual(serializeBundle(parsed), bytes);
  });

  it('reads back an empty bundle', () => {
    // Prepare
    const bytes = serializeBundle({ objects: [] });

    // Act
    const parsed = parseBundle(bytes);

    // Assess
    assert.deepEqual(parsed, { objects: [] });
  });

  it('rejects bytes that do not match the expected digest', () => {
    // Prepare
    const bytes = serializeBundle(render());
    const digest = bundleDigest(bytes);
    // Same length and still valid JSON: only the digest can tell.
    const altered = encoder.encode(decoder.decode(bytes).replace('"replicas":2', '"replicas":9'));

    // Act
    const act = () => parseBundle(altered, digest);

    // Assess
    assert.throws(act, (error: unknown) => {
      assert.ok(error instanceof InvalidBundleError);
      assert.equal(error.code, 'RENDER_BUNDLE_INVALID');
      assert.match(error.message, /^bundle digest is sha256:[0-9a-f]{64}, expected sha256:/);
      return true;
    });
  });

  it('rejects malformed bytes', () => {
    // Prepare
    const cases: [string, Uint8Array][] = [
      ['not JSON', encoder.encode('{"format":')],
      ['not UTF-8', new Uint8Array([0x7b, 0xff, 0x7d])],
      ['wrong format', encoder.encode('{"format":"other/v9","objects":[]}')],
      ['not an object', encoder.encode('[]')],
      ['objects missing', encoder.encode(`{"format":"${BUNDLE_FORMAT}"}`)],
    ];

    for (const [label, bytes] of cases) {
      // Act
      const act = () => parseBundle(bytes);

      // Assess
      assert.throws(act, InvalidBundleError, label);
    }
  });

  it('rejects a manifest altered without its fields', () => {
    // Prepare
    const bytes = tamper(serializeBundle(render()), (data) => {
      (data.objects[0]?.manifest as { metadata: { name: string } }).metadata.name = 'evil';
    });

    // Act
    const act = () => parseBundle(bytes);

    // Assess
    assert.throws(
      act,
      /InvalidBundleError: bundle object 0 \(ConfigMap\/apps\/settings\): manifest metadata\.name does not match/,
    );
  });

  it('rejects a namespace moved out of the manifest', () => {
    // Prepare
    const bytes = tamper(serializeBundle(render()), (data) => {
      delete data.objects[2]?.namespace;
      if (data.objects[2] !== undefined) data.objects[2].subject = 'Deployment/web';
    });

    // Act
    const act = () => parseBundle(bytes);

    // Assess
    assert.throws(act, /manifest metadata\.namespace does not match/);
  });

  it('rejects unexpected fields, bad lines and a wrong subject', () => {
    // Prepare
    const base = serializeBundle(render());
    const cases: [string, Uint8Array][] = [
      ['extra field', tamper(base, (data) => Object.assign(data.objects[0] ?? {}, { extra: 1 }))],
      [
        'zero line',
        tamper(base, (data) =>
          Object.assign(data.objects[0] ?? {}, { source: { file: 'a', line: 0 } }),
        ),
      ],
      [
        'wrong subject',
        tamper(base, (data) => Object.assign(data.objects[0] ?? {}, { subject: 'ConfigMap/x/y' })),
      ],
      [
        'manifest not an object',
        tamper(base, (data) => Object.assign(data.objects[0] ?? {}, { manifest: [] })),
      ],
    ];

    for (const [label, bytes] of cases) {
      // Act
      const act = () => parseBundle(bytes);

      // Assess
      assert.throws(act, InvalidBundleError, label);
    }
  });

  it('rejects reordered, duplicated or non-canonical objects', () => {
    // Prepare
    const base = serializeBundle(render());
    const cases: [string, Uint8Array][] = [
      ['reordered', tamper(base, (data) => data.objects.reverse())],
      ['duplicated', tamper(base, (data) => data.objects.splice(1, 0, data.objects[0] ?? {}))],
      ['whitespace', encoder.encode(`${decoder.decode(base)}\n`)],
    ];

    for (const [label, bytes] of cases) {
      // Act
      const act = () => parseBundle(bytes);

      // Assess
      assert.throws(act, InvalidBundleError, label);
    }
  });
});
