/**
 * The parts of kustomize and Helm rendering that decide without running the
 * tools: which renderer a track needs, what a kustomization may reach, the
 * config fields, revision ids and the capabilities digest. The tools
 * themselves run in test/integration/render-tools.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, parseConfig } from '../../src/config/index.ts';
import type { Track } from '../../src/config/types.ts';
import { commitOf, isRevisionId, renderedRevision } from '../../src/object-id.ts';
import { capabilitiesDigest, rendererOf, RenderRefusedError } from '../../src/render/index.ts';
import { checkKustomizations, describeKustomizeError } from '../../src/render/kustomize.ts';
import { rendererBinary } from '../../src/render/renderer-binaries.ts';

const file = (path: string, text: string) => ({ path, content: new TextEncoder().encode(text) });

function trackOf(extra: string): Track {
  return parseConfig(
    `tracks:\n  - name: web\n    repository: https://git.example.com/m.git\n${extra
      .split('\n')
      .map((line) => `    ${line}`)
      .join('\n')}`,
    'driftless.yaml',
  ).tracks[0]!;
}

function configProblems(extra: string): string {
  try {
    trackOf(extra);
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    return error.message;
  }
  return assert.fail('expected the config to be refused');
}

describe('rendererOf', () => {
  const tree = [
    file('deploy/kustomization.yaml', 'resources: [a.yaml]'),
    file('deploy/a.yaml', ''),
    file('plain/a.yaml', ''),
  ];

  it('builds a kustomization at subPath by default, and only there', () => {
    assert.equal(rendererOf(trackOf('subPath: deploy'), tree), 'kustomize');
    assert.equal(rendererOf(trackOf('subPath: plain'), tree), 'plain');
    assert.equal(
      rendererOf(trackOf(''), tree),
      'plain',
      'a kustomization deeper down is not built',
    );
  });

  it('follows kustomize: false and true, and helm before both', () => {
    assert.equal(rendererOf(trackOf('subPath: deploy\nkustomize: false'), tree), 'plain');
    assert.throws(
      () => rendererOf(trackOf('subPath: plain\nkustomize: true'), tree),
      /kustomize: true, but plain has no kustomization\.yaml/,
    );
    assert.equal(rendererOf(trackOf('subPath: deploy\nhelm: {chart: c}'), tree), 'helm');
  });
});

describe('checkKustomizations', () => {
  const refused = (files: ReturnType<typeof file>[], dir: string, allowRemote = false): string => {
    try {
      checkKustomizations(files, dir, allowRemote);
    } catch (error) {
      assert.ok(error instanceof RenderRefusedError);
      return error.message;
    }
    return 'accepted';
  };

  it('refuses paths leaving the repository, in every file field, naming the kustomization', () => {
    const cases: [string, RegExp][] = [
      ['resources: [../../../etc]', /app\/kustomization\.yaml: resources: "\.\.\/\.\.\/\.\.\/etc"/],
      ['resources: [/etc/passwd]', /resources: "\/etc\/passwd" is outside/],
      ['patches: [{path: ../../x.yaml}]', /patches: "\.\.\/\.\.\/x\.yaml"/],
      [
        'configMapGenerator: [{name: c, files: [key=../../secret]}]',
        /configMapGenerator: "\.\.\/\.\.\/secret"/,
      ],
      ['secretGenerator: [{name: s, envs: [../../.env]}]', /secretGenerator: "\.\.\/\.\.\/\.env"/],
      ['components: [../..]', /components: "\.\.\/\.\." is outside/],
    ];
    for (const [kustomization, message] of cases) {
      assert.match(refused([file('app/kustomization.yaml', kustomization)], 'app'), message);
    }
  });

  it('allows paths inside the repository, and checks the bases it reaches', () => {
    const files = [
      file('app/kustomization.yaml', 'resources: [../base]\npatches: [{path: p.yaml}]'),
      file('base/kustomization.yaml', 'resources: [../../outside]'),
      file('unrelated/kustomization.yaml', 'resources: [../../../etc]'),
    ];
    assert.match(
      refused(files, 'app'),
      /base\/kustomization\.yaml: resources: "\.\.\/\.\.\/outside"/,
    );
    assert.equal(
      refused(files.slice(0, 1), 'app'),
      'accepted',
      'an unrelated kustomization is not read',
    );
  });

  it('refuses remote resources unless allowed', () => {
    for (const remote of [
      'https://example.com/app.yaml',
      'github.com/org/repo//deploy?ref=v1',
      'git@github.com:org/repo.git',
      'ssh://git@example.com/org/repo.git',
    ]) {
      const files = [file('kustomization.yaml', `resources: ["${remote}"]`)];
      assert.match(refused(files, ''), /kustomizeRemoteResources: true/, remote);
      assert.equal(refused(files, '', true), 'accepted', remote);
    }
  });

  it('reads a local path whose first segment has a dot as local, and checks the base it names', () => {
    const files = [
      file(
        'app/kustomization.yaml',
        'resources: [conf.d/base, v1.2/app.yaml, example.com/base, ../shared.v2]',
      ),
      file('app/conf.d/base/kustomization.yaml', 'resources: [cm.yaml]'),
      file('app/conf.d/base/cm.yaml', ''),
      file('app/v1.2/app.yaml', ''),
      file('app/example.com/base/kustomization.yaml', 'resources: []'),
      file('shared.v2/kustomization.yaml', 'resources: []'),
    ];
    assert.equal(refused(files, 'app'), 'accepted');
    const escaping = [
      ...files.filter((f) => f.path !== 'app/conf.d/base/kustomization.yaml'),
      file('app/conf.d/base/kustomization.yaml', 'resources: [../../../../etc]'),
    ];
    assert.match(
      refused(escaping, 'app'),
      /app\/conf\.d\/base\/kustomization\.yaml: resources: "\.\.\/\.\.\/\.\.\/\.\.\/etc" is outside/,
    );
    // Only a path the revision holds is local: the same names without the files are remote,
    // and a URL with a scheme is remote whatever the revision holds.
    assert.match(
      refused(
        [file('app/kustomization.yaml', 'resources: ["https://conf.d/base"]'), ...files.slice(1)],
        'app',
      ),
      /kustomizeRemoteResources: true/,
    );
    for (const remote of ['conf.d/base', 'github.com/org/repo//deploy?ref=v1']) {
      assert.match(
        refused([file('app/kustomization.yaml', `resources: ["${remote}"]`)], 'app'),
        /kustomizeRemoteResources: true/,
        remote,
      );
    }
  });
});

describe('describeKustomizeError', () => {
  const root = '/tmp/driftless-tree-1';
  const files = [
    file('app/kustomization.yaml', ''),
    file('base/kustomization.yaml', ''),
    file('base2/kustomization.yml', ''),
    file('comp/kustomization.yaml', ''),
    file('kustomization.yaml', ''),
  ];
  const syntax = "invalid Kustomization: yaml: line 1: did not find expected ',' or ']'";
  // As kustomize 5 prints them (test/integration/render-tools.test.ts runs the real one).
  const base = `Error: accumulating resources: accumulation err='accumulating resources from '../base': '${root}/base' must resolve to a file': couldn't make target for path '${root}/base': ${syntax}`;

  it('names the kustomization kustomize could not read, not the one built', () => {
    const cases: [string, string, string][] = [
      [`Error: ${syntax}`, 'app', `app/kustomization.yaml: Error: ${syntax}`],
      [base, 'app', `base/kustomization.yaml: ${base.replaceAll(`${root}/`, '')}`],
      [
        `Error: accumulating resources: accumulation err='accumulating resources from '../base': '${root}/base' must resolve to a file': recursed accumulation of path '${root}/base': accumulating resources: accumulation err='accumulating resources from '../base2': '${root}/base2' must resolve to a file': couldn't make target for path '${root}/base2': ${syntax}`,
        'app',
        'base2/kustomization.yml: Error: accumulating resources: ',
      ],
      [
        `Error: accumulating components: accumulateDirectory: "couldn't make target for path '${root}/comp': ${syntax}"`,
        'app',
        'comp/kustomization.yaml: Error: accumulating components: ',
      ],
      [
        `Error: accumulating resources: accumulation err='accumulating resources from '..': '${root}' must resolve to a file': couldn't make target for path '${root}': ${syntax}`,
        'app',
        'kustomization.yaml: Error: accumulating resources: ',
      ],
    ];
    for (const [text, dir, expected] of cases) {
      assert.ok(
        describeKustomizeError(text, root, files, dir).startsWith(expected),
        `${describeKustomizeError(text, root, files, dir)}\nshould start with\n${expected}`,
      );
      assert.ok(!describeKustomizeError(text, root, files, dir).includes(root));
    }
  });

  it('names no file when the message does not tell which kustomization it is about', () => {
    const unclear = `Error: accumulating resources: something else: ${syntax}`;
    assert.equal(describeKustomizeError(unclear, root, files, 'app'), unclear);
    const missing = base.replaceAll('/base', '/elsewhere');
    assert.equal(
      describeKustomizeError(missing, root, files, 'app'),
      missing.replaceAll(`${root}/`, ''),
    );
  });
});

describe('track config for rendering', () => {
  it('defaults to kustomize: auto without remote resources', () => {
    const track = trackOf('');
    assert.equal(track.kustomize, 'auto');
    assert.equal(track.kustomizeRemoteResources, false);
    assert.equal(track.helm, undefined);
  });

  it('reads helm with its defaults', () => {
    assert.deepEqual(trackOf('helm: {chart: charts/web}').helm, {
      chart: 'charts/web',
      values: {},
      valuesFiles: [],
    });
  });

  it('refuses what cannot work, naming the field', () => {
    assert.match(
      configProblems('helm: {chart: c, version: "1.2.3"}'),
      /tracks\[0\]\.helm\.version: applies to charts from a repository/,
    );
    assert.match(
      configProblems('helm: {chart: ../c}'),
      /tracks\[0\]\.helm\.chart: "\.\.\/c" must be a path inside the revision/,
    );
    assert.match(
      configProblems('helm: {chart: c, repository: ftp://x}'),
      /helm\.repository: "ftp:\/\/x" is not an http\(s\):\/\/ chart repository or an oci:\/\/ registry/,
    );
    assert.match(
      configProblems('helm: {chart: c, repository: "https://x", version: "not a range"}'),
      /helm\.version: "not a range" is not a chart version or semver range/,
    );
    assert.match(
      configProblems('helm: {chart: c}\nkustomize: true'),
      /tracks\[0\]\.kustomize: true cannot be used with helm/,
    );
    assert.match(configProblems('kustomize: sometimes'), /tracks\[0\]\.kustomize/);
    assert.match(
      configProblems('helm: {chart: c, valuesFiles: [/etc/values.yaml]}'),
      /helm\.valuesFiles\.0|helm\.valuesFiles\[0\]/,
    );
  });
});

describe('revision ids', () => {
  const commit = 'a'.repeat(40);

  it('are a commit, or a commit and 12 hex of a rendered chart', () => {
    const revision = renderedRevision(commit, 'b'.repeat(64));
    assert.equal(revision, `${commit}+${'b'.repeat(12)}`);
    assert.equal(isRevisionId(revision), true);
    assert.equal(isRevisionId(commit), true);
    assert.equal(commitOf(revision), commit);
    assert.equal(commitOf(commit), commit);
    for (const bad of [
      `${commit}+`,
      `${commit}+xyz`,
      `${commit}+${'b'.repeat(13)}`,
      'a'.repeat(39),
    ]) {
      assert.equal(isRevisionId(bad), false, bad);
    }
  });
});

describe('capabilitiesDigest', () => {
  it('is none without capabilities, and ignores the order of API versions', () => {
    assert.equal(capabilitiesDigest(undefined), 'none');
    const a = capabilitiesDigest({ kubeVersion: 'v1.36.3', apiVersions: ['v1', 'apps/v1'] });
    const b = capabilitiesDigest({ kubeVersion: 'v1.36.3', apiVersions: ['apps/v1', 'v1'] });
    const c = capabilitiesDigest({ kubeVersion: 'v1.37.0', apiVersions: ['apps/v1', 'v1'] });
    assert.equal(a, b);
    assert.notEqual(a, c);
  });
});

describe('rendererBinary', () => {
  it('says how to provide a missing renderer', () => {
    assert.throws(
      () => rendererBinary('helm', 'track web', { PATH: '/nonexistent' }),
      /track web needs helm, which is not on PATH: set DRIFTLESS_HELM/,
    );
    assert.throws(
      () =>
        rendererBinary('kustomize', 'track web', { DRIFTLESS_KUSTOMIZE: '/nonexistent/kustomize' }),
      /DRIFTLESS_KUSTOMIZE=\/nonexistent\/kustomize is not an executable file/,
    );
    assert.equal(
      rendererBinary('helm', 'x', { DRIFTLESS_HELM: process.execPath }),
      process.execPath,
    );
  });
});
