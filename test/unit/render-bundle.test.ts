import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import * as z from 'zod/mini';
import { canonicalJson, isCanonicalJson } from '../../src/render/canonical-json.ts';
import {
  BUNDLE_FORMAT,
  InvalidBundleError,
  bundleDigest,
  parseBundle,
  parseRevision,
  placeBundle,
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

describe('placeBundle', () => {
  it('places a copy: the bundle it was given keeps its namespaces as written', () => {
    // Prepare
    const parsed = parseRevision(FILES);
    const before = structuredClone(parsed);

    // Act
    const placed = placeBundle(parsed, { scopeOf, defaultNamespace: 'apps' });

    // Assess
    assert.deepEqual(parsed, before);
    const settings = placed.objects.find((object) => object.name === 'settings');
    assert.equal((settings?.manifest.metadata as { namespace?: string }).namespace, 'apps');
    const namespace = placed.objects.find((object) => object.kind === 'Namespace');
    assert.equal((namespace?.manifest.metadata as { namespace?: string }).namespace, undefined);
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

/**
 * The zod schema parseBundle checked the shape with before it was written
 * by hand (src/render/parse-bundle.ts says why): the oracle of which
 * documents have the expected shape.
 */
const nonEmpty = z.string().check(z.minLength(1));
const oracleSchema = z.strictObject({
  format: z.literal(BUNDLE_FORMAT),
  capabilities: z.optional(nonEmpty),
  objects: z.array(
    z.strictObject({
      group: z.string(),
      version: nonEmpty,
      kind: nonEmpty,
      name: nonEmpty,
      namespace: z.optional(nonEmpty),
      subject: nonEmpty,
      source: z.strictObject({ file: nonEmpty, line: z.int().check(z.positive()) }),
      manifest: z.custom<object>(
        (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
      ),
    }),
  ),
  skipped: z.optional(z.array(z.strictObject({ file: nonEmpty, reason: nonEmpty }))),
  encryptedSources: z.optional(
    z.array(
      z.strictObject({
        path: nonEmpty,
        format: z.enum(['yaml', 'json', 'dotenv', 'binary']),
        content: nonEmpty,
      }),
    ),
  ),
  substituted: z.optional(z.literal(true)),
});

describe('parseBundle against its oracles', () => {
  const document = JSON.parse(
    decoder.decode(
      serializeBundle({
        ...render(),
        capabilities: 'sha256:abc',
        skipped: [{ file: 'README.md', reason: 'not a manifest' }],
        encryptedSources: [{ path: 'app/cm.yaml', format: 'yaml', content: 'ENC' }],
        substituted: true,
      }),
    ),
  ) as Record<string, unknown>;

  /** Every path in the document down to the objects' fields (manifests are checked apart). */
  function paths(value: unknown, at: string[] = []): string[][] {
    if (at.at(-1) === 'manifest' || value === null || typeof value !== 'object') return [at];
    const keys = Array.isArray(value) ? value.map((_, i) => String(i)) : Object.keys(value);
    return [
      at,
      ...keys.flatMap((key) => paths((value as Record<string, unknown>)[key], [...at, key])),
    ];
  }
  const replacements = [undefined, null, 0, -1, 1.5, 3, '', 'x', [], {}, true, false];

  it('refuses exactly the shapes the zod schema refused', () => {
    const everyPath = paths(document);
    fc.assert(
      fc.property(
        fc.constantFrom(...everyPath),
        fc.constantFrom(...replacements),
        fc.boolean(),
        (path, replacement, addField) => {
          const altered = structuredClone(document);
          const parent = path
            .slice(0, -1)
            .reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], altered) as
            Record<string, unknown> | undefined;
          const last = path.at(-1);
          if (addField || parent === undefined || last === undefined) {
            const target = (parent?.[last ?? ''] ?? altered) as Record<string, unknown>;
            if (typeof target !== 'object' || target === null) return;
            (target as Record<string, unknown>).extra = replacement ?? 1;
          } else if (replacement === undefined) {
            if (Array.isArray(parent)) return;
            delete parent[last];
          } else {
            parent[last] = replacement;
          }
          const shapeOk = oracleSchema.safeParse(altered).success;
          let refusedShape = false;
          try {
            parseBundle(encoder.encode(canonicalJson(altered)));
          } catch (error) {
            assert.ok(error instanceof InvalidBundleError);
            refusedShape = error.message.startsWith('bundle has an unexpected shape: ');
          }
          assert.equal(
            refusedShape,
            !shapeOk,
            `${path.join('/')} := ${JSON.stringify(replacement)}`,
          );
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('tells canonical JSON text exactly as canonicalJson does', () => {
    const json = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        fc.constantFrom(
          null,
          true,
          false,
          0,
          -1,
          1.5,
          10,
          9,
          1e21,
          '',
          'x',
          '\u00e9',
          '\ud83d\ude00',
        ),
        fc.string(),
        fc.array(tie('value'), { maxLength: 4 }),
        fc.dictionary(
          fc.oneof(fc.string(), fc.constantFrom('10', '9', '0', '__proto__', 'a', 'B')),
          tie('value'),
          { maxKeys: 5 },
        ),
      ),
    })).value;
    fc.assert(
      fc.property(json, fc.boolean(), (value, canonical) => {
        // Either the canonical text, or JSON.stringify's (keys in insertion order).
        const text = canonical ? canonicalJson(value) : JSON.stringify(value);
        const parsed: unknown = JSON.parse(text);
        assert.equal(isCanonicalJson(parsed, text), canonicalJson(parsed) === text);
      }),
      { numRuns: 5000 },
    );
  });
});
