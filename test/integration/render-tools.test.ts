/**
 * kustomize overlays and Helm charts rendered by the real, pinned tools and
 * synced to the test cluster: Driftless' objects compared one by one with
 * what `kustomize build` and `helm template` print for the same input, a
 * chart from a chart repository served over HTTP, and bad input refused
 * with the file named and the cluster untouched.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { loadAll } from 'js-yaml';
import { parseConfig } from '../../src/config/index.ts';
import type { Track } from '../../src/config/types.ts';
import { parseBundle } from '../../src/render/index.ts';
import { commitOf } from '../../src/object-id.ts';
import type { LocalContext } from '../../src/sync/local-context.ts';
import { cliOver, type CliRun } from '../harness/run-cli.ts';
import { syncTrack } from '../../src/sync/sync-track.ts';
import { readTrackState } from '../../src/sync/track-state.ts';
import { pushFiles } from '../harness/git-server.ts';
import { rendererBinaries, type RendererBinaries } from '../harness/renderers.ts';
import { TrackFixture } from '../harness/track-fixture.ts';

const run = promisify(execFile);

type Files = Record<string, string>;

/** The objects a tool printed, keyed like Driftless' subjects' identity (kind/namespace/name). */
function objectsOf(yaml: string): Map<string, Record<string, unknown>> {
  const objects = new Map<string, Record<string, unknown>>();
  for (const doc of loadAll(yaml)) {
    if (doc === null || doc === undefined) continue;
    const object = doc as { kind: string; metadata: { name: string; namespace?: string } };
    objects.set(
      `${object.kind}/${object.metadata.namespace ?? ''}/${object.metadata.name}`,
      object as unknown as Record<string, unknown>,
    );
  }
  return objects;
}

/** Writes `files` into a fresh directory (a checkout, as a user would have it). */
async function checkout(files: Files): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'driftless-render-tools-'));
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), content);
  }
  return dir;
}

const KUSTOMIZE_TREE: Files = {
  'base/kustomization.yaml': [
    'resources: [settings.yaml, service.yaml, deployment.yaml]',
    'configMapGenerator:',
    '  - name: generated',
    '    literals: [mode=base]',
    '    envs: [app.env]',
    'labels:',
    '  - pairs: {app: web}',
    '    includeSelectors: true',
  ].join('\n'),
  'base/app.env': 'FEATURE=on\n',
  'base/settings.yaml':
    'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {value: base}\n',
  'base/service.yaml':
    'apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  ports: [{port: 80}]\n',
  'base/deployment.yaml': [
    'apiVersion: apps/v1',
    'kind: Deployment',
    'metadata: {name: web}',
    'spec:',
    '  replicas: 1',
    '  template:',
    '    spec:',
    '      containers: [{name: web, image: registry.example/web:1.0}]',
  ].join('\n'),
  'components/audit/kustomization.yaml': [
    'apiVersion: kustomize.config.k8s.io/v1alpha1',
    'kind: Component',
    'resources: [audit.yaml]',
  ].join('\n'),
  'components/audit/audit.yaml':
    'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: audit}\ndata: {value: on}\n',
  'overlays/prod/kustomization.yaml': [
    'resources: [../../base]',
    'components: [../../components/audit]',
    'namePrefix: prod-',
    'images:',
    '  - name: registry.example/web',
    '    newTag: "2.0"',
    'configMapGenerator:',
    '  - name: generated',
    '    behavior: merge',
    '    literals: [mode=prod]',
    'patches:',
    '  - target: {kind: ConfigMap, name: settings}',
    '    patch: |-',
    '      - {op: replace, path: /data/value, value: prod}',
    'replacements:',
    '  - source: {kind: ConfigMap, name: settings, fieldPath: data.value}',
    '    targets:',
    '      - select: {kind: ConfigMap, name: audit}',
    '        fieldPaths: [data.value]',
  ].join('\n'),
  'README.md': '# not a manifest\n',
};

