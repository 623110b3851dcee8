/**
 * In-process figures of the check before write (issue 10, point 6): `syncTrack`
 * of 500 ConfigMaps — first sync, re-sync of the unchanged revision, sync of a
 * new revision that changes 1 object — for this checkout and, side by side in
 * the same process and on the same cluster, another checkout's code (the
 * "before"), alternating which goes first. Prints medians and apply requests.
 *
 *   node --import tsx bench/sync-check.ts [--before /path/to/other/checkout] [--runs 5] [--count 500]
 *
 * Standalone (not in `npm run bench`): the other checkout is an argument.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { KubernetesPort } from '../src/cluster/kubernetes-port.ts';
import type { Track } from '../src/config/types.ts';
import type { SyncDeps, SyncRequest, SyncResult } from '../src/sync/sync-track.ts';
import { startTestCluster } from '../test/harness/cluster.ts';
import { pushFiles, startGitServer, type GitRepository } from '../test/harness/git-server.ts';
import { median, timed } from './lib/stats.ts';

const { values } = parseArgs({
  options: {
    before: { type: 'string' },
    runs: { type: 'string', default: '5' },
    count: { type: 'string', default: '500' },
  },
});
const RUNS = Number(values.runs);
const COUNT = Number(values.count);

type SyncTrack = (track: Track, request: SyncRequest, deps: SyncDeps) => Promise<SyncResult>;

/** One checkout's code, loaded from its own files. */
interface Side {
  readonly label: string;
  readonly syncTrack: SyncTrack;
  readonly deps: Omit<SyncDeps, 'cluster'> & { cluster: KubernetesPort };
  readonly parseConfig: (text: string, file: string) => { tracks: Track[] };
  applies: number;
}

async function loadSide(
  label: string,
  root: string,
  kubeconfig: string,
  work: string,
  password: string,
): Promise<Side> {
  const at = (path: string): string => join(root, path);
  const { syncTrack } = (await import(at('src/sync/sync-track.ts'))) as { syncTrack: SyncTrack };
  const { parseConfig } = await import(at('src/config/index.ts'));
  // The Git source moved to src/source/git/ (issue 10); an older checkout has it at its old path.
  const gitSource = existsSync(at('src/source/git/index.ts'))
    ? 'src/source/git/index.ts'
    : 'src/source/git-source.ts';
  const { createGitSource } = await import(at(gitSource));
  const { FsStore } = await import(at('src/store/fs-store.ts'));
  const { KubeApiCluster } = await import(at('src/cluster/kube-api-cluster.ts'));
  const { endpointFromFile } = await import(at('src/cluster/connect-cluster.ts'));
  const store = new FsStore({ path: join(work, label, 'store') });
  const inner: KubernetesPort = KubeApiCluster.forEndpoint(endpointFromFile(kubeconfig));
  const side: Side = {
    label,
    syncTrack,
    parseConfig,
    applies: 0,
    deps: {
      source: createGitSource({
        cacheDir: join(work, label, 'git'),
        readSecret: async () => `bench:${password}`,
      }),
      artifacts: store,
      state: store,
      cluster: {
        discover: (refresh) => inner.discover(refresh),
        serverVersion: () => inner.serverVersion(),
        apply: (object, options) => {
          if (!options.dryRun) side.applies++;
          return inner.apply(object, options);
        },
        get: (ref) => inner.get(ref),
        list: (query) => inner.list(query),
        delete: (ref, options) => inner.delete(ref, options),
      },
    },
  };
  return side;
}

function configMaps(count: number, changed = -1): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 0; i < count; i++) {
    const value = i === changed ? 'changed' : `value-${i}`;
    files[`cm-${i}.yaml`] =
      `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-${i}\ndata:\n  value: "${value}"\n  other: "${i}"\n`;
  }
  return files;
}

interface Figures {
  first: number[];
  unchanged: number[];
  oneChanged: number[];
  applies: { first: number; unchanged: number; oneChanged: number };
}

