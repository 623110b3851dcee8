/**
 * Fault trials on real parts (issue 18): each trial sets up a track, injects
 * one fault into a real component while a real job runs (runJob with the
 * real use-cases), removes the fault, lets the next job run, and returns what
 * it observed as data. test/integration/faults*.test.ts assert on a few
 * trials; bench/faults.ts runs each ten times or more and prints the table.
 *
 * Every trial checks the same things at its end: the cluster holds exactly
 * the last revision's objects (nothing lost, nothing left behind), an
 * unlabelled bystander object in the namespace is untouched, and the track's
 * state says the revision is applied.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { endpointFromFile } from '../../src/cluster/connect-cluster.ts';
import { KubeApiCluster } from '../../src/cluster/kube-api-cluster.ts';
import type { KubernetesPort } from '../../src/cluster/kubernetes-port.ts';
import { parseConfig } from '../../src/config/index.ts';
import type { Track } from '../../src/config/types.ts';
import { DriftlessError, messageOf } from '../../src/errors.ts';
import type { GitSource } from '../../src/source/ports.ts';
import { createTrackSource } from '../../src/source/track-source.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import type { ArtifactStore, StateStore } from '../../src/store/ports.ts';
import { executeJob } from '../../src/sync/execute-job.ts';
import type { Job, SyncJob } from '../../src/sync/jobs.ts';
import { runJob, summarizeJob, type JobDeps, type JobResult } from '../../src/sync/run-job.ts';
import {
  conditionOf,
  readTrackState,
  updateTrackState,
  type TrackState,
} from '../../src/sync/track-state.ts';
import { pushFiles, type GitRepository, type GitServer } from './git-server.ts';
import { startFaultProxy, type ProxyFault } from './fault-proxy.ts';

/** The label every object a track applies carries (apply/ownership.ts). */
const TRACK_LABEL = 'driftless.dev/track';

/** The apply queue's visibility timeout in serverless.yml: when SQS hands a failed job out again. */
export const APPLY_REDELIVERY_MS = 600_000;

/** Where a trial's objects and jobs run. */
export interface FaultWorld {
  readonly git: GitServer;
  /** The cluster's kubeconfig: driftless connects with its own reader, checks use client-node. */
  readonly kubeconfigPath: string;
  /** Scratch space; a store of each trial's own lives under it unless `store` is given. */
  readonly workDir: string;
}

/** A track of a trial and everything its jobs need. */
export interface TrialTrack {
  readonly track: Track;
  /** The driftless.yaml text of the track, for a job run in another process. */
  readonly configText: string;
  readonly repo: GitRepository;
  readonly ns: string;
  readonly core: CoreV1Api;
  readonly deps: JobDeps;
  readonly storeDir: string;
  /** What is in the queue: the jobs runJob asked for, oldest first. */
  readonly queued: Job[];
}

export interface TrackOptions {
  /** Another repository URL than the Git server's (a fault proxy in front of it). */
  readonly repositoryUrl?: (repo: GitRepository) => string;
  /** Another store than a fresh fs store (S3 on MinIO). */
  readonly store?: ArtifactStore & StateStore;
  /** Wraps the real cluster connection (to inject a fault after N applies). */
  readonly wrapCluster?: (cluster: KubernetesPort) => KubernetesPort;
  /** The Git source's idle timeout; default its own (60 s). */
  readonly gitIdleTimeoutMs?: number;
}

let trialCount = 0;

