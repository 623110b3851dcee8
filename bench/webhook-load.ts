/**
 * Webhook answers under load: 50 signed GitHub push deliveries over 10
 * tracks at once (each a real new commit on the test Git server, five in a
 * row per track, every track pushing at the same time; the load of
 * test/e2e/load.test.ts without its spacing), posted to `driftless serve`
 * (fs store) and to the webhook function under serverless-offline (S3 store
 * on MinIO). Each delivery is timed from the request's start to the end of
 * its answer; a run's p50 and p99 are taken over its 50 deliveries, and the
 * table shows the median over the runs. Each run waits until every track
 * has applied its last push before the next one starts, and reports that
 * time too.
 *
 * The goal on p99 is GitHub's: a delivery not answered within 10 s is shown
 * as failed (and the webhook function's timeout is 10 s as well).
 */
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { silentLogger } from '../src/logger.ts';
import { startServe } from '../src/serve/start-serve.ts';
import { createStore } from '../src/store/create-store.ts';
import type { StateStore } from '../src/store/ports.ts';
import { openLocalContext } from '../src/sync/local-context.ts';
import { readTrackState } from '../src/sync/track-state.ts';
import { startMinio, s3StoreLines } from '../test/harness/minio.ts';
import {
  answeredByStack,
  createLoadTracks,
  loadTrackLines,
  runPushLoad,
  warmFunctions,
  type LoadTrack,
  type SignedDelivery,
} from '../test/harness/push-load.ts';
import { startServerlessOffline } from '../test/harness/serverless-offline.ts';
import type { BenchContext } from './lib/context.ts';
import type { Benchmark, Measurement } from './lib/types.ts';

const TRACKS = 10;
const PUSHES = 5;
const OBJECTS = 10;
const APPLIED_TIMEOUT_MS = 180_000;
/** GitHub shows a delivery not answered within 10 s as failed. */
const ANSWER_GOAL_MS = 10_000;

/** The `q` quantile of `values` (0..1), interpolated between the two nearest ranks. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const position = (sorted.length - 1) * q;
  const below = Math.floor(position);
  const above = Math.ceil(position);
  const low = sorted[below] as number;
  return low + ((sorted[above] as number) - low) * (position - below);
}

/** What one stack's runs yielded. */
interface StackFigures {
  readonly p50: number[];
  readonly p99: number[];
  readonly notAnswered: number[];
  readonly applied: number[];
}

/** The stack under load: where deliveries go, and where its tracks' state is. */
interface LoadTarget {
  post(delivery: SignedDelivery): Promise<Response>;
  readonly state: StateStore;
}

/** Resolves once every track's appliedRevision is its last push; throws after a generous timeout. */
async function allApplied(state: StateStore, heads: ReadonlyMap<string, string>): Promise<void> {
  const deadline = Date.now() + APPLIED_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const states = await Promise.all(
      [...heads.keys()].map((track) => readTrackState(state, track)),
    );
    if (states.every((s, i) => s.appliedRevision === [...heads.values()][i])) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`not every track applied its last push within ${APPLIED_TIMEOUT_MS} ms`);
}

/** Run 0 warms up (not counted); runs 1..N are measured. Tracks keep their history across runs. */
async function measure(
  ctx: BenchContext,
  label: string,
  tracks: readonly LoadTrack[],
  secret: string,
  target: LoadTarget,
): Promise<StackFigures> {
  const figures: StackFigures = { p50: [], p99: [], notAnswered: [], applied: [] };
  let heads = new Map<string, string>();
  for (let run = 0; run <= ctx.runs; run++) {
    const load = await runPushLoad({
      tracks,
      pushes: PUSHES,
      objects: OBJECTS,
      secret,
      firstPush: run * PUSHES + 1,
      previous: heads,
      // As a host's "redeliver" of a failed delivery: without it a lost last push is never applied.
      redeliveries: 2,
      post: (delivery) => target.post(delivery),
    });
    const answered = performance.now();
    await allApplied(target.state, load.heads);
    heads = load.heads;
    const latencies = load.deliveries.map((delivery) => delivery.latencyMs);
    const failed = load.deliveries.filter((d) => !answeredByStack(d.attempts[0]!)).length;
    process.stderr.write(
      `# webhook-load ${label} run ${run}${run === 0 ? ' (warm-up)' : ''}: ` +
        `p50 ${quantile(latencies, 0.5).toFixed(0)} ms, p99 ${quantile(latencies, 0.99).toFixed(0)} ms, ` +
        `${failed} not 2xx\n`,
    );
    if (run === 0) continue;
    figures.p50.push(quantile(latencies, 0.5));
    figures.p99.push(quantile(latencies, 0.99));
    figures.notAnswered.push(failed);
    figures.applied.push(load.elapsedMs + (performance.now() - answered));
  }
  return figures;
}

function configLines(
  store: string[],
  kubeconfig: string,
  tracks: readonly LoadTrack[],
  ns: string,
) {
  return [
    ...store,
    'clusters:',
    '  - name: bench',
    `    kubeconfig: ${kubeconfig}`,
    'webhooks:',
    '  github: {secret: env:BENCH_GITHUB_SECRET}',
    'tracks:',
    ...loadTrackLines(tracks, ns, 'BENCH_GIT_CREDENTIALS'),
    '',
  ].join('\n');
}

