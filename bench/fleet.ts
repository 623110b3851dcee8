/**
 * A fleet on the S3 store: what one scheduler tick costs, what the jobs it
 * queues cost, and how that grows with the number of tracks; a drift check
 * of 10,000 objects in 100 namespaces against `kubectl diff --server-side`;
 * the peak RSS of a 20,000-object sync.
 *
 * - The store is S3Store on a real MinIO (test/harness/minio.ts) whose SDK
 *   client counts every HTTP request by operation (lib/counting-s3.ts).
 * - The fleet: N tracks (1,000; a fifth in a quick run) of 10 ConfigMaps
 *   each, one namespace per track, spread over 3 test clusters, all reading
 *   one repository of the test Git server. Each cluster is reached through a
 *   transport that counts requests by method.
 * - A tick is `scheduleDueTracks` as the drift function runs it (1-minute
 *   period); the queue port only counts the jobs it receives (the SQS
 *   messages the function would send). The jobs are then run as the fetch and
 *   apply functions run them (runJob + executeJob), in phases (fetch polls,
 *   the syncs they queue, drift checks) so each phase's requests are its own.
 * - Growth: the tick over 100, 1,000 and 3,000 tracks, each track's state a
 *   copy of a real fleet track's state (inventory and observed objects
 *   included) with its last drift check spread over the last 5 minutes, the
 *   default interval: a fifth of the tracks are due at each tick, as in a
 *   steady state; and the same stores with every track due.
 */
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { applyObjects, withOwnershipLabel } from '../src/apply/apply-objects.ts';
import { endpointFromFile } from '../src/cluster/connect-cluster.ts';
import { KubeApiCluster } from '../src/cluster/kube-api-cluster.ts';
import type { KubeObject } from '../src/cluster/kube-object.ts';
import { loadConfig } from '../src/config/index.ts';
import { readSecret } from '../src/config/read-secret.ts';
import type { Track } from '../src/config/types.ts';
import { mapWithLimit } from '../src/map-with-limit.ts';
import { createTrackSource } from '../src/source/track-source.ts';
import { S3Store } from '../src/store/s3-store.ts';
import { executeJob } from '../src/sync/execute-job.ts';
import type { Job, JobQueue } from '../src/sync/jobs.ts';
import { runJob, type JobDeps, type JobResult } from '../src/sync/run-job.ts';
import { KeptTrackStates } from '../src/sync/kept-track-states.ts';
import { scheduleDueTracks } from '../src/sync/schedule.ts';
import { updateTrackState } from '../src/sync/track-state.ts';
import type { TrackState } from '../src/sync/track-state.ts';
import { startTestCluster, type TestCluster } from '../test/harness/cluster.ts';
import { pushFiles } from '../test/harness/git-server.ts';
import { startMinio, type MinioServer } from '../test/harness/minio.ts';
import type { BenchContext } from './lib/context.ts';
import { countS3Requests, s3Since, type CountingS3, type S3Counts } from './lib/counting-s3.ts';
import { countingTransport, type CountingTransport } from './lib/counting-transport.ts';
import { benchEnv } from './lib/driftless-config.ts';
import { installedCli } from './lib/installed-cli.ts';
import { kubectlFor } from './lib/kubectl.ts';
import { benchConfigMaps, benchObjects, kindsOf, manifestFiles } from './lib/manifests.ts';
import { measureNoOpDrift } from './lib/no-op-drift.ts';
import { peakRssSync } from './lib/peak-rss-sync.ts';
import { median, timed } from './lib/stats.ts';
import type { Benchmark, Measurement } from './lib/types.ts';