/** A track over a new repository and namespace (with a bystander ConfigMap nobody manages). */
export async function newTrialTrack(
  world: FaultWorld,
  prefix: string,
  options: TrackOptions = {},
): Promise<TrialTrack> {
  const name = `${prefix}-${++trialCount}-${Date.now().toString(36)}`;
  const repo = await world.git.createRepository(name);
  const kc = new KubeConfig();
  kc.loadFromFile(world.kubeconfigPath);
  const core = kc.makeApiClient(CoreV1Api);
  const ns = name;
  await core.createNamespace({ body: { metadata: { name: ns } } });
  await core.createNamespacedConfigMap({
    namespace: ns,
    body: { metadata: { name: 'bystander' }, data: { value: 'not managed' } },
  });
  const url = options.repositoryUrl?.(repo) ?? repo.url;
  const configText = [
    'tracks:',
    `  - name: ${name}`,
    `    repository: ${url}`,
    `    namespace: ${ns}`,
    '    auth: {type: basic, secret: env:TEST_GIT_CREDENTIALS}',
  ].join('\n');
  const track = parseConfig(configText, 'driftless.yaml').tracks[0]!;
  const storeDir = join(world.workDir, name, 'store');
  const store = options.store ?? new FsStore({ path: storeDir });
  const credentials = `${world.git.username}:${world.git.password}`;
  const source: GitSource = createTrackSource({
    cacheDir: join(world.workDir, name, 'git'),
    readSecret: async () => credentials,
    ...(options.gitIdleTimeoutMs === undefined ? {} : { idleTimeoutMs: options.gitIdleTimeoutMs }),
  });
  const real = KubeApiCluster.forEndpoint(endpointFromFile(world.kubeconfigPath));
  const cluster = options.wrapCluster?.(real) ?? real;
  const queued: Job[] = [];
  const deps: JobDeps = {
    tracks: [track],
    artifacts: store,
    state: store,
    queue: { enqueue: async (job) => void queued.push(job) },
    source: async () => source,
    cluster: async () => cluster,
  };
  return { track, configText, repo, ns, core, deps, storeDir, queued };
}

/** `count` ConfigMaps `<prefix>-<i>` holding `value`, as files of a commit. */
export function configMaps(
  prefix: string,
  count: number,
  value: string,
): Record<string, string | null> {
  const files: Record<string, string | null> = {};
  for (let i = 0; i < count; i++) {
    files[`${prefix}-${i}.yaml`] =
      `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${prefix}-${i}\ndata:\n  value: "${value}"\n`;
  }
  return files;
}

/** Runs one job through runJob with the real use-cases; a thrown fault comes back as data. */
export async function runOne(
  job: Job,
  deps: JobDeps,
): Promise<{ done?: JobResult; error?: { code: string; message: string } }> {
  try {
    return { done: await runJob(job, deps, executeJob) };
  } catch (error) {
    const code = error instanceof DriftlessError ? error.code : 'UNTYPED';
    return { error: { code, message: messageOf(error) } };
  }
}

/** A fetch job of the track, then the sync job it queued; the sync's summary. */
export async function fetchAndSync(
  t: TrialTrack,
  deps: JobDeps = t.deps,
): Promise<{ fetch: string; sync?: string; syncJob?: SyncJob; error?: string }> {
  const fetched = await runOne({ type: 'fetch', track: t.track.name, trigger: 'webhook' }, deps);
  if (fetched.error) return { fetch: 'error', error: fetched.error.message };
  const summary = summarizeJob(fetched.done!);
  const syncJob = t.queued.splice(0).find((job): job is SyncJob => job.type === 'sync');
  if (!syncJob)
    return { fetch: summary.result, ...(summary.error ? { error: summary.error } : {}) };
  const synced = await runOne(syncJob, deps);
  if (synced.error) return { fetch: summary.result, syncJob, error: synced.error.message };
  const s = summarizeJob(synced.done!);
  return { fetch: summary.result, sync: s.result, syncJob, ...(s.error ? { error: s.error } : {}) };
}

/** Only the fetch: the sync job it queued (what the apply queue would hold). */
export async function fetchOnly(t: TrialTrack): Promise<SyncJob> {
  const fetched = await runOne({ type: 'fetch', track: t.track.name, trigger: 'webhook' }, t.deps);
  const job = t.queued.splice(0).find((j): j is SyncJob => j.type === 'sync');
  if (!job) throw new Error(`fetch queued no sync: ${JSON.stringify(fetched)}`);
  return job;
}

