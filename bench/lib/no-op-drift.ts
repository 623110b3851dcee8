/**
 * One no-op drift comparison, shared by `drift-check` and `fleet`: for each
 * run, `detectDrift` over a fresh connection whose transport counts requests
 * (discovery included), against `kubectl diff --server-side` as driftless'
 * field manager of the manifests in `manifestsDir`, in rotating order. Run 0
 * is the warm-up; kubectl runs at --v=6 there to count its requests.
 */
import { FIELD_MANAGER } from '../../src/apply/ownership.ts';
import type { ClusterEndpoint } from '../../src/cluster/cluster-endpoint.ts';
import { KubeApiCluster } from '../../src/cluster/kube-api-cluster.ts';
import type { KubeObject } from '../../src/cluster/kube-object.ts';
import { detectDrift } from '../../src/drift/index.ts';
import { countingTransport } from './counting-transport.ts';
import { traceOf, type Kubectl } from './kubectl.ts';
import { rotated, timed } from './stats.ts';

export interface NoOpDriftRequest {
  readonly endpoint: ClusterEndpoint;
  readonly kubectl: Kubectl;
  /** The objects as applied (driftless compares them with the cluster). */
  readonly objects: readonly KubeObject[];
  /** The same objects as files, with the ownership label, for kubectl. */
  readonly manifestsDir: string;
  readonly track: string;
  /** Measured runs, after one warm-up. */
  readonly runs: number;
  /** Names the progress lines: `# <label> run N done`. */
  readonly label: string;
}

export interface NoOpDriftFigures {
  readonly timeRuns: number[];
  readonly requestRuns: number[];
  readonly kubectlRuns: number[];
  /** kubectl's requests, from the warm-up's --v=6 trace. */
  readonly kubectlRequests: number;
  /** driftless' requests of the last run, by HTTP method. */
  readonly byMethod: Record<string, number>;
  /** What a correct set-up never shows (differences found on a no-op check). */
  readonly sanity: string[];
}

export async function measureNoOpDrift(request: NoOpDriftRequest): Promise<NoOpDriftFigures> {
  const { endpoint, kubectl, objects } = request;
  const diffArgs = [
    'diff',
    '--server-side',
    `--field-manager=${FIELD_MANAGER}`,
    '--force-conflicts',
    '-f',
    `${request.manifestsDir}/`,
  ];
  const timeRuns: number[] = [];
  const requestRuns: number[] = [];
  const kubectlRuns: number[] = [];
  let kubectlRequests = 0;
  let found = 0;
  let kubectlFound = false;
  let byMethod: Record<string, number> = {};
  for (let run = 0; run <= request.runs; run++) {
    const measured = run > 0;
    await rotated(run, [
      async () => {
        const counter = countingTransport(endpoint);
        const { ms, value } = await timed(() =>
          detectDrift(
            new KubeApiCluster(counter.transport),
            { name: request.track, ignore: [] },
            objects,
          ),
        );
        found += value.drifted.length + value.missing.length + value.errors.length;
        if (measured) {
          timeRuns.push(ms);
          requestRuns.push(counter.total());
          byMethod = counter.byMethod();
        }
      },
      async () => {
        const args = measured ? diffArgs : [...diffArgs, '--v=6'];
        // Exit 1 means differences were found: a figure, not a failure.
        const { ms, value } = await timed(() => kubectl(args, [0, 1]));
        if (value.code === 1) kubectlFound = true;
        if (measured) kubectlRuns.push(ms);
        else kubectlRequests = traceOf(value.stderr).requests;
      },
    ]);
    process.stderr.write(`# ${request.label} run ${run}${measured ? '' : ' (warm-up)'} done\n`);
  }
  const sanity = [
    ...(found > 0
      ? [`driftless reported ${found} drifted/missing/unreadable objects on a no-op check`]
      : []),
    ...(kubectlFound ? ['kubectl diff reported differences on a no-op check'] : []),
  ];
  return { timeRuns, requestRuns, kubectlRuns, kubectlRequests, byMethod, sanity };
}
