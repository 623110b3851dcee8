/**
 * No-op drift check of N objects that driftless applied: `detectDrift` (one
 * LIST per kind and namespace, local comparison) over a fresh connection
 * whose transport counts requests, against `kubectl diff --server-side`
 * (a GET and a dry-run PATCH per object) as driftless' field manager.
 */
import { applyObjects, withOwnershipLabel } from '../src/apply/apply-objects.ts';
import type { BenchContext } from './lib/context.ts';
import { kubectlFor } from './lib/kubectl.ts';
import { benchObjects, kindsOf, writeManifests } from './lib/manifests.ts';
import { measureNoOpDrift } from './lib/no-op-drift.ts';
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
    const { timeRuns, requestRuns, kubectlRuns, kubectlRequests, byMethod, sanity } =
      await measureNoOpDrift({
        endpoint,
        kubectl,
        objects,
        manifestsDir: dir,
        track: TRACK,
        runs: ctx.runs,
        label: 'drift-check',
      });
    const kinds = kindsOf(objects);
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
