/**
 * First apply of N objects into a fresh namespace: driftless' `applyObjects`
 * (staged SSA over `KubeApiCluster.forEndpoint`, kubeconfig, connection and discovery
 * included) against `kubectl apply --server-side -f dir/`, with the raw
 * concurrent SSA PATCHes beside them as the physical baseline.
 */
import { APPLY_CONCURRENCY, applyObjects, withOwnershipLabel } from '../src/apply/apply-objects.ts';
import { FIELD_MANAGER } from '../src/apply/ownership.ts';
import { endpointFromFile } from '../src/cluster/connect-cluster.ts';
import { KubeApiCluster } from '../src/cluster/kube-api-cluster.ts';
import type { KubeObject } from '../src/cluster/kube-object.ts';
import type { BenchContext } from './lib/context.ts';
import { coresDuring } from './lib/cpu-time.ts';
import { kubectlFor, traceOf } from './lib/kubectl.ts';
import { benchObjects, writeManifests } from './lib/manifests.ts';
import { rawApply } from './lib/raw-apply.ts';
import { rotated, timed } from './lib/stats.ts';
import type { Benchmark, Measurement } from './lib/types.ts';

const TRACK = 'bench';

export const firstApply: Benchmark = {
  name: 'first-apply',
  title: 'First apply of 1,000 objects',
  async run(ctx: BenchContext): Promise<Measurement[]> {
    const count = ctx.count(1000);
    const kc = await ctx.kubeConfig();
    const { kubeconfig } = await ctx.kubectl();
    const kubectl = await kubectlFor(ctx);
    const driftlessRuns: number[] = [];
    const kubectlRuns: number[] = [];
    const rawRuns: number[] = [];
    // Where the 2 cores went: the cluster's processes and driftless' own, per run.
    const clusterPids = (await ctx.testCluster()).processes.map(({ child }) => child.pid as number);
    const cores = { driftlessCluster: [] as number[], driftlessOwn: [] as number[] };
    const clusterCpuMs = { driftless: [] as number[], kubectl: [] as number[] };
    let kubectlTrace = { requests: 0, throttled: 0 };
    let failures = 0;

    // Run 0 is the warm-up (TLS, kubectl's discovery cache, the API server's
    // caches); it is not counted. kubectl runs at --v=6 there only, to see
    // whether client-go's rate limiter held its requests back.
    for (let run = 0; run <= ctx.runs; run++) {
      const measured = run > 0;
      const driftlessNs = await ctx.namespace('apply-d');
      const kubectlNs = await ctx.namespace('apply-k');
      const rawNs = await ctx.namespace('apply-r');
      const dir = await ctx.scratch(`first-apply-${run}`);
      await writeManifests(dir, benchObjects(count, kubectlNs));
      const driftlessObjects = benchObjects(count, driftlessNs);
      // The raw baseline sends what driftless sends: the objects with the ownership label.
      const rawObjects: KubeObject[] = benchObjects(count, rawNs).map((o) =>
        withOwnershipLabel(o, TRACK),
      );

      await rotated(run, [
        async () => {
          const { ms, value, othersCores, ownCores } = await coresDuring(clusterPids, async () => {
            const cluster = KubeApiCluster.forEndpoint(endpointFromFile(kubeconfig));
            return applyObjects(cluster, driftlessObjects, { track: TRACK });
          });
          failures += value.changeset.filter((e) => e.action === 'failed').length;
          if (!measured) return;
          driftlessRuns.push(ms);
          cores.driftlessCluster.push(othersCores);
          cores.driftlessOwn.push(ownCores);
          clusterCpuMs.driftless.push(othersCores * ms);
        },
        async () => {
          const args = ['apply', '--server-side', '-f', `${dir}/`, ...(measured ? [] : ['--v=6'])];
          const { ms, value, othersCores } = await coresDuring(clusterPids, () => kubectl(args));
          if (!measured) {
            kubectlTrace = traceOf(value.stderr);
            return;
          }
          kubectlRuns.push(ms);
          clusterCpuMs.kubectl.push(othersCores * ms);
        },
        async () => {
          const { ms } = await timed(() => rawApply(kc, rawObjects, FIELD_MANAGER));
          if (measured) rawRuns.push(ms);
        },
      ]);
      process.stderr.write(`# first-apply run ${run}${measured ? '' : ' (warm-up)'} done\n`);
    }

    const throttling =
      kubectlTrace.throttled > 0
        ? `kubectl IS client-side throttled: ${kubectlTrace.throttled} "Waited before sending request" lines at --v=6`
        : `kubectl is not client-side throttled: --v=6 shows ${kubectlTrace.requests} requests (one sequential SSA PATCH per object, discovery cached) and no "Waited before sending request" line`;
    const base = {
      metric: `first apply, ${count} objects`,
      unit: 'ms' as const,
      runs: driftlessRuns,
    };
    return [
      {
        ...base,
        peer: { label: 'kubectl apply --server-side', runs: kubectlRuns },
        goal: { maxRatio: 0.3 },
        notes: [
          `driftless = applyObjects (staged SSA, ${APPLY_CONCURRENCY} in flight) incl. reading the kubeconfig, connecting and discovery; kubectl = the whole process incl. its start`,
          throttling,
          ...(failures > 0 ? [`${failures} objects FAILED to apply in driftless' runs`] : []),
        ],
      },
      {
        ...base,
        metric: `${base.metric} vs physical baseline`,
        peer: { label: `raw SSA PATCHes, ${APPLY_CONCURRENCY} in flight`, runs: rawRuns },
        notes: [
          "the ratio is driftless' time as a share of what the API server takes for the same PATCHes sent raw and concurrently; ~1× means the server, not driftless, is the limit",
        ],
      },
      {
        metric: `first apply, ${count} objects: cluster CPU time`,
        unit: 'ms',
        runs: clusterCpuMs.driftless,
        peer: { label: 'during kubectl apply --server-side', runs: clusterCpuMs.kubectl },
        notes: [
          "CPU time etcd, kube-apiserver and kube-controller-manager spent while each side applied the same number of objects (from /proc/<pid>/stat): on 2 cores driftless' figure alone is at least half of it in wall time; kubectl's one-at-a-time requests cost the cluster more CPU per object",
        ],
      },
      {
        metric: `first apply, ${count} objects: cores the cluster used`,
        unit: 'cores',
        runs: cores.driftlessCluster,
        notes: [
          "the cluster's CPU time during driftless' apply divided by its wall time, of the machine's 2 cores",
        ],
      },
      {
        metric: `first apply, ${count} objects: cores driftless used`,
        unit: 'cores',
        runs: cores.driftlessOwn,
        notes: [
          "driftless' own CPU time (this process) during its apply divided by its wall time; with the row above, what was left of the 2 cores",
        ],
      },
    ];
  },
};