const CLUSTERS = 3;
const OBJECTS_PER_TRACK = 10;
/** serverless.yml's `rate(1 minute)`, as handlers/drift.ts passes it. */
const TICK_PERIOD_MS = 60_000;
/** The default track interval (config schema): a fifth of the tracks are due at each tick. */
const INTERVAL_MS = 300_000;
/** Jobs run at once, as parallel function invocations would (apply's default cap is 5). */
const JOB_CONCURRENCY = 4;
/** The heavy peers (kubectl diff of 10,000 objects, 20,000-object syncs) run at most this often. */
const MAX_HEAVY_RUNS = 3;
const WRITE_METHODS = ['PATCH', 'PUT', 'POST', 'DELETE'] as const;

/** A JobQueue that keeps what it receives: each job is one SQS message of the deployed functions. */
class CountingQueue implements JobQueue {
  readonly jobs: Job[] = [];
  enqueue(job: Job): Promise<void> {
    this.jobs.push(job);
    return Promise.resolve();
  }
  take(): Job[] {
    return this.jobs.splice(0);
  }
}

/** Requests every cluster received, by method. */
function clusterCounts(counters: readonly CountingTransport[]): Record<string, number> {
  const sum: Record<string, number> = {};
  for (const counter of counters) {
    for (const [method, n] of Object.entries(counter.byMethod()))
      sum[method] = (sum[method] ?? 0) + n;
  }
  return sum;
}

function countsSince(
  before: Record<string, number>,
  after: Record<string, number>,
): Record<string, number> {
  const delta: Record<string, number> = {};
  for (const [key, n] of Object.entries(after)) {
    if (n - (before[key] ?? 0) > 0) delta[key] = n - (before[key] ?? 0);
  }
  return delta;
}

const totalOf = (counts: Record<string, number>): number =>
  Object.values(counts).reduce((sum, n) => sum + n, 0);

const writesOf = (counts: Record<string, number>): number =>
  WRITE_METHODS.reduce((sum, method) => sum + (counts[method] ?? 0), 0);

function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

/** What one phase of jobs cost: requests to S3 and the clusters, messages queued, each job's time. */
interface PhaseFigures {
  readonly jobs: number;
  readonly wallMs: number;
  readonly s3: S3Counts;
  readonly kube: Record<string, number>;
  readonly queued: number;
  readonly jobMs: number[];
  readonly results: Record<string, number>;
}

/** The fleet's stores, clusters, Git source and the counters on each. */
interface Fleet {
  readonly tracks: Track[];
  readonly store: S3Store;
  readonly s3: CountingS3;
  readonly kube: CountingTransport[];
  readonly queue: CountingQueue;
  readonly deps: JobDeps;
}

function summary(done: JobResult): string {
  switch (done.type) {
    case 'fetch':
      return done.result.outcome;
    case 'sync':
      return done.result.result;
    case 'drift':
      return done.result.drifted.length + done.result.missing.length + done.result.errors.length > 0
        ? 'drifted'
        : 'clean';
    default:
      return done.type;
  }
}

/** Runs `jobs` as the functions would, JOB_CONCURRENCY at once, and what that cost. */
async function runPhase(fleet: Fleet, jobs: readonly Job[]): Promise<PhaseFigures> {
  const s3Before = fleet.s3.snapshot();
  const kubeBefore = clusterCounts(fleet.kube);
  const queuedBefore = fleet.queue.jobs.length;
  const jobMs: number[] = [];
  const results: Record<string, number> = {};
  const { ms } = await timed(() =>
    mapWithLimit(jobs, JOB_CONCURRENCY, async (job) => {
      const { ms: one, value } = await timed(() => runJob(job, fleet.deps, executeJob));
      jobMs.push(one);
      const result = summary(value);
      results[result] = (results[result] ?? 0) + 1;
    }),
  );
  return {
    jobs: jobs.length,
    wallMs: ms,
    s3: s3Since(s3Before, fleet.s3.snapshot()),
    kube: countsSince(kubeBefore, clusterCounts(fleet.kube)),
    queued: fleet.queue.jobs.length - queuedBefore,
    jobMs,
    results,
  };
}

