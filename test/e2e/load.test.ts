/**
 * Load: 50 signed GitHub push deliveries over 10 tracks at once — each a
 * real new commit on the test Git server, five in a row per track, every
 * track pushing at the same time — through `driftless serve` (fs store) and
 * through the functions under serverless-offline (S3 store on MinIO), both
 * against the shared test cluster.
 *
 * What is checked, for each stack:
 * - no delivery is lost: each is answered 2xx naming its track, marked in
 *   the store, logged by the webhook, and its fetch job ran;
 * - each track ends on its last pushed commit, in its state and in the
 *   cluster (every object carries the last push's number);
 * - never two applies of one track at once, as observed: a watch on the
 *   tracks' objects records every write in the order etcd committed them;
 *   the writes of one push of a track form one window, and no window of a
 *   track may begin before the previous one ended (overlapping applies
 *   would interleave their writes). The windows must also follow the
 *   pushes' order, and each push written must have its applied history entry.
 *
 * Offline, nothing but the apply lease in the track's state keeps a track's
 * applies apart (serverless-offline invokes the apply function for each job
 * as it comes; there is no FIFO message group): the refusals it caused are
 * counted and printed. Tried with the lease disabled (acquireApplyLease never
 * refusing): 3 runs of 3 failed here, with interleaved windows, a track's
 * older push written after a newer one, or a track left on an older push
 * (25 objects per push; with 10, 2 of 3). Latency is measured by
 * bench/webhook-load.ts, not here.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { access, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { jsonLogger } from '../../src/logger.ts';
import { startServe, type RunningServe } from '../../src/serve/start-serve.ts';
import { createStore, type ClosableStore } from '../../src/store/create-store.ts';
import { deliveryKey } from '../../src/store/keys.ts';
import { deliveryMarker } from '../../src/sync/accept-webhook.ts';
import type { StateStore } from '../../src/store/ports.ts';
import { openLocalContext, type LocalContext } from '../../src/sync/local-context.ts';
import { readTrackState } from '../../src/sync/track-state.ts';
import { eventually } from '../harness/eventually.ts';
import { startGitServer, type GitServer } from '../harness/git-server.ts';
import { startMinio, type MinioServer, s3StoreLines } from '../harness/minio.ts';
import {
  applyWindows,
  createLoadTracks,
  type ApplyWindow,
  loadObjectName,
  loadTrackLines,
  overlappingWindows,
  runPushLoad,
  warmFunctions,
  watchTrackObjects,
  type LoadDelivery,
  type LoadTrack,
  type ObjectWatch,
  type PushLoadResult,
  type SignedDelivery,
} from '../harness/push-load.ts';
import { startServerlessOffline, type ServerlessOffline } from '../harness/serverless-offline.ts';
import {
  createTestNamespace,
  sharedKubeConfig,
  sharedKubeconfigPath,
} from '../harness/shared-cluster.ts';

const TRACKS = 10;
const PUSHES = 5;
const OBJECTS = 25;
/**
 * Between a track's pushes: none for the first tracks (their sync jobs
 * contend for the track), up to 2.7 s for the last (most of their pushes
 * are applied, one right after the other).
 */
const spacingMs = (i: number): number => i * 300;
const SECRET = `gh-${randomUUID()}`;
const PREFIX = 'driftless/';
/** Generous: 50 fetches and up to 50 applies on two shared cores. */
const APPLIED_TIMEOUT_MS = 120_000;

type LogLine = Record<string, unknown>;

/** What the checks need from a stack that takes webhooks. */
interface Stack {
  readonly tracks: readonly LoadTrack[];
  readonly namespace: string;
  readonly state: StateStore;
  post(delivery: SignedDelivery): Promise<Response>;
  deliveryMarked(id: string): Promise<boolean>;
  /** The JSON log lines written so far. */
  logs(): LogLine[];
  /** Resolves once no job is queued, running or waiting to be retried. */
  settled(): Promise<void>;
}

const shared: { git?: GitServer; kc?: KubeConfig; core?: CoreV1Api; dir?: string } = {};

before(async () => {
  shared.kc = sharedKubeConfig();
  shared.core = shared.kc.makeApiClient(CoreV1Api);
  shared.git = await startGitServer();
  shared.dir = await mkdtemp(join(tmpdir(), 'driftless-load-e2e-'));
});

