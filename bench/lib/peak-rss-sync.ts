/**
 * One whole `driftless sync -o json` of a track in a child process, under
 * `/usr/bin/time`: its peak resident set and wall time. A fresh namespace,
 * store and Git cache each time — the first sync of the revision, the
 * heaviest. Shared by `sync-rss` and `fleet`.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { REPO_ROOT } from '../../test/harness/testbin.ts';
import type { GitRepository } from '../../test/harness/git-server.ts';
import { runCommand } from './command.ts';
import type { BenchContext } from './context.ts';
import { writeBenchConfig } from './driftless-config.ts';

export interface PeakRssSync {
  readonly repository: GitRepository;
  readonly kubeconfig: string;
  /** The environment the config's secrets resolve from (benchEnv), with PATH. */
  readonly env: NodeJS.ProcessEnv;
  readonly track: string;
  /** What runs `driftless`: the installed bin, or node with tsx and src/cli/run.ts. */
  readonly command: readonly string[];
  /** Names the scratch directory and namespace. */
  readonly label: string;
}

export interface SyncFigures {
  readonly maxRssMB: number;
  readonly seconds: number;
}

/** Runs the sync; throws unless it applied. */
export async function peakRssSync(ctx: BenchContext, sync: PeakRssSync): Promise<SyncFigures> {
  const dir = await ctx.scratch(sync.label);
  const config = await writeBenchConfig({
    dir,
    kubeconfigPath: sync.kubeconfig,
    track: sync.track,
    repository: sync.repository,
    namespace: await ctx.namespace(sync.label),
  });
  const timeFile = join(dir, 'time.txt');
  const { stdout } = await runCommand(
    '/usr/bin/time',
    [
      '-f',
      '%M %e',
      '-o',
      timeFile,
      ...sync.command,
      'sync',
      '-c',
      config,
      '--track',
      sync.track,
      '-o',
      'json',
    ],
    { env: sync.env, cwd: REPO_ROOT },
  );
  const result = JSON.parse(stdout) as { result: string; error?: string };
  if (result.result !== 'applied') {
    throw new Error(`${sync.label} sync ended "${result.result}": ${result.error ?? ''}`);
  }
  const [kb, seconds] = (await readFile(timeFile, 'utf8')).trim().split(/\s+/).map(Number);
  return { maxRssMB: (kb ?? 0) / 1024, seconds: seconds ?? 0 };
}