/** One tick of the drift function at `now`: its S3 requests, messages and time. */
async function tick(
  tracks: readonly Track[],
  store: S3Store,
  s3: CountingS3,
  now: Date,
  keptStates?: KeptTrackStates,
): Promise<{ ms: number; s3: S3Counts; messages: number; due: number; jobs: Job[] }> {
  const queue = new CountingQueue();
  const before = s3.snapshot();
  const { ms, value } = await timed(() =>
    scheduleDueTracks(
      now,
      { tracks, state: store, queue, ...(keptStates ? { keptStates } : {}) },
      { periodMs: TICK_PERIOD_MS },
    ),
  );
  return {
    ms,
    s3: s3Since(before, s3.snapshot()),
    messages: queue.jobs.length,
    due: value.tracks.length,
    jobs: queue.jobs,
  };
}

async function writeFleetConfig(
  dir: string,
  bucket: string,
  minio: MinioServer,
  clusters: readonly TestCluster[],
  repositoryUrl: string,
  count: number,
): Promise<string> {
  const lines = [
    'store:',
    '  type: s3',
    `  bucket: ${bucket}`,
    `  endpoint: ${minio.endpoint}`,
    'clusters:',
    ...clusters.flatMap((cluster, i) => [
      `  - name: c${i}`,
      `    kubeconfig: ${cluster.kubeconfigPath}`,
    ]),
    'tracks:',
  ];
  for (let i = 0; i < count; i++) {
    const name = trackName(i);
    lines.push(
      `  - name: ${name}`,
      `    cluster: c${i % clusters.length}`,
      `    repository: ${repositoryUrl}`,
      `    namespace: ${name}`,
      '    auth: {type: basic, secret: env:BENCH_GIT_CREDENTIALS}',
    );
  }
  const path = join(dir, 'driftless.yaml');
  await writeFile(path, `${lines.join('\n')}\n`);
  return path;
}

const trackName = (i: number): string => `fleet-${String(i).padStart(4, '0')}`;

/** `count` tracks like `template`, named seed-00000..., with state copied from `state`. */
async function seedStore(
  store: S3Store,
  template: Track,
  state: TrackState,
  count: number,
  now: Date,
): Promise<Track[]> {
  const tracks = Array.from({ length: count }, (_, i) => ({
    ...template,
    name: `seed-${String(i).padStart(5, '0')}`,
  }));
  await mapWithLimit(tracks, 16, async (track, i) => {
    // Last checks spread evenly over the last interval: a steady state.
    const checkedAt = new Date(now.getTime() - ((i + 0.5) / count) * INTERVAL_MS).toISOString();
    await store.write(track.name, { ...state, driftCheckedAt: checkedAt }, undefined);
  });
  return tracks;
}

export const fleet: Benchmark = {
  name: 'fleet',
  title:
    'A fleet on S3 across 3 clusters: tick, jobs, growth; 10,000-object drift; 20,000-object sync RSS',
  async run(ctx: BenchContext): Promise<Measurement[]> {
    const rows: Measurement[] = [];
    const minio = await startMinio();
    const extraClusters: TestCluster[] = [];
    try {
      const first = await ctx.testCluster();
      process.stderr.write(`# fleet: starting ${CLUSTERS - 1} more test clusters\n`);
      for (let i = 1; i < CLUSTERS; i++) extraClusters.push(await startTestCluster());
      const clusters = [first, ...extraClusters];
      rows.push(...(await fleetRows(ctx, minio, clusters)));
    } finally {
      await Promise.allSettled([minio.stop(), ...extraClusters.map((cluster) => cluster.stop())]);
    }
    rows.push(...(await driftRows(ctx)));
    rows.push(...(await rssRows(ctx)));
    return rows;
  },
};