after(async () => {
  await shared.git?.stop();
  if (shared.dir) await rm(shared.dir, { recursive: true, force: true });
});

/** The driftless.yaml of a stack: `store` lines, then the cluster, the webhook and the tracks. */
async function writeConfig(
  name: string,
  store: string[],
  tracks: readonly LoadTrack[],
  namespace: string,
): Promise<string> {
  const file = join(shared.dir!, `${name}.yaml`);
  await writeFile(
    file,
    [
      ...store,
      'clusters:',
      '  - name: test',
      `    kubeconfig: ${sharedKubeconfigPath()}`,
      'webhooks:',
      '  github: {secret: env:E2E_GITHUB_SECRET}',
      'tracks:',
      ...loadTrackLines(tracks, namespace, 'E2E_GIT_CREDENTIALS'),
      '',
    ].join('\n'),
  );
  return file;
}

function gitEnv(): NodeJS.ProcessEnv {
  return {
    E2E_GITHUB_SECRET: SECRET,
    E2E_GIT_CREDENTIALS: `${shared.git!.username}:${shared.git!.password}`,
  };
}

/** How a stack is started and stopped for {@link loadChecks}. */
interface StackRun {
  /** Starts the stack (in before). */
  open(): Promise<Stack>;
  /** Stops it (in after). */
  close(): Promise<void>;
  /** Times a delivery not answered 2xx is sent again, as a host's "redeliver"; default 0. */
  readonly redeliveries?: number;
  /** What only this stack can tell, for the summary line. */
  report?(stack: Stack): string;
}

