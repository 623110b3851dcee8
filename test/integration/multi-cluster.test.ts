/**
 * Two clusters in one config, for real: the shared test cluster and a second
 * one this file starts (its own etcd, kube-apiserver and
 * kube-controller-manager). The `driftless` command syncs every track; each
 * track's objects land in its own cluster only, and status and delete work
 * per cluster.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { startTestCluster, type TestCluster } from '../harness/cluster.ts';
import { runDriftless } from '../harness/driftless-cli.ts';
import { runGit } from '../harness/git-server.ts';
import { sharedKubeconfigPath } from '../harness/shared-cluster.ts';

function coreOf(kubeconfigPath: string): CoreV1Api {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  return kc.makeApiClient(CoreV1Api);
}

async function configMapValue(core: CoreV1Api, namespace: string, name: string) {
  try {
    return (await core.readNamespacedConfigMap({ name, namespace })).data?.value;
  } catch {
    return undefined;
  }
}

/** A local Git repository holding a namespace and a ConfigMap in it. */
async function repository(dir: string, namespace: string, value: string): Promise<string> {
  await mkdir(join(dir, 'deploy'), { recursive: true });
  await writeFile(
    join(dir, 'deploy', 'all.yaml'),
    [
      `apiVersion: v1\nkind: Namespace\nmetadata: {name: ${namespace}}`,
      `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: ${namespace}}\ndata: {value: ${value}}`,
    ].join('\n---\n'),
  );
  await runGit(['init', '--quiet', '--initial-branch=main', dir]);
  await runGit(['-C', dir, 'add', '.']);
  await runGit([
    '-C',
    dir,
    '-c',
    'user.name=t',
    '-c',
    'user.email=t@example.com',
    'commit',
    '--quiet',
    '-m',
    'manifests',
  ]);
  return dir;
}

describe('two clusters in one config', () => {
  let second: TestCluster;
  let work: string;
  const suffix = Date.now().toString(36);
  const nsA = `mc-a-${suffix}`;
  const nsB = `mc-b-${suffix}`;

  before(async () => {
    second = await startTestCluster();
    work = await mkdtemp(join(tmpdir(), 'driftless-multi-cluster-'));
    const repoA = await repository(join(work, 'repo-a'), nsA, 'first');
    const repoB = await repository(join(work, 'repo-b'), nsB, 'second');
    await writeFile(
      join(work, 'driftless.yaml'),
      [
        'store: {type: fs, path: ./store}',
        'clusters:',
        `  - {name: first, kubeconfig: ${sharedKubeconfigPath()}}`,
        `  - {name: second, kubeconfig: ${second.kubeconfigPath}}`,
        'tracks:',
        `  - {name: on-first, cluster: first, repository: ${repoA}, subPath: deploy}`,
        `  - {name: on-second, cluster: second, repository: ${repoB}, subPath: deploy}`,
        '',
      ].join('\n'),
    );
  });

  after(async () => {
    await coreOf(sharedKubeconfigPath())
      .deleteNamespace({ name: nsA })
      .catch(() => undefined);
    await second?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('applies each track to its own cluster only, and deletes per cluster', async () => {
    // Act
    const sync = await runDriftless(['sync', '-o', 'json'], { cwd: work, env: process.env });

    // Assess
    assert.equal(sync.code, 0, sync.stderr);
    const results = JSON.parse(sync.stdout) as { track: string; result: string }[];
    assert.deepEqual(
      results.map((r) => [r.track, r.result]),
      [
        ['on-first', 'applied'],
        ['on-second', 'applied'],
      ],
    );
    const first = coreOf(sharedKubeconfigPath());
    const other = coreOf(second.kubeconfigPath);
    assert.equal(await configMapValue(first, nsA, 'settings'), 'first');
    assert.equal(await configMapValue(other, nsB, 'settings'), 'second');
    assert.equal(await configMapValue(first, nsB, 'settings'), undefined);
    assert.equal(await configMapValue(other, nsA, 'settings'), undefined);

    // Delete on the second cluster collects there and nowhere else.
    const deleted = await runDriftless(['delete', '--track', 'on-second', '-o', 'json'], {
      cwd: work,
      env: process.env,
    });
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.equal(await configMapValue(other, nsB, 'settings'), undefined);
    assert.equal(await configMapValue(first, nsA, 'settings'), 'first');
  });
});
