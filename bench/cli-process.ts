/**
 * The installed `driftless` bin timed as whole processes, the way a user
 * runs it (process start, config, store, Git, cluster connection and
 * discovery included), with 500 ConfigMaps from a Git repository on this
 * machine, each figure against its peer measured in the same run:
 *
 * - first `sync` (fresh namespace and store) vs `kubectl apply --server-side`
 *   into a fresh namespace of its own;
 * - `drift --detect-only` with nothing changed vs `kubectl diff --server-side`
 *   of kubectl's namespace;
 * - `sync` of the revision already applied vs `kubectl apply --server-side`
 *   of what kubectl already applied, and the same sync without the code
 *   cache (as the first run after an install) and without
 *   NODE_EXTRA_CA_CERTS (which some shells set; Node then parses a CA bundle
 *   at every start);
 * - `driftless --help` vs `node -e 0`;
 * - the first sync's floor: the same 500 server-side apply PATCHes sent raw
 *   from this process (no start-up, Git, render, store or LIST), what the
 *   API server on this machine takes whoever sends them;
 * - an unchanged sync's floor: a plain node process that only LISTs the 500
 *   ConfigMaps (bench/lib/list-configmaps.mjs).
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCommand, type CommandResult } from './lib/command.ts';
import type { BenchContext } from './lib/context.ts';
import { writeBenchConfig } from './lib/driftless-config.ts';
import { installedCli } from './lib/installed-cli.ts';
import { kubectlFor } from './lib/kubectl.ts';
import { APPLY_CONCURRENCY, withOwnershipLabel } from '../src/apply/apply-objects.ts';
import { FIELD_MANAGER } from '../src/apply/ownership.ts';
import { benchConfigMaps, writeManifests } from './lib/manifests.ts';
import { rawApply } from './lib/raw-apply.ts';
import { rotated, median, timed } from './lib/stats.ts';
import type { Benchmark, Measurement } from './lib/types.ts';

const TRACK = 'cli';
const LIST_CONFIGMAPS = fileURLToPath(new URL('./lib/list-configmaps.mjs', import.meta.url));
/** `--help` and `node -e 0` take tens of ms: each run's figure is the median of this many pairs. */
const HELP_PAIRS = 10;

/** One comparison's figures, run by run. */
interface Pair {
  readonly driftless: number[];
  readonly peer: number[];
}

const pair = (): Pair => ({ driftless: [], peer: [] });

/** A Git repository in `dir` holding one ConfigMap a file, committed on `main`. */
async function createRepository(dir: string, count: number): Promise<void> {
  await writeManifests(dir, benchConfigMaps(count));
  const git = (...args: string[]) => runCommand('git', args, { cwd: dir });
  await git('init', '-q', '-b', 'main');
  await git('add', '-A');
  await git('-c', 'user.name=bench', '-c', 'user.email=bench@example.com', 'commit', '-qm', 'c');
}

/** The `result` of `sync -o json`, failing with the error driftless reported. */
function syncResult(run: CommandResult): string {
  const result = JSON.parse(run.stdout) as { result: string; error?: string };
  if (result.result === 'failed') throw new Error(`driftless sync failed: ${result.error ?? ''}`);
  return result.result;
}

