/**
 * Rendering with the real tools, against the tools alone:
 *
 * - a kustomize overlay of 250 objects (a base of 250 ConfigMaps, an overlay
 *   with a name prefix, labels and a patch) fetched from the test Git server
 *   and rendered by Driftless (fresh Git cache, resolve, read the tree,
 *   kustomize build, parse and serialize the bundle), against `git clone
 *   --depth 1 && kustomize build` of the same commit;
 * - a chart of 200 objects rendered by Driftless (the revision written out,
 *   helm template, parse and serialize), against `helm template` of the same
 *   chart already on disk: in this process after earlier renders (a warm
 *   fetch function), and as the first render of a fresh process (cold V8).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dump } from 'js-yaml';
import { parseConfig } from '../src/config/index.ts';
import { renderRevision, serializeBundle } from '../src/render/index.ts';
import { createGitSource } from '../src/source/git/index.ts';
import { renderTrackRevision } from '../src/sync/render-track-revision.ts';
import type { StateStore } from '../src/store/ports.ts';
import { pushFiles, runGit } from '../test/harness/git-server.ts';
import { rendererBinaries } from '../test/harness/renderers.ts';
import type { BenchContext } from './lib/context.ts';
import { runCommand } from './lib/command.ts';
import { benchConfigMaps, manifestFiles } from './lib/manifests.ts';
import { median, rotated, timed } from './lib/stats.ts';
import type { Benchmark, Measurement } from './lib/types.ts';

/** One helm render is tens of ms: pairs measured per run, whose medians make the run's figure. */
const HELM_PAIRS = 5;

const RENDER_CHART_ONCE = fileURLToPath(new URL('./lib/render-chart-once.ts', import.meta.url));

/** A base of `count` ConfigMaps and an overlay over it: path -> content. */
function overlayTree(count: number): Record<string, string> {
  const base = manifestFiles(benchConfigMaps(count));
  const files: Record<string, string> = {};
  for (const [name, content] of Object.entries(base)) files[`base/${name}`] = content;
  files['base/kustomization.yaml'] = dump({ resources: Object.keys(base).sort() });
  files['overlays/prod/kustomization.yaml'] = dump({
    resources: ['../../base'],
    namePrefix: 'prod-',
    labels: [{ pairs: { env: 'prod' } }],
    patches: [
      {
        target: { kind: 'ConfigMap' },
        patch: '- {op: add, path: /data/overlay, value: prod}',
      },
    ],
  });
  return files;
}

/** A chart whose one template ranges over `count` ConfigMaps. */
function chartTree(count: number): Record<string, string> {
  return {
    'chart/Chart.yaml': 'apiVersion: v2\nname: bench\nversion: 1.0.0\n',
    'chart/values.yaml': `count: ${count}\nvalue: bench\n`,
    'chart/templates/configmaps.yaml': [
      '{{- range $i := until (int .Values.count) }}',
      '---',
      'apiVersion: v1',
      'kind: ConfigMap',
      'metadata:',
      '  name: {{ $.Release.Name }}-{{ $i }}',
      '  labels: {app.kubernetes.io/instance: {{ $.Release.Name | quote }}}',
      'data:',
      '  index: {{ $i | quote }}',
      '  value: {{ $.Values.value | quote }}',
      '{{- end }}',
    ].join('\n'),
  };
}

async function writeTree(dir: string, files: Record<string, string>): Promise<void> {
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), content);
  }
}

/** A state store that knows no track: what the fetch step reads for a track never applied. */
const NO_STATE = {
  read: async () => undefined,
} as unknown as StateStore;