/** The ConfigMaps of the namespace: name -> value, and which carry the track's label. */
export async function liveConfigMaps(
  t: TrialTrack,
): Promise<{ values: Map<string, string | undefined>; labelled: Set<string> }> {
  const list = await t.core.listNamespacedConfigMap({ namespace: t.ns });
  const values = new Map<string, string | undefined>();
  const labelled = new Set<string>();
  for (const item of list.items) {
    const name = item.metadata?.name ?? '';
    if (name === 'kube-root-ca.crt') continue;
    values.set(name, item.data?.value);
    if (item.metadata?.labels?.[TRACK_LABEL] === t.track.name) labelled.add(name);
  }
  return { values, labelled };
}

/** How the cluster compares with what Git says it should hold. */
export interface Convergence {
  /** Every object of Git is there with Git's value, and the bystander is untouched. */
  readonly converged: boolean;
  /** Objects of Git that are missing or hold another value. */
  readonly lost: string[];
  /** Objects of the track that Git no longer has and that are still there. */
  readonly leftBehind: string[];
  /** The bystander is gone or changed: pruned or touched wrongly. */
  readonly bystanderTouched: boolean;
}

/** Compares the namespace with `expected` (name -> value). */
export async function convergence(
  t: TrialTrack,
  expected: Readonly<Record<string, string>>,
): Promise<Convergence> {
  const { values, labelled } = await liveConfigMaps(t);
  const lost = Object.entries(expected)
    .filter(([name, value]) => values.get(name) !== value)
    .map(([name]) => name);
  const leftBehind = [...labelled].filter((name) => !(name in expected));
  const bystanderTouched = values.get('bystander') !== 'not managed';
  return {
    converged: lost.length === 0 && leftBehind.length === 0 && !bystanderTouched,
    lost,
    leftBehind,
    bystanderTouched,
  };
}

/** name -> value of `configMaps(prefix, count, value)`. */
export function expectedOf(prefix: string, count: number, value: string): Record<string, string> {
  return Object.fromEntries(
    Array.from({ length: count }, (_, i) => [`${prefix}-${i}`, value] as const),
  );
}

/** A cluster port that calls `before` ahead of each server-side apply (counted from 1). */
export function onApply(
  real: KubernetesPort,
  before: (count: number) => Promise<void> | void,
): KubernetesPort {
  let count = 0;
  return {
    discover: (refresh) => real.discover(refresh),
    serverVersion: () => real.serverVersion(),
    apply: async (object, options) => {
      await before(++count);
      return real.apply(object, options);
    },
    get: (ref) => real.get(ref),
    list: (query) => real.list(query),
    delete: (ref, options) => real.delete(ref, options),
  };
}

/** The track's state in brief, for tables and assertions. */
export function stateBrief(state: TrackState): {
  applied: string | null;
  ready: string | undefined;
  reason: string | undefined;
  message: string | undefined;
  leaseHeld: boolean;
} {
  const ready = conditionOf(state, 'Ready');
  return {
    applied: state.appliedRevision,
    ready: ready?.status,
    reason: ready?.reason,
    message: ready?.message,
    leaseHeld: state.applyLease !== null && state.applyLease !== undefined,
  };
}

// ---------------------------------------------------------------- fault 3: Git

export interface GitFaultObservation {
  readonly fault: ProxyFault;
  /** The Git source's idle timeout in the trial, when not its default. */
  readonly idleTimeoutMs: number | undefined;
  /** The fetch job's outcome while the fault was on. */
  readonly outcome: string;
  readonly reason: string | undefined;
  readonly message: string | undefined;
  /** The fetch job ran this long before it gave up. */
  readonly failMs: number;
  /** The revision applied before the fault was still applied, and the cluster still held it. */
  readonly lastGoodKept: boolean;
  /** From the fault's removal to the new revision applied. */
  readonly convergeMs: number;
  readonly after: Convergence;
}

/**
 * Fault 3: the Git host fails while the new revision is fetched (or, with
 * `stall`, is only slow: silent for `stallMs` before the pack comes).
 */