/** The fleet on 3 clusters: the tick, its jobs, the no-op sync; then the tick's growth. */
async function fleetRows(
  ctx: BenchContext,
  minio: MinioServer,
  clusters: readonly TestCluster[],
): Promise<Measurement[]> {
  const count = ctx.count(1000);
  const dir = await ctx.scratch('fleet');
  const bucket = await minio.createBucket();
  const client = minio.client();
  const s3 = countS3Requests(client);
  const store = new S3Store({ bucket, client, kmsKeyId: minio.kmsKeyName });

  const git = await ctx.git();
  const repository = await git.createRepository(`fleet-${randomBytes(3).toString('hex')}`);
  await pushFiles(
    repository,
    manifestFiles(benchConfigMaps(OBJECTS_PER_TRACK), OBJECTS_PER_TRACK),
    {
      message: `${OBJECTS_PER_TRACK} ConfigMaps`,
    },
  );
  const env = benchEnv(repository, 'unused');
  const config = await loadConfig(
    await writeFleetConfig(dir, bucket, minio, clusters, repository.url, count),
  );
  const tracks = [...config.tracks];

  const kube = clusters.map((cluster) =>
    countingTransport(endpointFromFile(cluster.kubeconfigPath)),
  );
  const ports = kube.map((counter) => new KubeApiCluster(counter.transport));
  const secrets = (ref: Parameters<typeof readSecret>[0]): Promise<string> => readSecret(ref, env);
  const source = createTrackSource({ cacheDir: join(dir, 'git-cache'), readSecret: secrets });
  const queue = new CountingQueue();
  const fleet: Fleet = {
    tracks,
    store,
    s3,
    kube,
    queue,
    deps: {
      tracks,
      artifacts: store,
      state: store,
      queue,
      source: () => Promise.resolve(source),
      cluster: (track) => Promise.resolve(ports[Number(track.cluster.slice(1))] as KubeApiCluster),
      readSecret: secrets,
    },
  };

  // Set-up (not measured): one namespace per track, then each track's first fetch and sync.
  process.stderr.write(
    `# fleet: ${count} tracks, first sync of ${count * OBJECTS_PER_TRACK} objects\n`,
  );
  await mapWithLimit(tracks, 8, async (track, i) => {
    const namespace: KubeObject = {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: track.name },
    };
    await (ports[i % CLUSTERS] as KubeApiCluster).apply(namespace, {
      fieldManager: 'bench',
      force: true,
    });
  });
  await runPhase(
    fleet,
    tracks.map((track) => ({ type: 'fetch', track: track.name, trigger: 'manual' })),
  );
  const firstSync = await runPhase(fleet, queue.take());
  if ((firstSync.results.applied ?? 0) !== count) {
    throw new Error(`set-up sync: ${JSON.stringify(firstSync.results)} of ${count} tracks`);
  }

  // Each pass: a tick with every track due (its time a whole interval after the last), then its jobs.
  const passes = Math.min(ctx.runs, MAX_HEAVY_RUNS);
  const tickRuns: { ms: number; s3: number; messages: number; due: number }[] = [];
  const fetchRuns: PhaseFigures[] = [];
  const syncRuns: PhaseFigures[] = [];
  const driftRuns: PhaseFigures[] = [];
  let tickOps: Record<string, number> = {};
  let clock = Date.now();
  // As the warm drift function keeps them (handlers/drift.ts); the first pass is a cold start.
  const kept = new KeptTrackStates();
  for (let pass = 0; pass < passes; pass++) {
    clock = Math.max(clock + INTERVAL_MS, Date.now() + INTERVAL_MS);
    const kubeBefore = totalOf(clusterCounts(kube));
    const ticked = await tick(tracks, store, s3, new Date(clock), kept);
    if (totalOf(clusterCounts(kube)) !== kubeBefore) throw new Error('the tick reached a cluster');
    tickRuns.push({
      ms: ticked.ms,
      s3: ticked.s3.total,
      messages: ticked.messages,
      due: ticked.due,
    });
    tickOps = ticked.s3.byOperation;
    // The jobs the tick queued, as the functions would receive them.
    const jobs = ticked.jobs;
    fetchRuns.push(
      await runPhase(
        fleet,
        jobs.filter((job) => job.type === 'fetch'),
      ),
    );
    syncRuns.push(await runPhase(fleet, queue.take()));
    driftRuns.push(
      await runPhase(
        fleet,
        jobs.filter((job) => job.type === 'drift'),
      ),
    );
    process.stderr.write(
      `# fleet pass ${pass + 1}: tick ${ticked.ms.toFixed(0)} ms, ${ticked.due} due\n`,
    );
  }
  const perJob = (runs: PhaseFigures[], of: (phase: PhaseFigures) => number): number[] =>
    runs.map((phase) => of(phase) / Math.max(1, phase.jobs));
  const last = <T>(values: T[]): T => values[values.length - 1] as T;
  const phaseNote = (label: string, runs: PhaseFigures[]): string => {
    const phase = last(runs);
    const ms = runs.flatMap((r) => r.jobMs);
    return `${label}: ${phase.jobs} jobs, results ${JSON.stringify(phase.results)}; S3 ${JSON.stringify(phase.s3.byOperation)}; cluster ${JSON.stringify(phase.kube)}; ${phase.queued} jobs queued; job time median ${median(ms).toFixed(0)} ms, p95 ${percentile(ms, 95).toFixed(0)} ms (${JOB_CONCURRENCY} at once on 2 shared cores); phase ${(phase.wallMs / 1000).toFixed(1)} s`;
  };

  const rows: Measurement[] = [
    {
      metric: `tick, ${count} tracks on ${CLUSTERS} clusters, all due: wall time`,
      unit: 'ms',
      runs: tickRuns.map((r) => r.ms),
      notes: [
        `scheduleDueTracks over S3Store (MinIO); S3 requests by operation: ${JSON.stringify(tickOps)}`,
      ],
    },
    {
      metric: `tick, ${count} tracks, all due: S3 requests per due track`,
      unit: 'requests',
      runs: tickRuns.map((r) => r.s3 / Math.max(1, r.due)),
      goal: { max: 3 },
    },
    {
      metric: `tick, ${count} tracks, all due: SQS messages (queue port)`,
      unit: 'requests',
      runs: tickRuns.map((r) => r.messages),
      notes: [
        'one fetch (ref poll) and one drift job per due track; the tick itself sends no Kubernetes request (checked)',
      ],
    },
    {
      metric: `poll job (fetch, unchanged revision): S3 requests per job`,
      unit: 'requests',
      runs: perJob(fetchRuns, (p) => p.s3.total),
      notes: [phaseNote('fetch polls', fetchRuns)],
    },
    {
      metric: `poll job (fetch, unchanged revision): time per job`,
      unit: 'ms',
      runs: fetchRuns.map((p) => median(p.jobMs)),
    },
    {
      metric: `no-op sync of the unchanged revision: cluster writes (PATCH/PUT/POST/DELETE), all tracks`,
      unit: 'requests',
      runs: syncRuns.map((p) => writesOf(p.kube)),
      goal: { max: 0 },
      notes: [phaseNote('syncs the polls queued', syncRuns)],
    },
    {
      metric: `no-op sync: S3 requests per job`,
      unit: 'requests',
      runs: perJob(syncRuns, (p) => p.s3.total),
    },
    {
      metric: `no-op sync: Kubernetes requests per job`,
      unit: 'requests',
      runs: perJob(syncRuns, (p) => totalOf(p.kube)),
    },
    {
      metric: `no-op sync: time per job`,
      unit: 'ms',
      runs: syncRuns.map((p) => median(p.jobMs)),
    },
    {
      metric: `drift job (no drift, ${OBJECTS_PER_TRACK} objects): S3 requests per job`,
      unit: 'requests',
      runs: perJob(driftRuns, (p) => p.s3.total),
      notes: [phaseNote('drift checks', driftRuns)],
    },
    {
      metric: `drift job: Kubernetes requests per job`,
      unit: 'requests',
      runs: perJob(driftRuns, (p) => totalOf(p.kube)),
    },
    {
      metric: `drift job: cluster writes, all tracks`,
      unit: 'requests',
      runs: driftRuns.map((p) => writesOf(p.kube)),
      goal: { max: 0 },
    },
    {
      metric: `drift job: time per job`,
      unit: 'ms',
      runs: driftRuns.map((p) => median(p.jobMs)),
    },
  ];

  // Growth: copies of a real track's state. The drift function's first tick after a cold start
  // reads every state; then, warm, one tick a minute: the due tracks' jobs write their state
  // between ticks (driftCheckedAt, as the drift job does), and each tick reads only what changed.
  const template = tracks[0] as Track;
  const state = (await store.read<TrackState>(template.name))?.value;
  if (state === undefined) throw new Error(`no state for ${template.name}`);
  const start = new Date();
  for (const size of [100, 1000, 3000].map((n) => ctx.count(n))) {
    const seeded = new S3Store({
      bucket,
      client,
      kmsKeyId: minio.kmsKeyName,
      prefix: `seed-${size}/`,
    });
    const seedTracks = await seedStore(seeded, template, state, size, start);
    const keptStates = new KeptTrackStates();
    const cold = await tick(seedTracks, seeded, s3, start, keptStates);
    const steady: Awaited<ReturnType<typeof tick>>[] = [];
    let previous = cold;
    let now = start;
    for (let run = 0; run < ctx.runs + 1; run++) {
      // The jobs of the last tick's due tracks ran: each wrote its state.
      const checkedAt = now.toISOString();
      const ran = [...new Set(previous.jobs.map((job) => job.track))];
      await mapWithLimit(ran, 16, (track) =>
        updateTrackState(seeded, track, (s) => {
          s.driftCheckedAt = checkedAt;
        }),
      );
      now = new Date(now.getTime() + TICK_PERIOD_MS);
      previous = await tick(seedTracks, seeded, s3, now, keptStates);
      if (run > 0) steady.push(previous);
    }
    const one = steady[0];
    rows.push(
      {
        metric: `tick, ${size} tracks, warm function, a fifth due (steady state): wall time`,
        unit: 'ms',
        runs: steady.map((f) => f.ms),
        notes: [
          `${one?.due} due; S3 requests ${JSON.stringify(one?.s3.byOperation)}; ${one?.messages} SQS messages; state document ${(JSON.stringify(state).length / 1024).toFixed(1)} KB; one tick a minute, last checks spread over the 5-minute default interval`,
        ],
      },
      {
        metric: `tick, ${size} tracks, warm function, a fifth due: S3 requests per due track`,
        unit: 'requests',
        runs: steady.map((f) => f.s3.total / Math.max(1, f.due)),
        goal: { max: 3 },
      },
      {
        metric: `tick, ${size} tracks, first after a cold start, a fifth due: wall time`,
        unit: 'ms',
        runs: [cold.ms],
        notes: [
          `${cold.due} due; S3 requests ${JSON.stringify(cold.s3.byOperation)}: every state is read once`,
        ],
      },
      {
        metric: `tick, ${size} tracks, first after a cold start: S3 requests per due track`,
        unit: 'requests',
        runs: [cold.s3.total / Math.max(1, cold.due)],
      },
    );
    process.stderr.write(`# fleet growth ${size} tracks done\n`);
  }
  store.close();
  return rows;
}

