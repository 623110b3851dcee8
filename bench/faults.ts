/**
 * `npm run bench -- faults`: the fault trials of test/harness/fault-trials.ts
 * (issue 18), ten or more of each (`--runs N` raises it; `--quick` runs 3),
 * on real parts: a test cluster of its own whose API server is killed and
 * started again, the bench's test cluster for the other trials, the test Git
 * server behind a fault proxy, and MinIO. Prints one markdown row per fault
 * (what was tried, trials, what was observed, figures) and returns the
 * timings as rows of the bench table. Nothing is asserted here: the tests
 * (test/integration/faults*.test.ts) do that for a few trials.
 */
import { S3Store } from '../src/store/s3-store.ts';
import { startTestCluster } from '../test/harness/cluster.ts';
import {
  apiServerKillTrial,
  deliveryTrial,
  gitFaultTrial,
  killedApplyTrial,
  leaseSkewTrial,
  resolvedAtSkewTrial,
  storeFaultTrial,
  type Convergence,
  type FaultWorld,
} from '../test/harness/fault-trials.ts';
import { startMinio } from '../test/harness/minio.ts';
import type { BenchContext } from './lib/context.ts';
import { median } from './lib/stats.ts';
import type { Benchmark, Measurement } from './lib/types.ts';

/** How many trials of each fault: never fewer than ten in a full run. */
function trialsOf(ctx: BenchContext): number {
  return ctx.options.quick ? 3 : Math.max(10, ctx.runs);
}

/** `7/10`-style count of `values` meeting `test`. */
function count<T>(values: readonly T[], test: (value: T) => boolean): string {
  return `${values.filter(test).length}/${values.length}`;
}

/** What the trials' end states add up to. */
function convergenceNote(states: readonly Convergence[]): string {
  const lost = states.reduce((sum, s) => sum + s.lost.length, 0);
  const left = states.reduce((sum, s) => sum + s.leftBehind.length, 0);
  const touched = states.filter((s) => s.bystanderTouched).length;
  return `converged ${count(states, (s) => s.converged)} (objects lost ${lost}, left behind ${left}, bystander touched ${touched})`;
}

/** Distinct values with how often each came. */
function tally(values: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
  return [...counts].map(([value, n]) => `${value} ×${n}`).join(', ');
}

const seconds = (values: readonly number[]): string =>
  `median ${(median(values) / 1000).toFixed(2)} s (min ${(Math.min(...values) / 1000).toFixed(2)}, max ${(Math.max(...values) / 1000).toFixed(2)})`;

/** One markdown row of the reliability table. */
interface Row {
  readonly tried: string;
  readonly trials: number;
  readonly observed: string;
  readonly figures: string;
}

function printRows(rows: readonly Row[]): void {
  console.log('\n| what was tried | trials | what was observed | figures |');
  console.log('| --- | --- | --- | --- |');
  for (const row of rows) {
    console.log(`| ${row.tried} | ${row.trials} | ${row.observed} | ${row.figures} |`);
  }
}

