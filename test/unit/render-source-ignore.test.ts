/**
 * Files left out before rendering (defaults, `sourceIgnore:`, `.sourceignore`
 * files) and YAML/JSON files that hold no Kubernetes object (skipped and
 * listed, carried in the artifact).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseConfig, ConfigError } from '../../src/config/index.ts';
import {
  parseBundle,
  parseRevision,
  renderRevision,
  serializeBundle,
} from '../../src/render/index.ts';
import { applySourceIgnore } from '../../src/render/source-ignore.ts';

const file = (path: string, text = '') => ({ path, content: new TextEncoder().encode(text) });
const paths = (files: { path: string }[]) => files.map((f) => f.path);
const configMap = (name: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ${name}, namespace: apps}\n`;

describe('applySourceIgnore', () => {
  it('leaves out VCS and CI files by default, and the .sourceignore files themselves', () => {
    const files = [
      file('.github/workflows/ci.yaml'),
      file('.gitlab-ci.yml'),
      file('deploy/.sops.yaml'),
      file('.sourceignore'),
      file('deploy/app.yaml'),
    ];
    assert.deepEqual(paths(applySourceIgnore(files)), ['deploy/app.yaml']);
  });

  it('applies the track patterns from the repository root', () => {
    const files = [
      file('docs/a.yaml'),
      file('deploy/x.md'),
      file('deploy/app.yaml'),
      file('ci/k.yaml'),
    ];
    assert.deepEqual(paths(applySourceIgnore(files, ['docs/', '*.md', '/ci'])), [
      'deploy/app.yaml',
    ]);
  });

  it('applies a .sourceignore to the paths under its directory, deeper files last', () => {
    const files = [
      file('.sourceignore', '*.test.yaml\nexamples/\n'),
      file('deploy/.sourceignore', '!keep.test.yaml\nlocal-*.yaml\n'),
      file('deploy/app.yaml'),
      file('deploy/app.test.yaml'),
      file('deploy/keep.test.yaml'),
      file('deploy/local-dev.yaml'),
      file('local-root.yaml'),
      file('examples/e.yaml'),
      file('other/examples/e.yaml'),
    ];
    assert.deepEqual(paths(applySourceIgnore(files)), [
      'deploy/app.yaml',
      'deploy/keep.test.yaml',
      'local-root.yaml',
    ]);
  });

  it('lets a pattern bring back a default exclusion', () => {
    const files = [file('.github/app.yaml')];
    assert.deepEqual(paths(applySourceIgnore(files, ['!.github/'])), ['.github/app.yaml']);
  });
});

describe('files without Kubernetes objects', () => {
  it('are skipped and listed, in path order, and kept in the artifact', () => {
    // Prepare
    const files = [
      file('deploy/values.yaml', 'replicaCount: 2\nimage: {tag: "1.0"}\n'),
      file('deploy/app.yaml', configMap('app')),
      file('deploy/empty.yaml', '# only a comment\n'),
      file('deploy/package.json', '{"name": "x"}'),
      file('deploy/overlay/kustomization.yaml', 'resources: [../app.yaml]\n'),
    ];

    // Act
    const bundle = parseRevision(files, { subPath: 'deploy' });
    const reread = parseBundle(serializeBundle(bundle));

    // Assess
    assert.deepEqual(
      bundle.objects.map((o) => o.subject),
      ['ConfigMap/apps/app'],
    );
    assert.deepEqual(bundle.skipped, [
      { file: 'deploy/empty.yaml', reason: 'holds no Kubernetes object' },
      { file: 'deploy/overlay/kustomization.yaml', reason: 'a kustomization, not built here' },
      { file: 'deploy/package.json', reason: 'holds no Kubernetes object' },
      { file: 'deploy/values.yaml', reason: 'holds no Kubernetes object' },
    ]);
    assert.deepEqual(reread.skipped, bundle.skipped);
  });

  it('still refuses a document with only one of apiVersion and kind, naming file and line', () => {
    const onlyKind = [
      file('a.yaml', `${configMap('a')}---\nkind: ConfigMap\nmetadata: {name: b}\n`),
    ];
    const onlyApiVersion = [file('b.yaml', 'apiVersion: v1\nmetadata: {name: c}\n')];
    assert.throws(() => parseRevision(onlyKind), /a\.yaml:5: apiVersion is missing/);
    assert.throws(() => parseRevision(onlyApiVersion), /b\.yaml:1: kind is missing/);
  });

  it('leaves an old artifact without the field readable', () => {
    const bundle = parseRevision([file('a.yaml', configMap('a'))]);
    assert.equal(bundle.skipped, undefined);
    assert.equal(parseBundle(serializeBundle(bundle)).skipped, undefined);
  });
});

describe('renderRevision with ignore rules', () => {
  it('does not read ignored files at all', async () => {
    // Prepare: the ignored file would fail the revision if it were read.
    const files = [
      file('.sourceignore', 'broken/\n'),
      file('app.yaml', configMap('app')),
      file('broken/bad.yaml', 'apiVersion: v1\nkind: [\n'),
      file('.github/workflows/ci.yaml', 'on: push\njobs: {}\n'),
    ];
    const spec = { name: 'web', kustomize: 'auto' as const, kustomizeRemoteResources: false };

    // Act
    const bundle = await renderRevision(spec, files);
    const withPattern = await renderRevision({ ...spec, sourceIgnore: ['app.yaml'] }, files);

    // Assess
    assert.deepEqual(
      bundle.objects.map((o) => o.subject),
      ['ConfigMap/apps/app'],
    );
    assert.equal(bundle.skipped, undefined, 'ignored files are not listed as skipped');
    assert.deepEqual(withPattern.objects, []);
  });

  it('says a subPath the ignore rules leave out entirely is left out, not that it is missing', async () => {
    // Prepare
    const files = [file('deploy/app.yaml', configMap('app')), file('other/x.yaml', configMap('x'))];
    const spec = {
      name: 'web',
      kustomize: 'auto' as const,
      kustomizeRemoteResources: false,
      subPath: 'deploy',
    };

    // Act
    const byPattern = renderRevision({ ...spec, sourceIgnore: ['deploy/'] }, files);
    const byFile = renderRevision(spec, [...files, file('.sourceignore', 'deploy/\n')]);

    // Assess
    const message =
      'RenderInputError: subPath "deploy" has no files left to render: the track\'s sourceIgnore or a .sourceignore file leaves out all of it, or it does not exist in the revision';
    await assert.rejects(byPattern, (error: unknown) => String(error) === message);
    await assert.rejects(byFile, (error: unknown) => String(error) === message);
  });

  it('refuses invalid patterns in config, naming the track and field', () => {
    const text = (pattern: string) =>
      `tracks:\n  - name: web\n    repository: https://git.example.com/m.git\n    sourceIgnore: [${pattern}]\n`;
    for (const [pattern, message] of [
      ['""', /tracks\[0\]\.sourceIgnore\[0\]: must not be empty|tracks\[0\]\.sourceIgnore\.0/],
      ['"# x"', /is a comment, not a pattern/],
      ['3', /is not a string/],
    ] as const) {
      assert.throws(
        () => parseConfig(text(pattern), 'driftless.yaml'),
        (error: unknown) => error instanceof ConfigError && message.test(error.message),
        pattern,
      );
    }
    assert.deepEqual(parseConfig(text('"*.md"'), 'driftless.yaml').tracks[0]?.sourceIgnore, [
      '*.md',
    ]);
  });
});