/** A drift check of 10,000 objects in 100 namespaces against kubectl diff --server-side. */
async function driftRows(ctx: BenchContext): Promise<Measurement[]> {
  const namespaces = ctx.count(100);
  const perNamespace = 100;
  const endpoint = await ctx.endpoint();
  const kubectl = await kubectlFor(ctx);
  const track = 'fleet-drift';
  const objects: KubeObject[] = [];
  for (let i = 0; i < namespaces; i++) {
    objects.push(...benchObjects(perNamespace, await ctx.namespace('fleet-drift')));
  }
  const count = objects.length;
  process.stderr.write(`# fleet: applying ${count} objects in ${namespaces} namespaces\n`);
  const applied = await applyObjects(await ctx.port(), objects, { track });
  const failed = applied.changeset.filter((e) => e.action === 'failed');
  if (failed.length > 0) throw new Error(`set-up apply failed: ${failed[0]?.error}`);
  const dir = await ctx.scratch('fleet-drift');
  // One file per namespace: the objects' names repeat from namespace to namespace.
  for (let i = 0; i < objects.length; i += perNamespace) {
    const chunk = objects.slice(i, i + perNamespace).map((o) => withOwnershipLabel(o, track));
    await writeFile(
      join(dir, `ns-${i / perNamespace}.yaml`),
      chunk.map((o) => dump(o)).join('---\n'),
    );
  }
  const { timeRuns, requestRuns, kubectlRuns, kubectlRequests, byMethod, sanity } =
    await measureNoOpDrift({
      endpoint,
      kubectl,
      objects,
      manifestsDir: dir,
      track,
      runs: Math.min(ctx.runs, MAX_HEAVY_RUNS),
      label: 'fleet drift',
    });
  const kinds = kindsOf(objects);
  return [
    {
      metric: `no-op drift check, ${count} objects in ${namespaces} namespaces, time`,
      unit: 'ms',
      runs: timeRuns,
      peer: { label: 'kubectl diff --server-side', runs: kubectlRuns },
      goal: { maxRatio: 0.05 },
      notes: [
        'detectDrift over a fresh connection (discovery included) against the kubectl process',
        ...sanity,
      ],
    },
    {
      metric: `no-op drift check, ${count} objects in ${namespaces} namespaces, API requests`,
      unit: 'requests',
      runs: requestRuns,
      peer: { label: 'kubectl diff', runs: requestRuns.map(() => kubectlRequests) },
      goal: { max: kinds * namespaces + 10 },
      notes: [
        `${kinds} kinds in each of ${namespaces} namespaces: goal ${kinds} × ${namespaces} + 10; by method ${JSON.stringify(byMethod)}; kubectl's count from one --v=6 run`,
      ],
    },
  ];
}