export const render: Benchmark = {
  name: 'render',
  title: 'Rendering with kustomize and helm',
  async run(ctx: BenchContext): Promise<Measurement[]> {
    const tools = await rendererBinaries();
    process.env.DRIFTLESS_KUSTOMIZE = tools.kustomize;
    process.env.DRIFTLESS_HELM = tools.helm;
    const overlayCount = ctx.count(250);
    const chartCount = ctx.count(200);

    const git = await ctx.git();
    const repository = await git.createRepository(`render-${randomBytes(3).toString('hex')}`);
    await pushFiles(repository, overlayTree(overlayCount), { message: 'overlay' });
    const track = parseConfig(
      [
        'tracks:',
        '  - name: bench',
        `    repository: ${repository.url}`,
        '    subPath: overlays/prod',
        '    namespace: bench',
        '    auth: {type: basic, secret: env:UNUSED}',
      ].join('\n'),
      'driftless.yaml',
    ).tracks[0]!;
    const readSecret = async (): Promise<string> => `${repository.username}:${repository.password}`;

    const chartDir = await ctx.scratch('render-chart');
    const chartFiles = chartTree(chartCount);
    await writeTree(chartDir, chartFiles);
    const chartRevision = Object.entries(chartFiles).map(([path, content]) => ({
      path,
      content: new TextEncoder().encode(content),
    }));
    const chartSpec = {
      ...track,
      subPath: undefined,
      helm: { chart: 'chart', values: {}, valuesFiles: [] },
    };

    const fetchRender: number[] = [];
    const cloneBuild: number[] = [];
    const helmOurs: number[] = [];
    const helmTemplate: number[] = [];
    const helmFirstRender: number[] = [];
    const helmTemplateCold: number[] = [];
    const helmTemplateAlone = () =>
      runCommand(tools.helm, [
        'template',
        'bench',
        join(chartDir, 'chart'),
        '--include-crds',
        '--skip-tests',
      ]);
    let wrong = 0;
    for (let run = 0; run <= ctx.runs; run++) {
      const measured = run > 0;
      const cacheDir = await ctx.scratch(`render-git-${run}`);
      const cloneDir = join(await ctx.scratch(`render-clone-${run}`), 'repo');
      await rotated(run, [
        async () => {
          const { ms, value } = await timed(async () => {
            const source = createGitSource({ cacheDir, readSecret });
            const { revision } = await source.resolve(track);
            return renderTrackRevision(track, revision, { source, state: NO_STATE });
          });
          if (value.bundle.objects.length !== overlayCount) wrong++;
          if (measured) fetchRender.push(ms);
        },
        async () => {
          const { ms } = await timed(async () => {
            await runGit(['clone', '--quiet', '--depth', '1', repository.url, cloneDir], {
              credentials: repository,
            });
            await runCommand(tools.kustomize, ['build', join(cloneDir, 'overlays/prod')]);
          });
          if (measured) cloneBuild.push(ms);
        },
      ]);
      // One helm render is tens of ms: each run's figure is the median of HELM_PAIRS
      // alternating pairs, as for `--help` in cli-process, in a process warmed by earlier
      // renders (a warm fetch function). The first render of a process is its own row.
      const pairOurs: number[] = [];
      const pairTemplate: number[] = [];
      for (let i = 0; i < HELM_PAIRS; i++) {
        await rotated(run + i, [
          async () => {
            const { ms, value } = await timed(async () =>
              serializeBundle(await renderRevision(chartSpec, chartRevision)),
            );
            if (value.byteLength === 0) wrong++;
            pairOurs.push(ms);
          },
          async () => {
            pairTemplate.push((await timed(helmTemplateAlone)).ms);
          },
        ]);
      }
      if (measured) helmOurs.push(median(pairOurs));
      if (measured) helmTemplate.push(median(pairTemplate));
      await rotated(run, [
        async () => {
          const once = await runCommand(
            process.execPath,
            ['--import', 'tsx', RENDER_CHART_ONCE, chartDir],
            { env: { ...process.env, DRIFTLESS_HELM: tools.helm } },
          );
          if (measured) helmFirstRender.push(Number(once.stdout.trim()));
        },
        async () => {
          const { ms } = await timed(helmTemplateAlone);
          if (measured) helmTemplateCold.push(ms);
        },
      ]);
      process.stderr.write(`# render run ${run}${measured ? '' : ' (warm-up)'} done\n`);
    }
    const sanity = wrong > 0 ? [`${wrong} renders did not produce the expected objects`] : [];
    return [
      {
        metric: `fetch + kustomize render, overlay of ${overlayCount} objects`,
        unit: 'ms',
        runs: fetchRender,
        peer: { label: 'git clone --depth 1 && kustomize build', runs: cloneBuild },
        goal: { maxRatio: 1.2 },
        notes: [
          'driftless = a new Git source over an empty cache (resolve, shallow fetch, read the whole tree: bases may be anywhere), the tree written to a temporary directory, kustomize build, output parsed, checked and serialized as the artifact',
          ...sanity,
        ],
      },
      {
        metric: `helm render, chart of ${chartCount} objects`,
        unit: 'ms',
        runs: helmOurs,
        peer: { label: 'helm template (chart on disk)', runs: helmTemplate },
        goal: { maxRatio: 1.2 },
        notes: [
          'driftless = the revision written to a temporary directory, helm template, output parsed, checked and serialized as the artifact',
          `each run's figure is the median of ${HELM_PAIRS} alternating pairs in this process, which has rendered before (a warm fetch function); the first render of a process is the next row`,
          'driftless runs the renderers with GOGC=off and GOMEMLIMIT=384MiB (src/render/run-tool.ts): about 4 ms of helm template itself; the peer runs helm as installed, with Go defaults',
        ],
      },
      {
        metric: `helm render, chart of ${chartCount} objects, first render of a process`,
        unit: 'ms',
        runs: helmFirstRender,
        peer: { label: 'helm template (chart on disk)', runs: helmTemplateCold },
        notes: [
          'a fresh node process renders once (bench/lib/render-chart-once.ts; module loading not counted): V8 runs the YAML parser cold, several times slower than once warmed',
        ],
      },
    ];
  },
};
