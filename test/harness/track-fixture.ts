/**
 * Real parts for tests of the sync use-cases: the test Git server (basic
 * auth), the shared test cluster, a filesystem store and the real Git source,
 * plus tracks that each get a repository and a namespace of their own.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { parseConfig } from '../../src/config/index.ts';
import type { SecretRef } from '../../src/config/secret-ref.ts';
import type { Track } from '../../src/config/types.ts';
import { createTrackSource } from '../../src/source/track-source.ts';
import type { GitSource } from '../../src/source/ports.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import type { Job } from '../../src/sync/jobs.ts';
import type { JobDeps } from '../../src/sync/run-job.ts';
import type { SyncDeps } from '../../src/sync/sync-track.ts';
import { startGitServer, type GitRepository, type GitServer } from './git-server.ts';
import { sharedCluster, sharedKubeConfig } from './shared-cluster.ts';

/** The secret reference every fixture track's `auth` names; the fixture answers it. */
export const GIT_CREDENTIALS_REF = 'env:TEST_GIT_CREDENTIALS';

export class TrackFixture {
  kc!: KubeConfig;
  core!: CoreV1Api;
  git!: GitServer;
  deps!: SyncDeps;
  private workDir = '';
  private readonly namespaces: string[] = [];

  /** `prefix` names the temp dir and the namespaces, so leftovers tell whose they are. */
  constructor(private readonly prefix: string) {}

  /** Starts the Git server and opens the store; `wrapSource` may observe the Git source. */
  async start(wrapSource: (source: GitSource) => GitSource = (source) => source): Promise<void> {
    this.kc = sharedKubeConfig();
    this.core = this.kc.makeApiClient(CoreV1Api);
    this.git = await startGitServer();
    this.workDir = await mkdtemp(join(tmpdir(), `driftless-${this.prefix}-`));
    const store = new FsStore({ path: join(this.workDir, 'store') });
    const credentials = `${this.git.username}:${this.git.password}`;
    const readSecret = async (ref: SecretRef): Promise<string> => {
      // The source must ask for exactly the reference the track names.
      if (ref.scheme !== 'env' || ref.name !== 'TEST_GIT_CREDENTIALS') {
        throw new Error(`unexpected secret reference ${JSON.stringify(ref)}`);
      }
      return credentials;
    };
    const source = createTrackSource({ cacheDir: join(this.workDir, 'git'), readSecret });
    this.deps = {
      cluster: sharedCluster(),
      source: wrapSource(source),
      artifacts: store,
      state: store,
    };
  }

  /**
   * Job deps over the fixture for `tracks`: every job runs in this process and
   * the jobs a job queues are kept in `queued`, to be run by hand. `source` may
   * stand in for the fixture's.
   */
  jobDeps(tracks: readonly Track[], source?: GitSource): JobDeps & { queued: Job[] } {
    const queued: Job[] = [];
    const { cluster, artifacts, state } = this.deps;
    const gitSource = source ?? this.deps.source;
    return {
      tracks,
      artifacts,
      state,
      queue: { enqueue: async (job) => void queued.push(job) },
      source: async () => gitSource,
      cluster: async () => cluster,
      queued,
    };
  }

  /** Where the fixture's file store keeps artifacts, state and history: tests may search it. */
  get storeDir(): string {
    return join(this.workDir, 'store');
  }

  async stop(): Promise<void> {
    for (const ns of this.namespaces) {
      await this.core.deleteNamespace({ name: ns }).catch(() => undefined);
    }
    await this.git.stop();
    await rm(this.workDir, { recursive: true, force: true });
  }

  /**
   * A track over a new repository and namespace, from driftless.yaml text like
   * a user's; `extra` adds track fields, one per line (`prune: false`).
   */
  async newTrack(
    name: string,
    extra = '',
  ): Promise<{ track: Track; repo: GitRepository; ns: string }> {
    const repo = await this.git.createRepository(name);
    const ns = `${this.prefix}-${name}-${Date.now().toString(36)}`;
    this.namespaces.push(ns);
    await this.core.createNamespace({ body: { metadata: { name: ns } } });
    const config = parseConfig(
      [
        'tracks:',
        `  - name: ${name}`,
        `    repository: ${repo.url}`,
        `    namespace: ${ns}`,
        `    auth: {type: basic, secret: ${GIT_CREDENTIALS_REF}}`,
        ...extra
          .split('\n')
          .filter(Boolean)
          .map((line) => `    ${line}`),
      ].join('\n'),
      'driftless.yaml',
    );
    return { track: config.tracks[0]!, repo, ns };
  }

  /** A ConfigMap's `value`, or undefined when it does not exist. */
  async configMapValue(ns: string, name: string): Promise<string | undefined> {
    try {
      return (await this.core.readNamespacedConfigMap({ name, namespace: ns })).data?.value;
    } catch {
      return undefined;
    }
  }
}