async function run(ctx: BenchContext): Promise<Measurement[]> {
  const trials = trialsOf(ctx);
  const git = await ctx.git();
  const shared = await ctx.testCluster();
  const world: FaultWorld = {
    git,
    kubeconfigPath: shared.kubeconfigPath,
    workDir: await ctx.scratch('faults'),
  };
  const rows: Row[] = [];
  const measurements: Measurement[] = [];
  const progress = (what: string, i: number): void => {
    process.stderr.write(`# faults: ${what} ${i + 1}/${trials}\n`);
  };

  // Fault 3: the Git host.
  for (const fault of ['status500', 'hang', 'closeMidPack', 'stall'] as const) {
    const seen = [];
    for (let i = 0; i < trials; i++) {
      progress(`git ${fault}`, i);
      // A hang is given up after 5 s here, not the default 60 s, to keep the run short.
      const options = fault === 'hang' ? { idleTimeoutMs: 5_000 } : { stallMs: 6_000 };
      seen.push(await gitFaultTrial(world, fault, options));
    }
    const failMs = seen.map((s) => s.failMs);
    const convergeMs = seen.map((s) => s.convergeMs);
    rows.push({
      tried: `Git host ${{ status500: 'answers 500', hang: 'hangs (accepts, never answers; idle timeout set to 5 s)', closeMidPack: 'closes the connection mid-pack', stall: 'slow: silent for 6 s before the pack (default idle timeout, 60 s)' }[fault]} while a new revision is fetched`,
      trials,
      observed: `fetch ${tally(seen.map((s) => `${s.outcome} ${s.reason}`))}; status says "${seen[0]?.message}"; last good revision kept applied ${count(seen, (s) => s.lastGoodKept)}; fault removed, next fetch+sync: ${convergenceNote(seen.map((s) => s.after))}`,
      figures:
        fault === 'stall'
          ? `fetch + sync through the stall ${seconds(failMs)}`
          : `gave up after ${seconds(failMs)}; fault removed → applied ${seconds(convergeMs)}`,
    });
    measurements.push(
      {
        metric: fault === 'stall' ? 'git stall: fetch + sync' : `git ${fault}: fetch gave up`,
        unit: 'ms',
        runs: failMs,
      },
      { metric: `git ${fault}: fault removed → applied`, unit: 'ms', runs: convergeMs },
    );
  }

  // Fault 4: the process applying a revision is killed.
  {
    const seen = [];
    for (let i = 0; i < trials; i++) {
      progress('apply process SIGKILL', i);
      seen.push(await killedApplyTrial(world));
    }
    rows.push({
      tried:
        'the process running a sync job killed (SIGKILL) mid-apply while it holds the lease; the next revision (dropping what the killed job added) queued',
      trials,
      observed: `lease left held ${count(seen, (s) => s.leaseLeft)}; next job before expiry: ${tally(seen.map((s) => s.beforeExpiry))}; after expiry: ${tally(seen.map((s) => s.afterExpiry))}; ${convergenceNote(seen.map((s) => s.after))}`,
      figures: `objects of the killed revision in the cluster when killed: median ${median(seen.map((s) => s.appliedWhenKilled))} of 120 (min ${Math.min(...seen.map((s) => s.appliedWhenKilled))}, max ${Math.max(...seen.map((s) => s.appliedWhenKilled))}); lease = timeout × 2 + 60 s (300 s by default)`,
    });
  }

  // Fault 5: duplicate and late deliveries.
  {
    const seen = [];
    const started: number[] = [];
    for (let i = 0; i < trials; i++) {
      progress('duplicate/late deliveries', i);
      const at = Date.now();
      seen.push(await deliveryTrial(world));
      started.push(Date.now() - at);
    }
    rows.push({
      tried:
        'queue delivers the newest sync job twice at once and once more, the older revision’s job twice after it, and a fetch that resolved earlier finishes last',
      trials,
      observed: `deliveries: ${tally(seen.map((s) => s.results.join(' → ')))}; late fetch ${tally(seen.map((s) => s.lateFetch))}; older revision applied after the newer ${seen.reduce((n, s) => n + s.olderAppliedAfterNewer, 0)} times; newest applied ${count(seen, (s) => s.appliedRevision === s.newest)}; ${convergenceNote(seen.map((s) => s.after))}`,
      figures: `whole trial ${seconds(started)}`,
    });
  }

  // Fault 6: clock skew, the resolvedAt rule and the lease.
  {
    const variants = [
      { skew: 2_000, gap: 5_000, label: 'inside: skew 2 s < gap 5 s' },
      { skew: 5_000, gap: 5_000, label: 'edge: skew 5 s = gap 5 s' },
      { skew: 5_001, gap: 5_000, label: 'beyond: skew 5.001 s > gap 5 s' },
    ];
    for (const variant of variants) {
      const seen = [];
      for (let i = 0; i < trials; i++) {
        progress(`skew ${variant.label}`, i);
        seen.push(await resolvedAtSkewTrial(world, variant.skew, variant.gap));
      }
      rows.push({
        tried: `clock skew between fetches (resolvedAt rule), ${variant.label}: A (clock ahead) resolves commit 1, B resolves commit 2 a gap later`,
        trials,
        observed: `B's fetch: ${tally(seen.map((s) => s.newerFetch))}; newer commit desired ${count(seen, (s) => s.desiredIsNewer)}; poll 5 min later: ${tally(seen.map((s) => s.afterPoll))}; ${convergenceNote(seen.map((s) => s.after))}`,
        figures: 'clocks injected (no waiting)',
      });
    }
    const leaseMs = 120_000 * 2 + 60_000;
    for (const skew of [leaseMs - 1_000, leaseMs + 1_000]) {
      const seen = [];
      for (let i = 0; i < trials; i++) {
        progress(`lease skew ${skew}`, i);
        seen.push(await leaseSkewTrial(world, skew));
      }
      rows.push({
        tried: `clock skew and the apply lease: the holder's clock ${skew / 1000} s behind (lease ${leaseMs / 1000} s), a second function runs the track's job while the holder is mid-apply`,
        trials,
        observed: `second job ${tally(seen.map((s) => s.second))}; two applies at once ${count(seen, (s) => s.overlapped)}; holder's job ${tally(seen.map((s) => s.first))}; ${convergenceNote(seen.map((s) => s.after))}`,
        figures: 'clocks injected (no waiting)',
      });
    }
  }

  // Fault 2: S3 (MinIO) killed mid-sync.
  {
    const minio = await startMinio();
    try {
      const bucket = await minio.createBucket();
      const seen = [];
      for (let i = 0; i < trials; i++) {
        progress('MinIO SIGKILL', i);
        const store = new S3Store({
          bucket,
          prefix: `faults-${i}/`,
          client: minio.client(),
          kmsKeyId: minio.kmsKeyName,
        });
        seen.push(await storeFaultTrial(world, store, minio));
      }
      const restartMs = seen.map((s) => s.restartMs);
      rows.push({
        tried:
          'S3 (MinIO) killed (SIGKILL) mid-sync, after the 5th object applied; restarted; the job delivered again',
        trials,
        observed: `job ${tally(seen.map((s) => s.during))} (thrown: the queue retries); state readable and still at revision 1 ${count(seen, (s) => s.stateReadable && s.appliedAfterFault)}; history entries of the failed job ${seen.reduce((n, s) => n + s.historyOfFailedJob, 0)}; retry at once ${tally(seen.map((s) => s.retryAtOnce))}; redelivered after the visibility timeout (600 s, clock injected) ${tally(seen.map((s) => s.redelivered))}, recorded ${count(seen, (s) => s.recordedAfterRedelivery)}; ${convergenceNote(seen.map((s) => s.after))}`,
        figures: `MinIO restart ${seconds(restartMs)}`,
      });
      measurements.push({
        metric: 'MinIO killed: restart until live',
        unit: 'ms',
        runs: restartMs,
      });
    } finally {
      await minio.stop();
    }
  }

  // Fault 1: the API server killed mid-apply, on a cluster of its own.
  {
    process.stderr.write('# faults: starting a cluster whose API server is killed\n');
    const cluster = await startTestCluster();
    try {
      const own = { ...world, kubeconfigPath: cluster.kubeconfigPath };
      const seen = [];
      for (let i = 0; i < trials; i++) {
        progress('kube-apiserver SIGKILL', i);
        seen.push(await apiServerKillTrial(own, cluster));
      }
      const failMs = seen.map((s) => s.failMs);
      const restartMs = seen.map((s) => s.restartMs);
      const convergeMs = seen.map((s) => s.convergeMs);
      rows.push({
        tried:
          'kube-apiserver killed (SIGKILL) mid-apply (after the 10th of 120 objects sent); restarted; the same sync job delivered again',
        trials,
        observed: `job ${tally(seen.map((s) => s.during))}, e.g. "${seen[0]?.error?.slice(0, 160)}"; applied revision unchanged ${count(seen, (s) => s.appliedAfterFault)}; nothing pruned by the failed job ${count(seen, (s) => s.notPrunedOnFailure)}; redelivered job ${tally(seen.map((s) => s.retry))}; ${convergenceNote(seen.map((s) => s.after))}`,
        figures: `kill → job failed ${seconds(failMs)}; API server restart ${seconds(restartMs)}; restart start → converged ${seconds(convergeMs)}`,
      });
      measurements.push(
        { metric: 'apiserver killed: kill → job failed', unit: 'ms', runs: failMs },
        { metric: 'apiserver killed: restart → converged', unit: 'ms', runs: convergeMs },
      );
    } finally {
      await cluster.stop();
    }
  }

  printRows(rows);
  return measurements.map((m) => ({
    ...m,
    notes: [`${trials} trials; outcomes in the markdown table printed above`],
  }));
}

export const faults: Benchmark = {
  name: 'faults',
  title: 'fault trials: Git host, killed apply, deliveries, clock skew, S3, API server',
  run,
};