export const cliProcess: Benchmark = {
  name: 'cli-process',
  title: 'The installed driftless bin as whole processes: 500 ConfigMaps, --help',
  async run(ctx: BenchContext): Promise<Measurement[]> {
    const count = ctx.count(500);
    const cli = await installedCli(ctx);
    const kubectl = await kubectlFor(ctx);
    const { kubeconfig } = await ctx.kubectl();
    const kc = await ctx.kubeConfig();
    const repository = await ctx.scratch('cli-process-repository');
    await createRepository(repository, count);
    // The code cache in a folder of this bench run: the warm-up run writes it, as a user's
    // first run of each command does, and no cache of an earlier build or run takes part.
    const cacheEnv = {
      ...cli.env,
      DRIFTLESS_COMPILE_CACHE: join(await ctx.scratch('cli-process-compile-cache'), 'cache'),
    };
    const withoutCache = { ...cli.env, DRIFTLESS_COMPILE_CACHE: 'off' };
    // Some shells (this machine's sandbox among them) point NODE_EXTRA_CA_CERTS at the whole
    // system CA bundle: every Node process then parses ~140 certificates before running any
    // code (`node -e 0` ~30 -> ~65 ms here), which Go's kubectl never does. One row shows the
    // unchanged sync without it; every other driftless figure runs with the environment as is.
    const withoutExtraCerts: NodeJS.ProcessEnv = { ...cacheEnv };
    delete withoutExtraCerts['NODE_EXTRA_CA_CERTS'];
    const driftless = (
      args: readonly string[],
      okCodes?: readonly number[],
      env: NodeJS.ProcessEnv = cacheEnv,
    ) => timed(() => runCommand(cli.bin, args, { env, ...(okCodes ? { okCodes } : {}) }));

    const firstSync = pair();
    const noopDrift = pair();
    const unchangedSync = pair();
    const unchangedSyncUncached: number[] = [];
    const unchangedSyncNoExtraCerts: number[] = [];
    const help = pair();
    const applyFloor: number[] = [];
    const listFloor: number[] = [];
    // What a run found that a correct set-up never shows, reported beside the figure it spoils.
    const firstSyncFaults = new Set<string>();
    const noopDriftFaults = new Set<string>();
    for (let run = 0; run <= ctx.runs; run++) {
      const measured = run > 0;
      const record = (into: number[], ms: number) => {
        if (measured) into.push(ms);
      };
      // Each run starts from nothing: a fresh namespace on each side and a fresh driftless store.
      const dir = await ctx.scratch(`cli-process-${run}`);
      const kubectlNs = await ctx.namespace('cli-k');
      const syncNamespace = await ctx.namespace('cli-d');
      const config = await writeBenchConfig({
        dir,
        kubeconfigPath: kubeconfig,
        track: TRACK,
        repository,
        namespace: syncNamespace,
      });
      const sync = ['sync', '-c', config, '--track', TRACK, '-o', 'json'];
      const apply = ['apply', '--server-side', '-n', kubectlNs, '-f', `${repository}/`];

      const rawNs = await ctx.namespace('cli-r');
      const rawObjects = benchConfigMaps(count).map((object) =>
        withOwnershipLabel(
          { ...object, metadata: { ...object.metadata, namespace: rawNs } },
          TRACK,
        ),
      );
      await rotated(run, [
        async () => {
          const { ms, value } = await driftless(sync);
          if (syncResult(value) !== 'applied') firstSyncFaults.add('a first sync did not apply');
          record(firstSync.driftless, ms);
        },
        async () => record(firstSync.peer, (await timed(() => kubectl(apply))).ms),
        async () =>
          record(applyFloor, (await timed(() => rawApply(kc, rawObjects, FIELD_MANAGER))).ms),
      ]);
      await rotated(run, [
        async () => {
          // Exit 1: differences found — on a no-op check, a fault of the set-up.
          const { ms, value } = await driftless(
            ['drift', '-c', config, '--track', TRACK, '--detect-only', '-o', 'json'],
            [0, 1],
          );
          if (value.code === 1)
            noopDriftFaults.add('driftless drift found differences on a no-op check');
          record(noopDrift.driftless, ms);
        },
        async () => {
          const diff = ['diff', '--server-side', '-n', kubectlNs, '-f', `${repository}/`];
          const { ms, value } = await timed(() => kubectl(diff, [0, 1]));
          if (value.code === 1)
            noopDriftFaults.add('kubectl diff found differences on a no-op check');
          record(noopDrift.peer, ms);
        },
      ]);
      await rotated(run, [
        async () => {
          const { ms, value } = await driftless(sync);
          syncResult(value);
          record(unchangedSync.driftless, ms);
        },
        async () => record(unchangedSync.peer, (await timed(() => kubectl(apply))).ms),
        async () => {
          const list = [LIST_CONFIGMAPS, kubeconfig, syncNamespace, String(count)];
          record(listFloor, (await timed(() => runCommand(process.execPath, list))).ms);
        },
        async () => {
          const { ms, value } = await driftless(sync, undefined, withoutCache);
          syncResult(value);
          record(unchangedSyncUncached, ms);
        },
        async () => {
          const { ms, value } = await driftless(sync, undefined, withoutExtraCerts);
          syncResult(value);
          record(unchangedSyncNoExtraCerts, ms);
        },
      ]);
      const helpPair = pair();
      const nodeAlone = ['-e', '0'];
      for (let i = 0; i < HELP_PAIRS; i++) {
        await rotated(i, [
          async () => {
            helpPair.driftless.push((await driftless(['--help'])).ms);
          },
          async () => {
            const { ms } = await timed(() => runCommand(process.execPath, nodeAlone));
            helpPair.peer.push(ms);
          },
        ]);
      }
      record(help.driftless, median(helpPair.driftless));
      record(help.peer, median(helpPair.peer));
      process.stderr.write(`# cli-process run ${run}${measured ? '' : ' (warm-up)'} done\n`);
    }

    const whole =
      'whole processes: the bin npm installed from `npm pack` (not npx), kubectl with a warm discovery cache';
    return [
      {
        metric: `first sync, ${count} ConfigMaps (installed bin)`,
        unit: 'ms',
        runs: firstSync.driftless,
        peer: { label: 'kubectl apply --server-side', runs: firstSync.peer },
        goal: { maxRatio: 0.5 },
        notes: [
          `${whole}; driftless: a fresh namespace and fs store, the repository read in place (local path); kubectl: a fresh namespace`,
          ...firstSyncFaults,
        ],
      },
      {
        metric: `first sync's floor: ${count} server-side applies alone`,
        unit: 'ms',
        runs: applyFloor,
        peer: { label: 'kubectl apply --server-side', runs: firstSync.peer },
        notes: [
          `the first sync's PATCHes sent raw from the bench process, ${APPLY_CONCURRENCY} in flight as driftless sends them (bench/lib/raw-apply.ts): no process start, Git, render, store, LIST or health; what the API server sharing these cores takes, whoever sends them. Its ratio less the goal's 0.5 is all that is left for everything else a first sync does`,
        ],
      },
      {
        metric: `no-op drift check, ${count} ConfigMaps (installed bin)`,
        unit: 'ms',
        runs: noopDrift.driftless,
        peer: { label: 'kubectl diff --server-side', runs: noopDrift.peer },
        goal: { maxRatio: 0.1 },
        notes: [
          'driftless drift --detect-only after the first sync; kubectl diff of the namespace kubectl applied',
          ...noopDriftFaults,
        ],
      },
      {
        metric: `sync of an unchanged revision, ${count} ConfigMaps (installed bin)`,
        unit: 'ms',
        runs: unchangedSync.driftless,
        peer: { label: 'kubectl apply --server-side', runs: unchangedSync.peer },
        goal: { maxRatio: 0.15 },
        notes: [
          'the same revision synced again; kubectl applies what it applied again; driftless with the code cache its earlier runs wrote (src/cli/compile-cache.ts)',
        ],
      },
      {
        metric: `sync of an unchanged revision without the code cache (installed bin)`,
        unit: 'ms',
        runs: unchangedSyncUncached,
        peer: { label: 'kubectl apply --server-side', runs: unchangedSync.peer },
        notes: [
          'DRIFTLESS_COMPILE_CACHE=off: every function compiled as on the first run after an install or upgrade (which also writes the cache)',
        ],
      },
      {
        metric: `sync of an unchanged revision without NODE_EXTRA_CA_CERTS (installed bin)`,
        unit: 'ms',
        runs: unchangedSyncNoExtraCerts,
        peer: { label: 'kubectl apply --server-side', runs: unchangedSync.peer },
        notes: [
          process.env['NODE_EXTRA_CA_CERTS'] === undefined
            ? 'NODE_EXTRA_CA_CERTS was not set for this run: the same as the row above'
            : `the row above, with NODE_EXTRA_CA_CERTS (${process.env['NODE_EXTRA_CA_CERTS']}) removed from the environment, as most users' shells have it; kubectl ignores the variable`,
        ],
      },
      {
        metric: `unchanged sync's floor: a node process that only LISTs the ${count} ConfigMaps`,
        unit: 'ms',
        runs: listFloor,
        peer: { label: 'kubectl apply --server-side', runs: unchangedSync.peer },
        notes: [
          "plain node, no driftless code: kubeconfig read, TLS, one LIST, JSON parsed (bench/lib/list-configmaps.mjs). Its ratio less the goal's 0.15 is what is left for loading driftless, the config, the ref, the state and artifact, comparing and recording",
        ],
      },
      {
        metric: 'driftless --help (installed bin)',
        unit: 'ms',
        runs: help.driftless,
        peer: { label: 'node -e 0', runs: help.peer },
        goal: { maxRatio: 2 },
        notes: [`each run's figure is the median of ${HELP_PAIRS} alternating pairs`],
      },
    ];
  },
};
