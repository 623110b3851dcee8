/**
 * `npm test`: starts the real test cluster once, then runs every test file
 * (or those named on the command line) with node's test runner, each file in
 * its own process, and stops the cluster whatever happens.
 *
 * USE_EXISTING_CLUSTER=true (envtest's variable) uses the cluster of KUBECONFIG,
 * or the one `npm run cluster:up` started, instead of starting one.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { startTestCluster, type TestCluster } from './harness/cluster.ts';
import { TEST_KUBECONFIG_VARIABLE } from './harness/shared-cluster.ts';
import { REPO_ROOT } from './harness/testbin.ts';

const SUITES = ['test/unit', 'test/integration', 'test/e2e'];

function testFiles(args: readonly string[]): string[] {
  if (args.length > 0) return [...args];
  return SUITES.flatMap((suite) => {
    const dir = join(REPO_ROOT, suite);
    if (!existsSync(dir)) return [];
    return readdirSync(dir)
      .filter((name) => name.endsWith('.test.ts'))
      .sort()
      .map((name) => relative(process.cwd(), join(dir, name)));
  });
}

function needsCluster(files: readonly string[]): boolean {
  return files.some((file) => !file.includes('test/unit/'));
}

async function clusterKubeconfig(): Promise<{ path: string; cluster?: TestCluster }> {
  if (process.env.USE_EXISTING_CLUSTER === 'true') {
    const path = process.env.KUBECONFIG ?? join(REPO_ROOT, '.driftless/testcluster/kubeconfig');
    if (!existsSync(path))
      throw new Error(`USE_EXISTING_CLUSTER=true but there is no kubeconfig at ${path}`);
    console.error(`# using the existing cluster of ${path}`);
    return { path };
  }
  const started = Date.now();
  const cluster = await startTestCluster();
  console.error(`# test cluster ${cluster.server} started in ${Date.now() - started} ms`);
  return { path: cluster.kubeconfigPath, cluster };
}

/**
 * node's own reporter (spec on a terminal, TAP otherwise, as node picks), then the failure
 * summary, so the last lines of a long log name the tests that failed.
 */
const REPORTERS = [
  `--test-reporter=${process.stdout.isTTY ? 'spec' : 'tap'}`,
  '--test-reporter-destination=stdout',
  `--test-reporter=${join(REPO_ROOT, 'test/harness/failure-summary-reporter.mjs')}`,
  '--test-reporter-destination=stdout',
];

function runNodeTests(files: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve) => {
    const args = ['--import', 'tsx', '--test', ...REPORTERS, ...files];
    const child = spawn(process.execPath, args, {
      stdio: 'inherit',
      env,
    });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

const files = testFiles(process.argv.slice(2));
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
let cluster: TestCluster | undefined;
const stopCluster = async (): Promise<void> => {
  const c = cluster;
  cluster = undefined;
  await c?.stop();
};
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => void stopCluster().finally(() => process.exit(130)));
}
try {
  const env = { ...process.env };
  if (needsCluster(files)) {
    const kube = await clusterKubeconfig();
    cluster = kube.cluster;
    env[TEST_KUBECONFIG_VARIABLE] = kube.path;
  }
  process.exitCode = await runNodeTests(files, env);
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
} finally {
  await stopCluster();
}