const CHART: Files = {
  'charts/web/Chart.yaml': 'apiVersion: v2\nname: web\nversion: 0.1.0\n',
  'charts/web/values.yaml': 'greeting: hello\nsize: small\ncolour: red\n',
  'charts/web/templates/_helpers.tpl':
    '{{- define "web.name" -}}{{ .Release.Name }}-settings{{- end }}\n',
  'charts/web/templates/settings.yaml': [
    'apiVersion: v1',
    'kind: ConfigMap',
    'metadata:',
    '  name: {{ include "web.name" . }}',
    '  labels: {chart: "{{ .Chart.Name }}-{{ .Chart.Version }}"}',
    'data:',
    '  greeting: {{ .Values.greeting | quote }}',
    '  size: {{ .Values.size | quote }}',
    '  colour: {{ .Values.colour | quote }}',
    '  kubeVersion: {{ .Capabilities.KubeVersion.Version | quote }}',
    '  hasBatch: {{ .Capabilities.APIVersions.Has "batch/v1/Job" | quote }}',
  ].join('\n'),
  'charts/web/templates/tests/test-connection.yaml': [
    'apiVersion: v1',
    'kind: Pod',
    'metadata:',
    '  name: {{ .Release.Name }}-test',
    '  annotations: {"helm.sh/hook": test}',
    'spec:',
    '  containers: [{name: t, image: busybox}]',
  ].join('\n'),
  'charts/web/crds/widgets.yaml': [
    'apiVersion: apiextensions.k8s.io/v1',
    'kind: CustomResourceDefinition',
    'metadata: {name: widgets.render-tools.driftless.dev}',
    'spec:',
    '  group: render-tools.driftless.dev',
    '  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}',
    '  scope: Namespaced',
    '  versions:',
    '    - name: v1',
    '      served: true',
    '      storage: true',
    '      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}',
  ].join('\n'),
  'values-prod.yaml': 'size: large\ncolour: blue\n',
};

/**
 * For the tracks that render the same chart as the "chart" track: its CRD is
 * owned by that track, and applying it again would be an ownership conflict.
 */
const LEAVE_CRDS = 'ignoreResources: [customresourcedefinitions.apiextensions.k8s.io/v1]';

