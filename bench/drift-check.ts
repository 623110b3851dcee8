/**
 * No-op drift check of N objects that driftless applied: `detectDrift` (one
 * LIST per kind and namespace, local comparison) over a fresh connection
 * whose transport counts requests, against `kubectl diff --server-side`
 * (a GET and a dry-run PATCH per object) as driftless' field manager.
 */
import { applyObjects, withOwnershipLabel } from '../src/apply/apply-objects.ts';
import { FIELD_MANAGER } from '../src/apply/ownership.ts';
import { KubeApiCluster } from '../src/cluster/kube-api-cluster.ts';
import { detectDrift } from '../src/drift/index.ts';
import type { BenchContext } from './lib/context.ts';
import { countingTransport } from './lib/counting-transport.ts';
import { kubectlFor, traceOf } from './lib/kubectl.ts';
import { benchObjects, kindsOf, writeManifests } from './lib/manifests.ts';
import { rotated, timed } from './lib/stats.ts';
import type { Benchmark, Measurement } from './lib/types.ts';

const TRACK = 'bench';

export const driftCheck: Benchmark = {
  name: 'drift-check',
  title: 'No-op drift check of 1,500 objects',
  async run(ctx: BenchContext): Promise<Measurement[]> {
    const count = ctx.count(1500);
    const endpoint = await ctx.endpoint();
    const kubectl = await kubectlFor(ctx);
    const ns = await ctx.namespace('drift');
    const objects = benchObjects(count, ns);
    const applied = await applyObjects(await ctx.port(), objects, { track: TRACK });
    const failed = applied.changeset.filter((e) => e.action === 'failed');
    if (failed.length > 0) throw new Error(`set-up apply failed: ${failed[0]?.error}`);
    // kubectl diffs the objects as driftless applies them (with the ownership
    // label), so both sides look at the same desired state and find nothing.
    const dir = await ctx.scratch('drift-check');
    await writeManifests(
      dir,
      objects.map((o) => withOwnershipLabel(o, TRACK)),
    );
    const diffArgs = [
      'diff',
      '--server-side',
      `--field-manager=${FIELD_MANAGER}`,
      '--force-conflicts',
      '-f',
      `${dir}/`,
    ];

    const timeRuns: number[] = [];
    const requestRuns: number[] = [];
    const kubectlRuns: number[] = [];
    let kubectlRequests = 0;
    let found = 0;
    let kubectlFound = false;
    let byMethod: Record<string, number> = {};
    for (let run = 0; run <= ctx.runs; run++) {
      const measured = run > 0;
      await rotated(run, [
        async () => {
          const counter = countingTransport(endpoint);
          const { ms, value } = await timed(() =>
            detectDrift(
              new KubeApiCluster(counter.transport),
              { name: TRACK, ignore: [] },
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
      process.stderr.write(`# drift-check run ${run}${measured ? '' : ' (warm-up)'} done\n`);
    }

    const kinds = kindsOf(objects);
    const sanity = [
      ...(found > 0
        ? [`driftless reported ${found} drifted/missing/unreadable objects on a no-op check`]
        : []),
      ...(kubectlFound ? ['kubectl diff reported differences on a no-op check'] : []),
    ];
    return [
      {
        metric: `no-op drift check, ${count} objects, time`,
        unit: 'ms',
        runs: timeRuns,
        peer: { label: 'kubectl diff --server-side', runs: kubectlRuns },
        goal: { maxRatio: 0.1 },
        notes: [
          'driftless = detectDrift over a fresh connection (discovery included); kubectl = the whole process with a warm discovery cache',
          ...sanity,
        ],
      },
      {
        metric: `no-op drift check, ${count} objects, API requests`,
        unit: 'requests',
        runs: requestRuns,
        peer: { label: 'kubectl diff', runs: requestRuns.map(() => kubectlRequests) },
        goal: { max: kinds + 10 },
        notes: [
          `${kinds} kinds in one namespace, so the goal is ${kinds} + 10; driftless' requests by method: ${JSON.stringify(byMethod)} (discovery included); kubectl's count is from one --v=6 run`,
        ],
      },
    ];
  },
};