/** Peak RSS of the installed `driftless sync` of 20,000 objects, as sync-rss measures it. */
async function rssRows(ctx: BenchContext): Promise<Measurement[]> {
  const count = ctx.count(20_000);
  const perFile = 10;
  const git = await ctx.git();
  const repository = await git.createRepository(`fleet-rss-${randomBytes(3).toString('hex')}`);
  await pushFiles(repository, manifestFiles(benchObjects(count), perFile), {
    message: `${count} objects`,
  });
  const { kubeconfig } = await ctx.kubectl();
  const installed = await installedCli(ctx);
  const env = { ...benchEnv(repository, 'unused'), PATH: installed.env.PATH };
  const rss: number[] = [];
  const seconds: number[] = [];
  for (let run = 0; run < Math.min(ctx.runs, MAX_HEAVY_RUNS); run++) {
    const figures = await peakRssSync(ctx, {
      repository,
      kubeconfig,
      env,
      track: 'rss',
      command: [installed.bin],
      label: 'fleet-rss',
    });
    rss.push(figures.maxRssMB);
    seconds.push(figures.seconds * 1000);
    process.stderr.write(`# fleet rss run ${run + 1} done\n`);
  }
  return [
    {
      metric: `peak RSS, sync of ${count} objects (installed bundle)`,
      unit: 'MB',
      runs: rss,
      goal: { max: 400 },
      notes: [
        `driftless sync -o json as a child process (${count / perFile} files, fs store, fresh namespace); max RSS from /usr/bin/time`,
      ],
    },
    { metric: `wall time, sync of ${count} objects (installed bundle)`, unit: 'ms', runs: seconds },
  ];
}
