/**
 * `helm template` of a chart with the real, pinned Helm: a chart in the
 * revision, or one from an HTTP(S) chart repository or an OCI registry.
 *
 * - values: `valuesFiles` (from the revision) in order, then `values`;
 * - CRDs: `--include-crds` (the apply step stages CRDs before the rest);
 * - tests: `--skip-tests` leaves `helm.sh/hook: test` objects out; other
 *   hooks are rendered and applied as ordinary objects (docs/configuration.md);
 * - capabilities: the cluster's, recorded by the apply step, so charts that
 *   branch on `.Capabilities` render for the real cluster;
 * - the network: only a repository chart gets it, to download the chart.
 */
import { writeFile } from 'node:fs/promises';
import { posix } from 'node:path';
import type { HelmSource } from '../config/types.ts';
import type { ClusterCapabilities } from './capabilities.ts';
import { RenderInputError } from './errors.ts';
import { withRevisionTree } from './revision-tree.ts';
import { networkEnvironment, NO_NETWORK, runTool } from './run-tool.ts';
import type { RevisionFile } from './types.ts';

export interface HelmOptions {
  readonly binary: string;
  readonly chart: HelmSource;
  readonly releaseName: string;
  /** The track's subPath (`''` = root): chart and values paths are relative to it. */
  readonly dir: string;
  readonly namespace?: string;
  readonly capabilities?: ClusterCapabilities;
  readonly timeoutMs: number;
  readonly maxOutputBytes: number;
  /** Aborted when the caller is asked to stop: kills the renderer (run-tool.ts). */
  readonly signal?: AbortSignal;
}

/** The output of `helm template`, and how to name the file each document came from. */
export interface HelmOutput {
  readonly output: Buffer;
  /** Maps the path in a `# Source:` comment (`<chart name>/templates/x.yaml`) to a file to report. */
  readonly sourceFile: (helmSource: string) => string;
  /** Where objects without a `# Source:` comment are reported. */
  readonly chartLabel: string;
}

function inDir(dir: string, path: string): string {
  return posix.normalize(dir === '' ? path : posix.join(dir, path));
}

function existsInTree(files: readonly RevisionFile[], path: string): boolean {
  return files.some((file) => file.path === path || file.path.startsWith(`${path}/`));
}

/** Runs `helm template` for the track's chart over the revision. */
export async function helmTemplate(
  files: readonly RevisionFile[],
  options: HelmOptions,
): Promise<HelmOutput> {
  const { chart } = options;
  const localChart = chart.repository === undefined ? inDir(options.dir, chart.chart) : undefined;
  if (localChart !== undefined && (localChart === '..' || localChart.startsWith('../'))) {
    throw new RenderInputError(
      `helm.chart: ${JSON.stringify(chart.chart)} is outside the repository`,
    );
  }
  if (localChart !== undefined && !existsInTree(files, `${localChart}/Chart.yaml`)) {
    throw new RenderInputError(
      `helm.chart: ${localChart}/Chart.yaml does not exist in the revision`,
    );
  }
  const valuesFiles = chart.valuesFiles.map((path, index) => {
    const inRevision = inDir(options.dir, path);
    if (
      inRevision === '..' ||
      inRevision.startsWith('../') ||
      !files.some((f) => f.path === inRevision)
    ) {
      throw new RenderInputError(
        `helm.valuesFiles[${index}]: ${inRevision} does not exist in the revision`,
      );
    }
    return inRevision;
  });
  const chartLabel = localChart ?? `${chart.repository?.replace(/\/$/, '')}/${chart.chart}`;

  const output = await withRevisionTree(files, async ({ root, scratch }) => {
    const args = ['template', options.releaseName];
    if (localChart !== undefined) args.push(posix.join(root, localChart));
    else if (chart.repository?.startsWith('oci://'))
      args.push(`${chart.repository.replace(/\/$/, '')}/${chart.chart}`);
    else args.push(chart.chart, '--repo', chart.repository ?? '');
    if (chart.version !== undefined) args.push('--version', chart.version);
    if (options.namespace !== undefined) args.push('--namespace', options.namespace);
    args.push('--include-crds', '--skip-tests');
    if (options.capabilities) {
      args.push('--kube-version', options.capabilities.kubeVersion);
      if (options.capabilities.apiVersions.length > 0)
        args.push('--api-versions', options.capabilities.apiVersions.join(','));
    }
    for (const path of valuesFiles) args.push('--values', posix.join(root, path));
    if (Object.keys(chart.values).length > 0) {
      // JSON is YAML: written as is, merged last.
      const inline = posix.join(scratch, 'values.json');
      await writeFile(inline, JSON.stringify(chart.values));
      args.push('--values', inline);
    }
    // Only a repository chart needs the network, to download the chart.
    const network = localChart === undefined ? networkEnvironment() : NO_NETWORK;
    return runTool({
      tool: `helm template ${chartLabel}${chart.version ? ` --version "${chart.version}"` : ''}`,
      binary: options.binary,
      args,
      cwd: root,
      env: {
        HOME: scratch,
        HELM_CACHE_HOME: posix.join(scratch, 'cache'),
        HELM_CONFIG_HOME: posix.join(scratch, 'config'),
        HELM_DATA_HOME: posix.join(scratch, 'data'),
        PATH: '',
        ...network,
      },
      timeoutMs: options.timeoutMs,
      maxOutputBytes: options.maxOutputBytes,
      ...(options.signal ? { signal: options.signal } : {}),
      describe: (text) =>
        text
          .replaceAll(`${scratch}/values.json`, 'helm.values')
          .replaceAll(`${root}/`, '')
          .replaceAll(root, '.'),
    });
  });

  return {
    output,
    chartLabel,
    // `# Source: web/templates/x.yaml` names the chart by its name; a chart in the
    // revision is reported at its path instead, so the file can be opened.
    sourceFile: (helmSource) => {
      const rest = helmSource.slice(helmSource.indexOf('/') + 1);
      return `${chartLabel}/${rest}`;
    },
  };
}