function rows(label: string, figures: StackFigures, notes: string[]): Measurement[] {
  const deliveries = `${TRACKS * PUSHES} concurrent pushes over ${TRACKS} tracks`;
  return [
    { metric: `${label}: webhook answer p50, ${deliveries}`, unit: 'ms', runs: figures.p50 },
    {
      metric: `${label}: webhook answer p99, ${deliveries}`,
      unit: 'ms',
      runs: figures.p99,
      goal: { max: ANSWER_GOAL_MS },
      notes,
    },
    {
      metric: `${label}: deliveries not answered 2xx at the first attempt (sent again)`,
      unit: 'requests',
      runs: figures.notAnswered,
    },
    {
      metric: `${label}: first push to every track applied at its last push`,
      unit: 'ms',
      runs: figures.applied,
    },
  ];
}

export const webhookLoad: Benchmark = {
  name: 'webhook-load',
  title: 'Webhook answer latency under 50 concurrent signed pushes (serve and serverless-offline)',
  async run(ctx: BenchContext): Promise<Measurement[]> {
    const git = await ctx.git();
    const { kubeconfig } = await ctx.kubectl();
    const secret = randomBytes(16).toString('hex');
    const env = {
      ...process.env,
      BENCH_GITHUB_SECRET: secret,
      BENCH_GIT_CREDENTIALS: `${git.username}:${git.password}`,
    };
    const suffix = randomBytes(2).toString('hex');

    // driftless serve, fs store.
    const serveDir = await ctx.scratch('webhook-load-serve');
    const serveTracks = await createLoadTracks(git, `wl-s${suffix}`, TRACKS);
    const serveConfig = join(serveDir, 'driftless.yaml');
    await writeFile(
      serveConfig,
      configLines(
        ['store:', '  type: fs', `  path: ${join(serveDir, 'store')}`],
        kubeconfig,
        serveTracks,
        await ctx.namespace('wl-serve'),
      ),
    );
    const local = await openLocalContext(serveConfig, env);
    const serve = await startServe(local, {
      port: 0,
      host: '127.0.0.1',
      env,
      logger: silentLogger,
      runAtStart: false,
    });
    let serveFigures: StackFigures;
    try {
      serveFigures = await measure(ctx, 'serve', serveTracks, secret, {
        post: (delivery) =>
          fetch(`${serve.url}/webhook/github`, {
            method: 'POST',
            body: delivery.body,
            headers: delivery.headers,
          }),
        state: local.state,
      });
    } finally {
      await serve.close();
      local.close();
    }

    // The functions under serverless-offline, S3 store on MinIO.
    const offlineDir = await ctx.scratch('webhook-load-offline');
    const offlineTracks = await createLoadTracks(git, `wl-o${suffix}`, TRACKS);
    const minio = await startMinio();
    const s3 = minio.client();
    let offlineFigures: StackFigures;
    try {
      const bucket = await minio.createBucket();
      const storeLines = s3StoreLines(minio, bucket, 'driftless/');
      const offlineConfig = join(offlineDir, 'driftless.yaml');
      await writeFile(
        offlineConfig,
        configLines(storeLines, kubeconfig, offlineTracks, await ctx.namespace('wl-offline')),
      );
      const store = createStore(
        {
          type: 's3',
          bucket,
          prefix: 'driftless/',
          endpoint: minio.endpoint,
          region: minio.region,
        },
        { s3Client: s3 },
      );
      const offline = await startServerlessOffline({
        configFile: offlineConfig,
        env: {
          BENCH_GITHUB_SECRET: secret,
          BENCH_GIT_CREDENTIALS: env.BENCH_GIT_CREDENTIALS,
          AWS_ACCESS_KEY_ID: minio.accessKeyId,
          AWS_SECRET_ACCESS_KEY: minio.secretAccessKey,
          AWS_SESSION_TOKEN: '',
          AWS_PROFILE: '',
          AWS_EC2_METADATA_DISABLED: 'true',
        },
      });
      try {
        await warmFunctions(offline, TRACKS);
        offlineFigures = await measure(ctx, 'offline', offlineTracks, secret, {
          post: (delivery) =>
            fetch(`${offline.httpUrl}/webhook/github`, {
              method: 'POST',
              body: delivery.body,
              headers: delivery.headers,
            }),
          state: store.state,
        });
      } finally {
        await offline.stop();
        store.close();
      }
    } finally {
      await minio.stop();
    }

    return [
      ...rows('serve', serveFigures, [
        'serve: one process, fs store; the answer comes once the delivery is verified, marked and its fetch job queued in memory',
      ]),
      ...rows('offline', offlineFigures, [
        'offline: the webhook function under serverless-offline (each concurrent invocation is a worker thread of one process, 10 instances warmed first), S3 store on MinIO; the answer comes once the delivery is marked (S3 PUT) and its fetch job handed to the Invoke API',
        'p99 of 50 deliveries is interpolated between the two slowest; a delivery not answered 2xx (the 10 s timeout: serverless-offline answers 200 with the Lambda error, API Gateway 5xx) counts with the time it took',
      ]),
    ];
  },
};