export async function gitFaultTrial(
  world: FaultWorld,
  fault: ProxyFault,
  options: { readonly idleTimeoutMs?: number; readonly stallMs?: number } = {},
): Promise<GitFaultObservation> {
  const proxy = await startFaultProxy(
    world.git.url,
    options.stallMs === undefined ? {} : { stallMs: options.stallMs },
  );
  try {
    const t = await newTrialTrack(world, 'git', {
      repositoryUrl: (repo) => repo.url.replace(world.git.url, proxy.url),
      ...(options.idleTimeoutMs === undefined ? {} : { gitIdleTimeoutMs: options.idleTimeoutMs }),
    });
    const good = await pushFiles(t.repo, configMaps('cm', 5, 'one'));
    const first = await fetchAndSync(t);
    if (first.sync !== 'applied') throw new Error(`first sync: ${JSON.stringify(first)}`);
    await pushFiles(t.repo, configMaps('cm', 5, 'two'));

    proxy.setFault(fault);
    const started = performance.now();
    const during = await fetchAndSync(t);
    const failMs = performance.now() - started;
    const state = stateBrief(await readTrackState(t.deps.state, t.track.name));
    const kept = await convergence(t, expectedOf('cm', 5, 'one'));

    proxy.setFault('none');
    const cleared = Date.now();
    const next = await fetchAndSync(t);
    const convergeMs = Date.now() - cleared;
    const after = await convergence(t, expectedOf('cm', 5, 'two'));
    return {
      fault,
      idleTimeoutMs: options.idleTimeoutMs,
      outcome: during.sync ?? during.fetch,
      reason: state.reason,
      message: state.message,
      failMs,
      lastGoodKept: state.applied === good && kept.converged && during.sync === undefined,
      // After a stall the revision was applied already: the next sync finds it unchanged.
      convergeMs: next.sync === 'applied' || next.sync === 'unchanged' ? convergeMs : Number.NaN,
      after,
    };
  } finally {
    await proxy.stop();
  }
}

// ------------------------------------------------ fault 4: apply process killed

export interface KilledApplyObservation {
  /** Objects of the killed job's revision present when it was killed (it died mid-apply). */
  readonly appliedWhenKilled: number;
  /** The lease was still held after the kill. */
  readonly leaseLeft: boolean;
  /** The next job before the lease expired: refused with TRACK_BUSY (a retryable fault). */
  readonly beforeExpiry: string;
  /** The next job once the lease expired. */
  readonly afterExpiry: string;
  readonly after: Convergence;
}

/**
 * Fault 4: the process running a sync job is killed with SIGKILL mid-apply.
 * Revision 2 adds 120 objects and removes `gone`; the process dies while
 * applying it. Revision 3 drops revision 2's additions again; its sync job
 * runs first while the lease is held, then as the queue redelivers it after
 * the lease expired (a clock one lease length on, not a wait). The killed job is taken for one
 * of another machine, as in AWS, where nothing can see whether it is gone.
 */
