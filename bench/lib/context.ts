/**
 * What benchmarks share: the run options, one test cluster and one Git
 * server started on first use (so `bench lambda-bundles` starts neither),
 * a scratch directory, and fresh namespaces.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import type { ClusterEndpoint } from '../../src/cluster/cluster-endpoint.ts';
import { endpointFromFile } from '../../src/cluster/connect-cluster.ts';
import { KubeApiCluster } from '../../src/cluster/kube-api-cluster.ts';
import type { KubeObject } from '../../src/cluster/kube-object.ts';
import { startTestCluster, type TestCluster } from '../../test/harness/cluster.ts';
import { startGitServer, type GitServer } from '../../test/harness/git-server.ts';

export interface BenchOptions {
  /** Measured runs per benchmark (after one unmeasured warm-up). */
  readonly runs: number;
  /** Smoke run: fewer runs and objects; figures are not comparable with a full run. */
  readonly quick: boolean;
}

export class BenchContext {
  private cluster: Promise<TestCluster> | undefined;
  private gitServer: Promise<GitServer> | undefined;
  private setupPort: Promise<KubeApiCluster> | undefined;
  private namespaceCount = 0;

  private constructor(
    readonly options: BenchOptions,
    /** Scratch space for manifests, clones, caches and bundles; removed by {@link close}. */
    readonly dir: string,
  ) {}

  static async create(options: BenchOptions): Promise<BenchContext> {
    return new BenchContext(options, await mkdtemp(join(tmpdir(), 'driftless-bench-')));
  }

  get runs(): number {
    return this.options.runs;
  }

  /** `full` objects, or a fifth of them in a quick run. */
  count(full: number): number {
    return this.options.quick ? Math.max(10, Math.round(full / 5)) : full;
  }

  /** A fresh directory under the scratch space. */
  async scratch(name: string): Promise<string> {
    const path = join(this.dir, name);
    await rm(path, { recursive: true, force: true });
    await mkdir(path, { recursive: true });
    return path;
  }

  testCluster(): Promise<TestCluster> {
    if (!this.cluster) {
      process.stderr.write(
        '# starting the test cluster (etcd, kube-apiserver, controller-manager)\n',
      );
      this.cluster = startTestCluster();
    }
    return this.cluster;
  }

  /** The test cluster as driftless reaches it. */
  async endpoint(): Promise<ClusterEndpoint> {
    return endpointFromFile((await this.testCluster()).kubeconfigPath);
  }

  /** client-node's view of the test cluster, for baselines that must not share driftless' code. */
  async kubeConfig(): Promise<KubeConfig> {
    const kc = new KubeConfig();
    kc.loadFromFile((await this.testCluster()).kubeconfigPath);
    return kc;
  }

  /** The kubeconfig path and kubectl binary, for the kubectl peer. */
  async kubectl(): Promise<{ kubectl: string; kubeconfig: string }> {
    const cluster = await this.testCluster();
    return { kubectl: cluster.binaries.kubectl, kubeconfig: cluster.kubeconfigPath };
  }

  /** A cluster connection for set-up work that is not measured. */
  port(): Promise<KubeApiCluster> {
    this.setupPort ??= this.endpoint().then((endpoint) => KubeApiCluster.forEndpoint(endpoint));
    return this.setupPort;
  }

  /**
   * Creates a namespace with a unique name. Namespaces are never deleted:
   * deleting thousands of objects would load the API server during the next
   * measurement, and the whole cluster goes away at the end.
   */
  async namespace(prefix: string): Promise<string> {
    const name = `${prefix}-${process.pid}-${++this.namespaceCount}`;
    const namespace: KubeObject = { apiVersion: 'v1', kind: 'Namespace', metadata: { name } };
    await (await this.port()).apply(namespace, { fieldManager: 'bench', force: true });
    return name;
  }

  git(): Promise<GitServer> {
    this.gitServer ??= startGitServer();
    return this.gitServer;
  }

  async close(): Promise<void> {
    const results = await Promise.allSettled([
      this.gitServer?.then((git) => git.stop()),
      this.cluster?.then((cluster) => cluster.stop()),
    ]);
    await rm(this.dir, { recursive: true, force: true });
    for (const result of results) if (result.status === 'rejected') throw result.reason;
  }
}
