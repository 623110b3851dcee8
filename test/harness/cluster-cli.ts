/**
 * `npm run cluster:up` / `npm run cluster:down`: a test cluster that outlives
 * the command, for people and tools (kubectl, benchmarks, the demo).
 *
 * State lives in .driftless/testcluster/: the kubeconfig, logs, the binaries
 * it runs (linked into bin/) and state.json with the processes to stop.
 * Both commands are idempotent.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { startTestCluster } from './cluster.ts';
import { controlPlaneBinaries, REPO_ROOT } from './testbin.ts';

/** Where `cluster:up` keeps the cluster it starts. */
export const CLUSTER_DIR = join(REPO_ROOT, '.driftless/testcluster');
const STATE_FILE = join(CLUSTER_DIR, 'state.json');

interface ClusterState {
  readonly server: string;
  readonly processes: readonly { readonly name: string; readonly pid: number }[];
}

/** True while `pid` is alive and still runs the program we started (pids get reused). */
function isRunning(pid: number, name: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0]?.endsWith(name) ?? false;
  } catch {
    return false;
  }
}

async function readState(): Promise<ClusterState | undefined> {
  if (!existsSync(STATE_FILE)) return undefined;
  return JSON.parse(await readFile(STATE_FILE, 'utf8')) as ClusterState;
}

/** Starts the background cluster unless it already runs. */
export async function up(): Promise<void> {
  const state = await readState();
  if (state && state.processes.every((p) => isRunning(p.pid, p.name))) {
    console.log(`test cluster already running at ${state.server}`);
    console.log(`kubeconfig: ${join(CLUSTER_DIR, 'kubeconfig')}`);
    return;
  }
  if (state) await down(); // half-dead leftovers: clear them before starting anew
  await rm(CLUSTER_DIR, { recursive: true, force: true });
  await mkdir(join(CLUSTER_DIR, 'bin'), { recursive: true });
  const binaries = await controlPlaneBinaries();
  for (const path of Object.values(binaries)) {
    await symlink(path, join(CLUSTER_DIR, 'bin', basename(path)));
  }
  const cluster = await startTestCluster({ dir: CLUSTER_DIR, detached: true, binaries });
  const next: ClusterState = {
    server: cluster.server,
    processes: cluster.processes.map((p) => ({
      name: basename(p.child.spawnfile),
      pid: p.child.pid as number,
    })),
  };
  await writeFile(STATE_FILE, JSON.stringify(next, null, 2));
  console.log(`test cluster running at ${cluster.server}`);
  console.log(`kubeconfig: ${cluster.kubeconfigPath}`);
  console.log(`binaries:   ${join(CLUSTER_DIR, 'bin')}`);
}

/** Stops every process `up` started. */
export async function down(): Promise<void> {
  const state = await readState();
  if (!state) {
    console.log('test cluster is not running');
    return;
  }
  // Stop in reverse start order: controller-manager, API server, then etcd.
  for (const { pid, name } of [...state.processes].reverse()) {
    if (!isRunning(pid, name)) continue;
    process.kill(pid, 'SIGTERM');
    for (let waited = 0; isRunning(pid, name) && waited < 10_000; waited += 100) await sleep(100);
    if (isRunning(pid, name)) process.kill(pid, 'SIGKILL');
  }
  await rm(STATE_FILE, { force: true });
  await rm(join(CLUSTER_DIR, 'etcd-data'), { recursive: true, force: true });
  console.log('test cluster stopped');
}

// Run as a script (not imported by the demo): up or down.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const command = process.argv[2];
  if (command === 'up') await up();
  else if (command === 'down') await down();
  else {
    console.error('usage: cluster-cli.ts up|down');
    process.exitCode = 2;
  }
}