export async function killedApplyTrial(world: FaultWorld): Promise<KilledApplyObservation> {
  const t = await newTrialTrack(world, 'kill');
  await pushFiles(t.repo, {
    ...configMaps('keep', 3, 'one'),
    'gone.yaml': configMaps('gone', 1, 'one')['gone-0.yaml']!,
  });
  const first = await fetchAndSync(t);
  if (first.sync !== 'applied') throw new Error(`first sync: ${JSON.stringify(first)}`);
  await pushFiles(
    t.repo,
    { ...configMaps('keep', 3, 'one'), ...configMaps('extra', 120, 'two'), 'gone.yaml': null },
    { removeOthers: true },
  );
  const job2 = await fetchOnly(t);

  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      fileURLToPath(new URL('apply-job-process.ts', import.meta.url)),
      JSON.stringify({
        config: t.configText,
        store: t.storeDir,
        kubeconfig: world.kubeconfigPath,
        job: job2,
      }),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const extras = async (): Promise<number> =>
    [...(await liveConfigMaps(t)).values.keys()].filter((name) => name.startsWith('extra-')).length;
  // Kill it once it holds the lease and has applied some of revision 2, not all.
  const deadline = performance.now() + 60_000;
  while ((await extras()) === 0) {
    if (child.exitCode !== null) throw new Error(`the job ended before it was killed: ${output}`);
    if (performance.now() > deadline)
      throw new Error(`the job applied nothing within 60 s: ${output}`);
    await sleep(5);
  }
  child.kill('SIGKILL');
  await exited;
  const appliedWhenKilled = await extras();
  const leaseLeft = stateBrief(await readTrackState(t.deps.state, t.track.name)).leaseHeld;
  // The lease as a job on another machine (another Lambda sandbox) leaves it: the killed
  // process ran here, and a process here sees it is gone and takes the lease over at once
  // (local-process.ts; test/e2e/cli.test.ts has that case).
  await updateTrackState(t.deps.state, t.track.name, (state) => {
    const holder = state.applyLease?.process;
    if (state.applyLease && holder) {
      state.applyLease.process = { ...holder, boot: 'another machine' };
    }
  });

  await pushFiles(t.repo, { ...configMaps('keep', 3, 'three') }, { removeOthers: true });
  const job3 = await fetchOnly(t);
  const before = await runOne(job3, t.deps);
  const lease = t.track.timeout * 2 + 60_000;
  const later = { ...t.deps, now: () => new Date(Date.now() + lease + 1_000) };
  const after = await runOne(job3, later);
  return {
    appliedWhenKilled,
    leaseLeft,
    beforeExpiry: before.error?.code ?? summarizeJob(before.done!).result,
    afterExpiry: after.error?.code ?? summarizeJob(after.done!).result,
    after: await convergence(t, expectedOf('keep', 3, 'three')),
  };
}

// ------------------------------------- fault 5: duplicate and late deliveries

export interface DeliveryObservation {
  /** What each delivery came to, in delivery order. */
  readonly results: string[];
  /** A fetch that resolved before the newest one and finished after it. */
  readonly lateFetch: string;
  /** History entries that applied revision 1 after revision 2 was applied. */
  readonly olderAppliedAfterNewer: number;
  readonly appliedRevision: string | null;
  readonly newest: string;
  readonly after: Convergence;
}

/**
 * Fault 5: the queue delivers the newest sync job twice (once at the same
 * time as itself, as two functions would), then the older revision's sync
 * job, twice; and a fetch that resolved the older revision finishes last.
 */
export async function deliveryTrial(world: FaultWorld): Promise<DeliveryObservation> {
  const t = await newTrialTrack(world, 'order');
  await pushFiles(t.repo, configMaps('cm', 4, 'one'));
  const job1 = await fetchOnly(t);
  const newest = await pushFiles(t.repo, configMaps('cm', 4, 'two'), { removeOthers: true });
  const job2 = await fetchOnly(t);
  const label = (r: Awaited<ReturnType<typeof runOne>>): string =>
    r.error?.code ?? summarizeJob(r.done!).result;

  const results: string[] = [];
  // The same job twice at once: one takes the lease, the other is refused and retried.
  const twins = await Promise.all([runOne(job2, t.deps), runOne(job2, t.deps)]);
  results.push(...twins.map(label));
  results.push(label(await runOne(job2, t.deps)));
  results.push(label(await runOne(job1, t.deps)));
  results.push(label(await runOne(job1, t.deps)));

  // A fetch resolves the old head, is held up after that (as by a slow render), and ends last.
  const slowSource = await t.deps.source!();
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let resolved!: () => void;
  const hasResolved = new Promise<void>((resolve) => (resolved = resolve));
  const slow: GitSource = {
    ...slowSource,
    describeCommit: async (track, commit) => {
      resolved();
      await held;
      return slowSource.describeCommit?.(track, commit);
    },
  };
  const lateRun = runOne(
    { type: 'fetch', track: t.track.name, trigger: 'schedule' },
    { ...t.deps, source: async () => slow },
  );
  await hasResolved;
  await pushFiles(t.repo, configMaps('cm', 4, 'three'), { removeOthers: true });
  const newer = await fetchAndSync(t);
  results.push(`newer:${newer.sync ?? newer.fetch}`);
  release();
  const late = await lateRun;
  const lateJobs = t.queued.splice(0);
  for (const job of lateJobs) results.push(`late:${label(await runOne(job, t.deps))}`);

  const history = await t.deps.state.listHistory(t.track.name);
  const chronological = [...history].reverse();
  const firstNewer = chronological.findIndex(
    (h) => h.result === 'applied' && h.revision !== job1.revision,
  );
  const olderAppliedAfterNewer = chronological
    .slice(firstNewer + 1)
    .filter((h) => h.revision === job1.revision && h.result === 'applied').length;
  const state = await readTrackState(t.deps.state, t.track.name);
  return {
    results,
    lateFetch: label(late),
    olderAppliedAfterNewer,
    appliedRevision: state.appliedRevision,
    newest: newer.syncJob?.revision ?? newest,
    after: await convergence(t, expectedOf('cm', 4, 'three')),
  };
}