describe('rendering with kustomize and helm', () => {
  const fixture = new TrackFixture('render');
  let tools: RendererBinaries;
  let chartRepo: { server: Server; dir: string; url: string };

  before(async () => {
    tools = await rendererBinaries();
    process.env.DRIFTLESS_KUSTOMIZE = tools.kustomize;
    process.env.DRIFTLESS_HELM = tools.helm;
    await fixture.start();
    const dir = await mkdtemp(join(tmpdir(), 'driftless-chart-repo-'));
    const server = createServer((request, response) => {
      readFile(join(dir, (request.url ?? '/').split('?')[0]!.replace(/^\/+/, '')))
        .then((body) => response.end(body))
        .catch(() => {
          response.statusCode = 404;
          response.end();
        });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    chartRepo = { server, dir, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
  });

  after(async () => {
    await new Promise((resolve) => chartRepo.server.close(resolve));
    await rm(chartRepo.dir, { recursive: true, force: true });
    await fixture.stop();
  });

  /** Packages the chart at `version` into the HTTP chart repository and indexes it. */
  async function publishChart(version: string): Promise<void> {
    const source = await checkout(CHART);
    try {
      const chart = join(source, 'charts/web');
      await run(tools.helm, ['package', chart, '--version', version, '-d', chartRepo.dir]);
      await run(tools.helm, ['repo', 'index', chartRepo.dir, '--url', chartRepo.url]);
    } finally {
      await rm(source, { recursive: true, force: true });
    }
  }

  it('syncs a kustomize overlay with a base, a component, a generator, patches and images, as kustomize builds it', async () => {
    // Prepare
    const { track, repo, ns } = await fixture.newTrack('kustomize', 'subPath: overlays/prod');
    const sha = await pushFiles(repo, KUSTOMIZE_TREE);
    const dir = await checkout(KUSTOMIZE_TREE);
    const expected = objectsOf(
      (await run(tools.kustomize, ['build', join(dir, 'overlays/prod')])).stdout,
    );
    await rm(dir, { recursive: true, force: true });

    // Act
    const result = await syncTrack(track, { trigger: 'manual' }, fixture.deps);

    // Assess
    assert.equal(result.result, 'applied', result.error);
    assert.equal(
      result.revision,
      sha,
      'a kustomization renders from Git alone: the commit is the revision',
    );
    const stored = parseBundle(await fixture.deps.artifacts.get(track.name, sha));
    assert.deepEqual(
      new Map(stored.objects.map((o) => [`${o.kind}/${o.namespace ?? ''}/${o.name}`, o.manifest])),
      expected,
    );
    assert.equal(expected.size, 5);
    assert.equal(await fixture.configMapValue(ns, 'prod-settings'), 'prod');
    const audit = await fixture.core.readNamespacedConfigMap({ name: 'prod-audit', namespace: ns });
    assert.equal(audit.data?.value, 'prod', 'the replacement copied the patched value');
    const generated = [...expected.keys()].find((key) => key.includes('prod-generated-'));
    assert.ok(generated, 'the generated ConfigMap carries its content hash');
    assert.deepEqual((expected.get(generated) as { data: unknown }).data, {
      FEATURE: 'on',
      mode: 'prod',
    });
  });

  it('syncs a chart from the revision for the cluster, as helm template renders it, leaving tests out', async () => {
    // Prepare
    const { track, repo, ns } = await fixture.newTrack(
      'chart',
      'helm: {chart: charts/web, valuesFiles: [values-prod.yaml], values: {colour: green}}',
    );
    const sha = await pushFiles(repo, CHART);

    // Act
    const result = await syncTrack(track, { trigger: 'manual' }, fixture.deps);

    // Assess
    assert.equal(result.result, 'applied', result.error);
    assert.equal(commitOf(result.revision!), sha);
    assert.match(result.revision!, /^[0-9a-f]{40}\+[0-9a-f]{12}$/);
    const state = await readTrackState(fixture.deps.state, track.name);
    assert.ok(state.capabilities, 'the apply step recorded the cluster capabilities');
    const settings = await fixture.core.readNamespacedConfigMap({
      name: 'chart-settings',
      namespace: ns,
    });
    assert.deepEqual(
      { ...settings.data },
      {
        greeting: 'hello',
        size: 'large',
        colour: 'green',
        kubeVersion: state.capabilities.kubeVersion,
        hasBatch: 'true',
      },
      'valuesFiles then values, over the chart defaults; capabilities of the real cluster',
    );
    const pods = await fixture.core.listNamespacedPod({ namespace: ns });
    assert.equal(pods.items.length, 0, 'the test hook is left out');

    const dir = await checkout(CHART);
    const { stdout } = await run(tools.helm, [
      'template',
      'chart',
      join(dir, 'charts/web'),
      '--namespace',
      ns,
      '--include-crds',
      '--skip-tests',
      '--kube-version',
      state.capabilities.kubeVersion,
      '--api-versions',
      state.capabilities.apiVersions.join(','),
      '--values',
      join(dir, 'values-prod.yaml'),
      '--set',
      'colour=green',
    ]);
    await rm(dir, { recursive: true, force: true });
    const stored = parseBundle(await fixture.deps.artifacts.get(track.name, result.revision!));
    assert.deepEqual(
      new Map(stored.objects.map((o) => [`${o.kind}/${o.namespace ?? ''}/${o.name}`, o.manifest])),
      objectsOf(stdout),
    );
    assert.deepEqual(stored.objects.map((o) => o.kind).sort(), [
      'ConfigMap',
      'CustomResourceDefinition',
    ]);
  });

  /** Runs the CLI on `track` over the fixture's store, Git source and cluster. */
  async function driftless(track: Track, ...args: string[]): Promise<CliRun> {
    const base = parseConfig(
      'tracks: [{name: x, repository: https://git.example.com/x.git}]',
      'driftless.yaml',
    );
    const context: LocalContext = {
      config: { ...base, tracks: [track] },
      artifacts: fixture.deps.artifacts,
      state: fixture.deps.state,
      source: async () => fixture.deps.source,
      cluster: async () => fixture.deps.cluster,
      close: () => undefined,
    };
    return cliOver(() => context)(...args);
  }

  it('renders and diffs a chart never synced for the cluster, as its first sync applies it', async () => {
    // Prepare
    const { track, repo, ns } = await fixture.newTrack(
      'first-chart',
      `helm: {chart: charts/web}\n${LEAVE_CRDS}`,
    );
    await pushFiles(repo, CHART);
    const kubeVersion = await fixture.deps.cluster.serverVersion();

    // Act
    const rendered = await driftless(track, 'render', '--track', track.name);
    const diff = await driftless(track, 'diff', '--track', track.name, '-o', 'json');
    const synced = await syncTrack(track, { trigger: 'manual' }, fixture.deps);

    // Assess
    assert.equal(rendered.code, 0, rendered.stderr);
    const settings = objectsOf(rendered.stdout).get(`ConfigMap/${ns}/first-chart-settings`);
    assert.deepEqual(
      (settings as { data: Record<string, string> } | undefined)?.data,
      {
        greeting: 'hello',
        size: 'small',
        colour: 'red',
        kubeVersion,
        hasBatch: 'true',
      },
      "the cluster's capabilities, not Helm's defaults",
    );
    assert.equal(diff.code, 1, diff.stderr);
    const planned = (JSON.parse(diff.stdout) as { changes: { subject: string; diff?: string }[] })
      .changes;
    const created = planned.find((c) => c.subject === `ConfigMap/${ns}/first-chart-settings`);
    assert.match(created?.diff ?? '', new RegExp(`\\+  kubeVersion: ${kubeVersion}\\n`));
    assert.match(created?.diff ?? '', /\+ {2}hasBatch: 'true'\n/);
    assert.equal(synced.result, 'applied', synced.error);
    const live = await fixture.core.readNamespacedConfigMap({
      name: 'first-chart-settings',
      namespace: ns,
    });
    assert.deepEqual({ ...live.data }, (settings as { data: unknown }).data);
  });

  it('syncs a chart from an HTTP chart repository; a new matching chart version is a new revision', async () => {
    // Prepare
    await publishChart('1.0.0');
    await publishChart('2.0.0'); // outside the range
    const { track, repo, ns } = await fixture.newTrack(
      'repo-chart',
      // The chart's CRD belongs to the "chart" track: another track leaves it to its owner.
      `helm: {chart: web, repository: "${chartRepo.url}", version: ">=1.0.0 <2", releaseName: site}\n${LEAVE_CRDS}`,
    );
    await pushFiles(repo, { 'README.md': 'values live here\n' });

    // Act
    const first = await syncTrack(track, { trigger: 'manual' }, fixture.deps);
    await publishChart('1.1.0');
    const second = await syncTrack(track, { trigger: 'manual' }, fixture.deps);

    // Assess
    assert.equal(first.result, 'applied', first.error);
    assert.equal(second.result, 'applied', second.error);
    assert.notEqual(second.revision, first.revision);
    assert.equal(commitOf(second.revision!), commitOf(first.revision!));
    const settings = await fixture.core.readNamespacedConfigMap({
      name: 'site-settings',
      namespace: ns,
    });
    assert.equal(settings.metadata?.labels?.chart, 'web-1.1.0');
    const history = await fixture.deps.state.listHistory(track.name);
    assert.deepEqual(history.map((entry) => entry.revision).slice(0, 2), [
      second.revision,
      first.revision,
    ]);
  });

  it('leaves out what .sourceignore names and CI files, and lists files that hold no object', async () => {
    // Prepare
    const { track, repo, ns } = await fixture.newTrack('ignore');
    await pushFiles(repo, {
      '.sourceignore': 'experiments/\n',
      'experiments/broken.yaml': 'apiVersion: v1\nkind: [\n',
      '.github/workflows/ci.yaml': 'on: push\njobs: {build: {runs-on: ubuntu-latest}}\n',
      'values.yaml': 'replicaCount: 2\n',
      'app.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {value: kept}\n',
    });

    // Act
    const result = await syncTrack(track, { trigger: 'manual' }, fixture.deps);

    // Assess
    assert.equal(result.result, 'applied', result.error);
    assert.deepEqual(
      result.changeset.map((entry) => entry.subject),
      [`ConfigMap/${ns}/settings`],
    );
    const state = await readTrackState(fixture.deps.state, track.name);
    const parsed = state.conditions.find((c) => c.type === 'FilesParsed');
    assert.match(
      parsed?.message ?? '',
      /; 1 file skipped \(no Kubernetes object to apply\): values\.yaml$/,
    );
  });

  it('refuses bad renderer input naming the file, and leaves the cluster as it was', async () => {
    // Prepare
    const { track, repo, ns } = await fixture.newTrack('bad', 'subPath: app');
    const good = {
      'app/kustomization.yaml': 'resources: [settings.yaml]\n',
      'app/settings.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {value: good}\n',
    };
    await pushFiles(repo, good);
    const applied = await syncTrack(track, { trigger: 'manual' }, fixture.deps);
    assert.equal(applied.result, 'applied', applied.error);
    const cases: { name: string; files: Files; error: RegExp }[] = [
      {
        name: 'a base outside the repository',
        files: { 'app/kustomization.yaml': 'resources: [settings.yaml, ../../../etc]\n' },
        error:
          /app\/kustomization\.yaml: resources: "\.\.\/\.\.\/\.\.\/etc" is outside the repository/,
      },
      {
        name: 'an exec plugin',
        files: {
          'app/kustomization.yaml': 'resources: [settings.yaml]\ntransformers: [plugin.yaml]\n',
          'app/plugin.yaml':
            'apiVersion: example.com/v1\nkind: Run\nmetadata:\n  name: run\n  annotations:\n    config.kubernetes.io/function: |\n      exec: {path: /bin/sh}\n',
        },
        error: /kustomize build app: .*plugin/,
      },
      {
        name: 'a remote base without opt-in',
        files: {
          'app/kustomization.yaml':
            'resources: [settings.yaml, "https://github.com/org/repo//deploy?ref=v1"]\n',
        },
        error:
          /app\/kustomization\.yaml: resources: remote resource .* kustomizeRemoteResources: true/,
      },
      {
        name: 'a kustomization syntax error',
        files: { 'app/kustomization.yaml': 'resources: [settings.yaml\n' },
        error: /app\/kustomization\.yaml: Error: invalid Kustomization/,
      },
      {
        name: 'a missing resource',
        files: { 'app/kustomization.yaml': 'resources: [settings.yaml, gone.yaml]\n' },
        error: /app\/gone\.yaml/,
      },
      {
        // kustomize names the directory it was reading; the built overlay is fine.
        name: 'a base kustomization syntax error',
        files: {
          'app/kustomization.yaml': 'resources: [settings.yaml, ../bases/web.v1]\n',
          'bases/web.v1/kustomization.yaml': 'resources: [cm.yaml\n',
        },
        error:
          /^kustomize build app: bases\/web\.v1\/kustomization\.yaml: Error: accumulating resources: .*invalid Kustomization/,
      },
      {
        name: 'a component kustomization syntax error',
        files: {
          'app/kustomization.yaml': 'resources: [settings.yaml]\ncomponents: [../comp]\n',
          'comp/kustomization.yaml':
            'apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [x\n',
        },
        error:
          /^kustomize build app: comp\/kustomization\.yaml: Error: accumulating components: .*invalid Kustomization/,
      },
    ];

    for (const bad of cases) {
      // Act
      const sha = await pushFiles(repo, { ...good, ...bad.files });
      const result = await syncTrack(track, { trigger: 'manual' }, fixture.deps);

      // Assess
      assert.equal(result.result, 'failed', bad.name);
      assert.equal(result.revision, sha, bad.name);
      assert.match(result.error ?? '', bad.error, bad.name);
      assert.equal(await fixture.configMapValue(ns, 'settings'), 'good', bad.name);
      const state = await readTrackState(fixture.deps.state, track.name);
      assert.equal(
        state.appliedRevision,
        applied.revision,
        `${bad.name}: the last good revision stays`,
      );
      assert.equal(await fixture.deps.artifacts.has(track.name, sha), false, bad.name);
    }
  });

  it('refuses a chart that fails to template and a values file that does not exist', async () => {
    // Prepare
    const { track, repo, ns } = await fixture.newTrack(
      'bad-chart',
      `helm: {chart: charts/web, valuesFiles: [values-prod.yaml]}\n${LEAVE_CRDS}`,
    );
    await pushFiles(repo, CHART);
    const applied = await syncTrack(track, { trigger: 'manual' }, fixture.deps);
    assert.equal(applied.result, 'applied', applied.error);

    const cases: { name: string; files: Files; error: RegExp }[] = [
      {
        name: 'a template error',
        files: {
          ...CHART,
          'charts/web/templates/broken.yaml': '{{ required "size is needed" .Values.missing }}\n',
        },
        error:
          /helm template charts\/web: .*charts\/web\/templates\/broken\.yaml|web\/templates\/broken\.yaml.*size is needed/,
      },
      {
        name: 'a missing values file',
        files: { ...CHART, 'values-prod.yaml': null as unknown as string },
        error: /helm\.valuesFiles\[0\]: values-prod\.yaml does not exist in the revision/,
      },
    ];
    for (const bad of cases) {
      // Act
      await pushFiles(repo, bad.files);
      const result = await syncTrack(track, { trigger: 'manual' }, fixture.deps);

      // Assess
      assert.equal(result.result, 'failed', bad.name);
      assert.match(result.error ?? '', bad.error, bad.name);
      const settings = await fixture.core.readNamespacedConfigMap({
        name: 'bad-chart-settings',
        namespace: ns,
      });
      assert.equal(settings.data?.size, 'large', bad.name);
      const state = await readTrackState(fixture.deps.state, track.name);
      assert.equal(state.appliedRevision, applied.revision, bad.name);
    }
  });
});