/** The same three checks for a stack. */
function loadChecks(title: string, run: StackRun): void {
  describe(title, () => {
    let stack: Stack;
    let watch: ObjectWatch;
    let load: PushLoadResult;
    /** Deliveries whose fetch was folded into a later one of their track. */
    let folded = 0;
    /** Deliveries whose first answer was not 2xx (sent again). */
    let redelivered = 0;

    const recentLogs = (): string =>
      `\nrecent logs:\n${stack
        .logs()
        .slice(-15)
        .map((line) => JSON.stringify(line))
        .join('\n')}`;

    before(async () => {
      stack = await run.open();
    });

    after(async () => {
      watch?.stop();
      await run.close();
      await shared.core?.deleteNamespace({ name: stack.namespace }).catch(() => undefined);
    });

    it(`answers each of ${TRACKS * PUSHES} concurrent deliveries 2xx and accounts for each one`, async () => {
      // Prepare
      watch = await watchTrackObjects(shared.kc!, stack.namespace);

      // Act
      load = await runPushLoad({
        tracks: stack.tracks,
        pushes: PUSHES,
        objects: OBJECTS,
        spacingMs,
        redeliveries: run.redeliveries ?? 0,
        secret: SECRET,
        post: (delivery) => stack.post(delivery),
      });

      // Assess
      assert.equal(load.deliveries.length, TRACKS * PUSHES);
      const unanswered = load.deliveries
        .filter((delivery) => delivery.status !== 202)
        .map(
          (delivery) =>
            `${delivery.track} push ${delivery.push}: ${delivery.status} after ` +
            `${Math.round(delivery.latencyMs)} ms, ${delivery.error ?? JSON.stringify(delivery.answer).slice(0, 100)}`,
        );
      assert.deepEqual(unanswered, []);
      for (const delivery of load.deliveries) {
        const answer = delivery.answer as { kind?: string; deliveryId?: string; tracks?: string[] };
        // A redelivery of a delivery whose first answer was lost may find it marked already.
        const duplicate = delivery.attempts.length > 1 && answer.kind === 'duplicate';
        assert.deepEqual(
          duplicate ? [answer.deliveryId] : [answer.kind, answer.deliveryId, answer.tracks],
          duplicate ? [delivery.id] : ['push', delivery.id, [delivery.track]],
          JSON.stringify(delivery),
        );
        assert.ok(await stack.deliveryMarked(delivery.id), `no marker for ${delivery.id}`);
      }
      // Every delivery's push was fetched: by the delivery's own fetch job, or by a later
      // one of its track that began after the push (serve folds a waiting fetch of a track
      // into the next one: a fetch resolves the ref itself, so both do the same work).
      const fetchedBy = (delivery: LoadDelivery): LogLine | undefined => {
        const fetches = stack
          .logs()
          .filter((line) => line.msg === 'fetch finished' && line.track === delivery.track);
        return (
          fetches.find((line) => line.deliveryId === delivery.id) ??
          fetches.find(
            (line) =>
              line.trigger === 'webhook' &&
              typeof line.durationMs === 'number' &&
              Date.parse(String(line.time)) - line.durationMs > delivery.sentAt,
          )
        );
      };
      const allFetched = await eventually(
        async () => load.deliveries.every((delivery) => fetchedBy(delivery) !== undefined),
        APPLIED_TIMEOUT_MS,
        250,
      );
      const missing = load.deliveries.filter((delivery) => fetchedBy(delivery) === undefined);
      assert.ok(allFetched, `no fetch for ${JSON.stringify(missing)}${recentLogs()}`);
      folded = load.deliveries.filter(
        (delivery) => fetchedBy(delivery)?.deliveryId !== delivery.id,
      ).length;
      redelivered = load.deliveries.filter((delivery) => delivery.attempts.length > 1).length;
      for (const delivery of load.deliveries) {
        const fetch = fetchedBy(delivery);
        assert.notEqual(fetch?.result, 'failed', JSON.stringify(fetch));
        const logged = stack
          .logs()
          .filter((line) => line.msg === 'webhook delivery' && line.deliveryId === delivery.id)
          .map((line) => [line.status, line.kind, line.tracks]);
        if (delivery.attempts.length === 1) {
          assert.deepEqual(logged, [[202, 'push', [delivery.track]]], `log of ${delivery.id}`);
        } else {
          // Redelivered: the first answer was lost; the delivery must still have had its
          // own fetch job, queued by whichever attempt marked it.
          assert.ok(logged.length > 0, `no log of ${delivery.id}`);
          assert.equal(fetch?.deliveryId, delivery.id, `${delivery.id}: no fetch of its own`);
        }
      }
    });

    it('ends every track on its last pushed commit, in its state and in the cluster', async () => {
      // Assess
      const appliedAll = await eventually(
        async () => {
          const states = await Promise.all(
            stack.tracks.map((track) => readTrackState(stack.state, track.name)),
          );
          return states.every((state, i) => {
            const head = load.heads.get(stack.tracks[i]!.name);
            return state.appliedRevision === head;
          });
        },
        APPLIED_TIMEOUT_MS,
        250,
      );
      assert.ok(appliedAll, `not every track reached its last push${recentLogs()}`);
      await stack.settled();
      for (const track of stack.tracks) {
        const state = await readTrackState(stack.state, track.name);
        const head = load.heads.get(track.name);
        assert.deepEqual(
          [state.appliedRevision, state.desiredRevision, state.applyLease ?? null],
          [head, head, null],
          track.name,
        );
        const listed = await shared.core!.listNamespacedConfigMap({
          namespace: stack.namespace,
          labelSelector: `driftless.dev/track=${track.name}`,
        });
        const live = new Map(listed.items.map((item) => [item.metadata?.name, item.data]));
        for (let i = 0; i < OBJECTS; i++) {
          assert.deepEqual(
            live.get(loadObjectName(track.name, i)),
            { track: track.name, push: String(PUSHES) },
            `${loadObjectName(track.name, i)} in the cluster`,
          );
        }
        assert.equal(live.size, OBJECTS, `${track.name}: objects in the cluster`);
      }
    });

    it('never applied one track twice at once, as the cluster saw its writes', async () => {
      // Assess
      assert.equal(watch.failure(), undefined, 'the watch ended early: its record is incomplete');
      const writes = watch.writes();
      assert.deepEqual(
        writes.filter((write) => write.type === 'DELETED'),
        [],
        'nothing was deleted',
      );
      const windows = applyWindows(writes);
      const overlapping = overlappingWindows(windows);
      // Each window's writes and the jobs of its track: which job wrote what, when.
      const span = (w: ApplyWindow): string =>
        `push ${w.push}: ${w.writes} writes, #${w.firstSeq}-#${w.lastSeq}`;
      const jobsOf = (track: string): string =>
        stack
          .logs()
          .filter((line) => line.track === track && String(line.msg).endsWith(' finished'))
          .map((line) => JSON.stringify(line))
          .join('\n');
      const pairs = overlapping.map(([a, b]) => `${a.track}: push ${a.push} and ${b.push}`);
      assert.deepEqual(
        pairs,
        [],
        [
          `overlapping apply windows: ${pairs.join(', ')}`,
          ...[...new Set(overlapping.map(([a]) => a.track))].map(
            (track) =>
              `${track}: ${(windows.get(track) ?? []).map(span).join('; ')}\n${jobsOf(track)}`,
          ),
        ].join('\n'),
      );
      const counts: number[] = [];
      for (const track of stack.tracks) {
        const list = windows.get(track.name) ?? [];
        counts.push(list.length);
        const pushes = list.map((window) => window.push);
        // Git's order: a commit resolved earlier never replaced one resolved later.
        assert.deepEqual(
          pushes,
          [...pushes].sort((a, b) => a - b),
          `${track.name}: pushes in write order`,
        );
        assert.equal(new Set(pushes).size, pushes.length, `${track.name}: one window per push`);
        assert.equal(pushes.at(-1), PUSHES, `${track.name}: the last window is the last push`);
        for (const window of list) {
          assert.equal(
            window.writes,
            OBJECTS,
            `${track.name} push ${window.push}: every object once`,
          );
        }
        // Each window is an apply job's: its revision has an applied history entry.
        const byPush = new Map(
          load.deliveries
            .filter((delivery) => delivery.track === track.name)
            .map((delivery) => [delivery.push, delivery.sha]),
        );
        const applied = new Set(
          (await stack.state.listHistory(track.name))
            .filter((entry) => entry.result === 'applied')
            .map((entry) => entry.revision),
        );
        for (const push of pushes) {
          assert.ok(applied.has(byPush.get(push)!), `${track.name}: push ${push} in history`);
        }
      }
      const total = counts.reduce((sum, count) => sum + count, 0);
      assert.ok(total > TRACKS, `one apply per track (${counts}): no two applies to compare`);
      console.error(
        `# ${title}: ${writes.length} writes, ${total} apply windows over ${TRACKS} tracks ` +
          `(per track ${Math.min(...counts)}–${Math.max(...counts)}), none overlapping; ` +
          `${folded} deliveries fetched by a later fetch of their track; ` +
          `${redelivered} redelivered after a first answer that was not 2xx; ` +
          `load ${(load.elapsedMs / 1000).toFixed(1)} s. ${run.report?.(stack) ?? ''}`,
      );
    });
  });
}