// ------------------------------------------------------ fault 6: clock skew

export interface SkewObservation {
  readonly skewMs: number;
  readonly gapMs: number;
  /** The fetch of the newer commit, on the function whose clock is right. */
  readonly newerFetch: string;
  /** The revision desired after both fetches: the newer commit, or the older one. */
  readonly desiredIsNewer: boolean;
  /** A poll one interval later (the schedule's catch-up): the newer commit applied. */
  readonly afterPoll: string;
  readonly after: Convergence;
}

/**
 * Fault 6a, the ordering rule ("newer" means resolved later, fetch-track.ts):
 * function A, whose clock runs `skewMs` ahead, resolves commit 1; `gapMs`
 * later function B, whose clock is right, resolves commit 2. B's revision
 * wins when the skew is below the gap; at and beyond it the stamps compare
 * equal or inverted. A poll `pollMs` later converges either way.
 */
export async function resolvedAtSkewTrial(
  world: FaultWorld,
  skewMs: number,
  gapMs: number,
  pollMs = 300_000,
): Promise<SkewObservation> {
  const t = await newTrialTrack(world, 'skew');
  const base = Date.now();
  const clock = (offset: number) => () => new Date(base + offset);
  await pushFiles(t.repo, configMaps('cm', 3, 'one'));
  const a = await fetchAndSync(t, { ...t.deps, now: clock(skewMs) });
  if (a.sync !== 'applied') throw new Error(`function A: ${JSON.stringify(a)}`);
  const newerCommit = await pushFiles(t.repo, configMaps('cm', 3, 'two'), { removeOthers: true });
  const b = await fetchAndSync(t, { ...t.deps, now: clock(gapMs) });
  const desired = (await readTrackState(t.deps.state, t.track.name)).desiredRevision;
  const poll = await fetchAndSync(t, { ...t.deps, now: clock(gapMs + pollMs) });
  return {
    skewMs,
    gapMs,
    newerFetch: b.sync ? `${b.fetch}/${b.sync}` : b.fetch,
    desiredIsNewer: desired === newerCommit,
    afterPoll: poll.sync ? `${poll.fetch}/${poll.sync}` : poll.fetch,
    after: await convergence(t, expectedOf('cm', 3, 'two')),
  };
}

export interface LeaseSkewObservation {
  readonly skewMs: number;
  readonly leaseMs: number;
  /** A second function's job while the first holds the lease. */
  readonly second: string;
  /** Whether both ran their apply at the same time. */
  readonly overlapped: boolean;
  readonly first: string;
  readonly after: Convergence;
}

/**
 * Fault 6b, the apply lease (track-state.ts): function A, whose clock runs
 * `skewMs` behind, takes the lease and is held mid-apply; function B, whose
 * clock is right, runs the same track's job meanwhile. The lease lasts
 * timeout × 2 + 60 s from A's clock, so B must be refused while the skew
 * is below that, and takes over (a second apply at the same time) beyond it.
 */
