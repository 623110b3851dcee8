/**
 * Peak RSS of a whole `driftless sync` of N objects — fetch from the test
 * Git server, render, store the artifact, apply into a fresh namespace — in
 * a child process whose maximum resident set `/usr/bin/time` reports.
 * Measured twice per run: run through tsx (as in development; tsx's loader
 * thread and esbuild transforms add memory) and as shipped (the bundled bin
 * npm installed from the packed tarball).
 */
import { randomBytes } from 'node:crypto';
import { pushFiles } from '../test/harness/git-server.ts';
import type { BenchContext } from './lib/context.ts';
import { benchEnv } from './lib/driftless-config.ts';
import { installedCli } from './lib/installed-cli.ts';
import { benchObjects, manifestFiles } from './lib/manifests.ts';
import { peakRssSync, type SyncFigures } from './lib/peak-rss-sync.ts';
import { rotated } from './lib/stats.ts';
import type { Benchmark, Measurement } from './lib/types.ts';

const TRACK = 'rss';
/** Ten documents a file: 500 files for 5,000 objects, as a larger repository lays them out. */
const OBJECTS_PER_FILE = 10;

export const syncRss: Benchmark = {
  name: 'sync-rss',
  title: 'Peak RSS while syncing 5,000 objects',
  async run(ctx: BenchContext): Promise<Measurement[]> {
    const count = ctx.count(5000);
    const git = await ctx.git();
    const repository = await git.createRepository(`rss-${randomBytes(3).toString('hex')}`);
    await pushFiles(repository, manifestFiles(benchObjects(count), OBJECTS_PER_FILE), {
      message: `${count} objects`,
    });
    const { kubeconfig } = await ctx.kubectl();
    const installed = await installedCli(ctx);
    const env = { ...benchEnv(repository, 'unused'), PATH: installed.env.PATH };

    const sync = (label: string, command: readonly string[]): Promise<SyncFigures> =>
      peakRssSync(ctx, {
        repository,
        kubeconfig,
        env,
        track: TRACK,
        command,
        label: `rss-${label}`,
      });

    const tsx: SyncFigures[] = [];
    const shipped: SyncFigures[] = [];
    for (let run = 0; run < ctx.runs; run++) {
      await rotated(run, [
        async () => {
          tsx.push(await sync('tsx', [process.execPath, '--import', 'tsx', 'src/cli/run.ts']));
        },
        async () => {
          shipped.push(await sync('installed', [installed.bin]));
        },
      ]);
      process.stderr.write(`# sync-rss run ${run + 1} done\n`);
    }
    const note = `whole CLI process (driftless sync -o json): Git fetch of ${count / OBJECTS_PER_FILE} files, render, fs artifact, SSA of every object, status; max RSS from /usr/bin/time`;
    return [
      {
        metric: `peak RSS, sync of ${count} objects (installed bundle)`,
        unit: 'MB',
        runs: shipped.map((f) => f.maxRssMB),
        goal: { max: 200 },
        notes: [note],
      },
      {
        metric: `peak RSS, sync of ${count} objects (tsx)`,
        unit: 'MB',
        runs: tsx.map((f) => f.maxRssMB),
        goal: { max: 200 },
        notes: [
          "tsx's loader thread and on-the-fly transforms add to the figure; the installed bundle is what ships",
        ],
      },
      {
        metric: `wall time, sync of ${count} objects (installed bundle)`,
        unit: 'ms',
        runs: shipped.map((f) => f.seconds * 1000),
      },
    ];
  },
};