describe(`${TRACKS * PUSHES} concurrent signed pushes over ${TRACKS} tracks`, () => {
  let serve: RunningServe | undefined;
  let ctx: LocalContext | undefined;
  const serveLogs: LogLine[] = [];
  let offline: ServerlessOffline | undefined;
  let minio: MinioServer | undefined;
  let store: ClosableStore | undefined;
  let offlineStarting: Promise<Stack>;

  /** The offline stack, started while serve's checks run: bundling takes most of a minute. */
  const startOffline = async (): Promise<Stack> => {
    const [namespace, tracks, started] = await Promise.all([
      createTestNamespace(shared.kc!, 'load-offline'),
      createLoadTracks(shared.git!, 'offline', TRACKS),
      startMinio(),
    ]);
    minio = started;
    const s3 = started.client();
    const bucket = await started.createBucket();
    store = createStore(
      { type: 's3', bucket, prefix: PREFIX, endpoint: started.endpoint, region: started.region },
      { s3Client: s3 },
    );
    const configFile = await writeConfig(
      'offline',
      s3StoreLines(started, bucket, PREFIX),
      tracks,
      namespace,
    );
    const functions = await startServerlessOffline({
      configFile,
      env: {
        ...gitEnv(),
        // The store's S3 client takes MinIO's credentials from the environment, as in Lambda.
        AWS_ACCESS_KEY_ID: started.accessKeyId,
        AWS_SECRET_ACCESS_KEY: started.secretAccessKey,
        AWS_SESSION_TOKEN: '',
        AWS_PROFILE: '',
        AWS_EC2_METADATA_DISABLED: 'true',
      },
    });
    offline = functions;
    return {
      tracks,
      namespace,
      state: store.state,
      post: (delivery) =>
        fetch(`${functions.httpUrl}/webhook/github`, {
          method: 'POST',
          body: delivery.body,
          headers: delivery.headers,
        }),
      deliveryMarked: (id) =>
        s3
          .send(
            new HeadObjectCommand({
              Bucket: bucket,
              Key: `${PREFIX}${deliveryKey(deliveryMarker('github', id))}`,
            }),
          )
          .then(
            () => true,
            () => false,
          ),
      logs: () => functions.logs(),
      settled: () => offlineSettled(functions),
    };
  };

  before(() => {
    offlineStarting = startOffline();
    // Awaited by the offline checks; a failure is theirs to report, not an unhandled rejection.
    offlineStarting.catch(() => undefined);
  });

  loadChecks('through driftless serve', {
    async open() {
      const namespace = await createTestNamespace(shared.kc!, 'load-serve');
      const tracks = await createLoadTracks(shared.git!, 'serve', TRACKS);
      const storePath = join(shared.dir!, 'serve-store');
      const configFile = await writeConfig(
        'serve',
        ['store:', '  type: fs', `  path: ${storePath}`],
        tracks,
        namespace,
      );
      const env = { ...process.env, ...gitEnv() };
      const opened = await openLocalContext(configFile, env);
      ctx = opened;
      const running = await startServe(opened, {
        port: 0,
        host: '127.0.0.1',
        env,
        // Only the deliveries deploy: no start-up poll.
        runAtStart: false,
        logger: jsonLogger((line) => serveLogs.push(JSON.parse(line) as LogLine)),
      });
      serve = running;
      return {
        tracks,
        namespace,
        state: opened.state,
        post: (delivery) =>
          fetch(`${running.url}/webhook/github`, {
            method: 'POST',
            body: delivery.body,
            headers: delivery.headers,
          }),
        deliveryMarked: (id) =>
          access(join(storePath, deliveryKey(deliveryMarker('github', id)))).then(
            () => true,
            () => false,
          ),
        logs: () => serveLogs,
        settled: () => running.queue.idle(),
      };
    },
    async close() {
      // For a look at every log line after a run: DRIFTLESS_E2E_LOAD_LOG=<file>.
      const keep = process.env.DRIFTLESS_E2E_LOAD_LOG;
      if (keep) {
        await writeFile(`${keep}.serve`, serveLogs.map((line) => JSON.stringify(line)).join('\n'));
      }
      await serve?.close();
      ctx?.close();
    },
  });

  loadChecks('through the functions under serverless-offline', {
    async open() {
      const stack = await offlineStarting;
      const rounds = await warmFunctions(offline!, TRACKS);
      console.error(`# ${TRACKS} instances of each function warmed in ${rounds} round(s)`);
      return stack;
    },
    async close() {
      const keep = process.env.DRIFTLESS_E2E_LOAD_LOG;
      if (keep && offline) await writeFile(keep, offline.output());
      await offline?.stop();
      store?.close();
      await minio?.stop();
    },
    // serverless-offline runs every Lambda instance as a worker thread of one process: on
    // two shared cores a webhook can pass its 10 s timeout while others start. GitHub then
    // shows the delivery failed and it is redelivered; what must not happen is that it is lost.
    redeliveries: 2,
    report(stack) {
      const busy = stack
        .logs()
        .filter(
          (line) =>
            line.function === 'apply' &&
            line.msg === 'job failed' &&
            JSON.stringify(line).includes('another apply job runs'),
        ).length;
      assert.deepEqual(
        stack.logs().filter((line) => line.msg === 'job dropped'),
        [],
        'no job was dropped',
      );
      return `The apply lease refused ${busy} apply attempts while another held the track.`;
    },
  });
});

/**
 * Offline, the queue's pending retries live in the functions' process:
 * settled once the last retry's delay has passed and the job-running
 * functions have been quiet for 3 s (a failed run logs its retry at once).
 */
async function offlineSettled(functions: ServerlessOffline): Promise<void> {
  const deadline = performance.now() + APPLIED_TIMEOUT_MS;
  while (performance.now() < deadline) {
    const lines = functions
      .logs()
      .filter((line) => ['fetch', 'apply', 'job-queue'].includes(String(line.function)));
    const retryDue = Math.max(
      0,
      ...lines
        .filter((line) => line.msg === 'job retried')
        .map((line) => Date.parse(String(line.time)) + Number(line.delayMs)),
    );
    const last = Math.max(0, ...lines.map((line) => Date.parse(String(line.time))));
    const now = Date.now();
    if (now > retryDue + 3_000 && now > last + 3_000) return;
    await sleep(500);
  }
  throw new Error('the functions did not settle');
}