export async function leaseSkewTrial(
  world: FaultWorld,
  skewMs: number,
): Promise<LeaseSkewObservation> {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let inApply!: () => void;
  const applying = new Promise<void>((resolve) => (inApply = resolve));
  let released = false;
  let overlapped = false;
  const t = await newTrialTrack(world, 'lease', {
    wrapCluster: (real) =>
      onApply(real, async (count) => {
        // One object: a second apply while the first is held can only be another job's.
        if (count === 1) {
          inApply();
          await held;
        } else if (!released) overlapped = true;
      }),
  });
  const leaseMs = t.track.timeout * 2 + 60_000;
  await pushFiles(t.repo, configMaps('cm', 1, 'one'));
  const job = await fetchOnly(t);
  const base = Date.now();
  const firstRun = runOne(job, { ...t.deps, now: () => new Date(base - skewMs) });
  await applying;
  const second = await runOne(job, { ...t.deps, now: () => new Date(Date.now()) });
  released = true;
  release();
  const first = await firstRun;
  const label = (r: Awaited<ReturnType<typeof runOne>>): string =>
    r.error?.code ?? summarizeJob(r.done!).result;
  return {
    skewMs,
    leaseMs,
    second: label(second),
    overlapped,
    first: label(first),
    after: await convergence(t, expectedOf('cm', 1, 'one')),
  };
}

/** Scratch space for a world; `remove` deletes it. */
export async function scratchDir(): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'driftless-faults-'));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

// ------------------------------------------- fault 1: API server killed mid-apply

export interface ApiServerObservation {
  /** The sync job's outcome (or thrown code) with the API server killed under it. */
  readonly during: string;
  readonly error: string | undefined;
  /** From the kill to the job's end. */
  readonly failMs: number;
  /** The revision applied after the failed job: still revision 1. */
  readonly appliedAfterFault: boolean;
  /** The object revision 2 removes was not pruned by the failed job. */
  readonly notPrunedOnFailure: boolean;
  readonly restartMs: number;
  /** The same sync job again, as the queue redelivers it. */
  readonly retry: string;
  /** From the restart's start to revision 2 applied. */
  readonly convergeMs: number;
  readonly after: Convergence;
}

/** The API server a trial may kill and start again (test/harness/cluster.ts). */
export interface RestartableApiServer {
  killApiServer(): Promise<void>;
  restartApiServer(): Promise<void>;
}

/**
 * Fault 1: the API server is killed (SIGKILL) after the tenth object of a
 * 120-object revision was sent; the job ends, the server is started again
 * and the same sync job runs again.
 */
export async function apiServerKillTrial(
  world: FaultWorld,
  cluster: RestartableApiServer,
): Promise<ApiServerObservation> {
  let armed = false;
  let killedAt = 0;
  let killed: Promise<void> | undefined;
  const t = await newTrialTrack(world, 'api', {
    wrapCluster: (real) =>
      onApply(real, (count) => {
        if (armed && killed === undefined && count >= 10) {
          killedAt = Date.now();
          killed = cluster.killApiServer();
        }
      }),
  });
  await pushFiles(t.repo, { ...configMaps('keep', 20, 'one'), ...configMaps('gone', 1, 'one') });
  const first = await fetchAndSync(t);
  if (first.sync !== 'applied') throw new Error(`first sync: ${JSON.stringify(first)}`);
  const good = first.syncJob!.revision;
  await pushFiles(
    t.repo,
    { ...configMaps('keep', 20, 'two'), ...configMaps('new', 100, 'two') },
    { removeOthers: true },
  );
  const job = await fetchOnly(t);

  armed = true;
  const during = await runOne(job, t.deps);
  armed = false;
  const failMs = Date.now() - killedAt;
  await killed;
  const state = await readTrackState(t.deps.state, t.track.name);

  const restarting = Date.now();
  await cluster.restartApiServer();
  const restartMs = Date.now() - restarting;
  const notPrunedOnFailure = (await liveConfigMaps(t)).values.get('gone-0') === 'one';
  const retry = await runOne(job, t.deps);
  const convergeMs = Date.now() - restarting;
  const label = (r: Awaited<ReturnType<typeof runOne>>): string =>
    r.error?.code ?? summarizeJob(r.done!).result;
  return {
    during: label(during),
    error: during.error?.message ?? (during.done ? summarizeJob(during.done).error : undefined),
    failMs,
    appliedAfterFault: state.appliedRevision === good,
    notPrunedOnFailure,
    restartMs,
    retry: label(retry),
    convergeMs,
    after: await convergence(t, {
      ...expectedOf('keep', 20, 'two'),
      ...expectedOf('new', 100, 'two'),
    }),
  };
}