async function main(): Promise<void> {
  const work = await mkdtemp(join(tmpdir(), 'driftless-sync-check-'));
  process.stderr.write('# starting the test cluster\n');
  const cluster = await startTestCluster();
  const git = await startGitServer({ username: 'bench' });
  try {
    const roots: [string, string][] = [['after', resolve(import.meta.dirname, '..')]];
    if (values.before) roots.unshift(['before', resolve(values.before)]);
    const sides = await Promise.all(
      roots.map(([label, root]) =>
        loadSide(label, root, cluster.kubeconfigPath, work, git.password),
      ),
    );
    const figures = new Map<string, Figures>(
      sides.map((s) => [
        s.label,
        {
          first: [],
          unchanged: [],
          oneChanged: [],
          applies: { first: 0, unchanged: 0, oneChanged: 0 },
        },
      ]),
    );
    const original = configMaps(COUNT);
    const changedOne = configMaps(COUNT, Math.floor(COUNT / 2));
    let n = 0;
    for (let run = 0; run <= RUNS; run++) {
      const measured = run > 0;
      const order = run % 2 === 0 ? sides : [...sides].reverse();
      for (const side of order) {
        const name = `t${++n}`;
        const repo: GitRepository = await git.createRepository(name);
        const ns = `check-${process.pid}-${n}`;
        await side.deps.cluster.apply(
          { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } },
          { fieldManager: 'bench', force: true },
        );
        const track = side.parseConfig(
          `tracks: [{name: ${name}, repository: "${repo.url}", namespace: ${ns}, auth: {type: basic, secret: "env:X"}}]`,
          'driftless.yaml',
        ).tracks[0] as Track;
        const sync = async (): Promise<{ ms: number; applies: number; result: SyncResult }> => {
          const before = side.applies;
          const { ms, value } = await timed(() =>
            side.syncTrack(track, { trigger: 'manual' }, side.deps as SyncDeps),
          );
          if (value.result === 'failed') throw new Error(`${side.label}: ${value.error}`);
          return { ms, applies: side.applies - before, result: value };
        };
        await pushFiles(repo, original);
        const first = await sync();
        const unchanged = await sync();
        await pushFiles(repo, changedOne);
        const oneChanged = await sync();
        if (measured) {
          const f = figures.get(side.label) as Figures;
          f.first.push(first.ms);
          f.unchanged.push(unchanged.ms);
          f.oneChanged.push(oneChanged.ms);
          f.applies = {
            first: first.applies,
            unchanged: unchanged.applies,
            oneChanged: oneChanged.applies,
          };
        }
        process.stderr.write(
          `# run ${run}${measured ? '' : ' (warm-up)'} ${side.label}: first ${first.ms.toFixed(0)} ms (${first.applies} applies), ` +
            `unchanged ${unchanged.ms.toFixed(0)} ms (${unchanged.applies}, ${unchanged.result.result}), ` +
            `1 changed ${oneChanged.ms.toFixed(0)} ms (${oneChanged.applies}, ${oneChanged.result.result})\n`,
        );
      }
    }
    console.log(
      `syncTrack in-process, ${COUNT} ConfigMaps, median of ${RUNS} runs (one warm-up), node ${process.version}`,
    );
    console.log('| code | first sync | re-sync unchanged | new revision, 1 changed |');
    console.log('| --- | --- | --- | --- |');
    for (const [label, f] of figures) {
      const cell = (runs: number[], applies: number): string =>
        `${median(runs).toFixed(0)} ms (${applies} applies)`;
      console.log(
        `| ${label} | ${cell(f.first, f.applies.first)} | ${cell(f.unchanged, f.applies.unchanged)} | ${cell(f.oneChanged, f.applies.oneChanged)} |`,
      );
    }
  } finally {
    await git.stop();
    await cluster.stop();
    await rm(work, { recursive: true, force: true });
  }
}

await main();