// ------------------------------------------------- fault 2: S3 stopped mid-sync

export interface StoreFaultObservation {
  /** The sync job with MinIO killed under it: a thrown, retryable fault. */
  readonly during: string;
  readonly error: string | undefined;
  /** After the restart: the state document parses, still says revision 1, and history reads. */
  readonly stateReadable: boolean;
  readonly appliedAfterFault: boolean;
  readonly historyEntries: number;
  /** A history entry of revision 2 was written (it must not be, or be whole). */
  readonly historyOfFailedJob: number;
  readonly restartMs: number;
  /** The job again at once after the restart: the dead attempt's lease is still held. */
  readonly retryAtOnce: string;
  /**
   * The job as SQS redelivers it (after the apply queue's visibility timeout): `unchanged`
   * when the dead attempt had applied everything before it failed to record it.
   */
  readonly redelivered: string;
  /** The state says revision 2 is applied after the redelivery. */
  readonly recordedAfterRedelivery: boolean;
  readonly after: Convergence;
}

/** The S3 server a trial may kill and start again (test/harness/minio.ts). */
export interface RestartableStore {
  kill(): Promise<void>;
  restart(): Promise<void>;
}

/**
 * Fault 2: MinIO is killed (SIGKILL) while a sync job applies (after its
 * fifth object), so the job cannot record its outcome; MinIO starts again
 * and the job is delivered again.
 */
export async function storeFaultTrial(
  world: FaultWorld,
  store: ArtifactStore & StateStore,
  server: RestartableStore,
): Promise<StoreFaultObservation> {
  let armed = false;
  let killed = false;
  const t = await newTrialTrack(world, 's3', {
    store,
    wrapCluster: (real) =>
      onApply(real, async (count) => {
        if (armed && !killed && count >= 5) {
          killed = true;
          await server.kill();
        }
      }),
  });
  await pushFiles(t.repo, { ...configMaps('keep', 10, 'one'), ...configMaps('gone', 1, 'one') });
  const first = await fetchAndSync(t);
  if (first.sync !== 'applied') throw new Error(`first sync: ${JSON.stringify(first)}`);
  const good = first.syncJob!.revision;
  await pushFiles(t.repo, configMaps('keep', 10, 'two'), { removeOthers: true });
  const job = await fetchOnly(t);

  armed = true;
  const during = await runOne(job, t.deps);
  armed = false;
  const restarting = Date.now();
  await server.restart();
  const restartMs = Date.now() - restarting;

  let stateReadable = false;
  let appliedAfterFault = false;
  let historyEntries = 0;
  let historyOfFailedJob = 0;
  try {
    const state = await readTrackState(t.deps.state, t.track.name);
    stateReadable = true;
    appliedAfterFault = state.appliedRevision === good;
    const history = await t.deps.state.listHistory(t.track.name);
    historyEntries = history.length;
    historyOfFailedJob = history.filter((h) => h.revision === job.revision).length;
  } catch {
    // Unreadable: stateReadable stays false, which the trial reports.
  }
  const label = (r: Awaited<ReturnType<typeof runOne>>): string =>
    r.error?.code ?? summarizeJob(r.done!).result;
  const atOnce = await runOne(job, t.deps);
  const redelivered = await runOne(job, {
    ...t.deps,
    now: () => new Date(Date.now() + APPLY_REDELIVERY_MS),
  });
  return {
    during: label(during),
    error: during.error?.message,
    stateReadable,
    appliedAfterFault,
    historyEntries,
    historyOfFailedJob,
    restartMs,
    retryAtOnce: label(atOnce),
    redelivered: label(redelivered),
    recordedAfterRedelivery:
      (await readTrackState(t.deps.state, t.track.name)).appliedRevision === job.revision,
    after: await convergence(t, expectedOf('keep', 10, 'two')),
  };
}
