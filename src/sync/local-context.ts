/**
 * The composition root of one local process (the CLI, `driftless serve`): loads driftless.yaml, opens the store, and
 * builds the Git source and cluster connections on first use, so commands
 * that only read state (status, history) never load Git or read cluster
 * credentials.
 */
import { setMaxListeners } from 'node:events';
import type { KubernetesPort } from '../cluster/kubernetes-port.ts';
import { connectCluster } from '../cluster/connect-cluster.ts';
import { deferredCluster } from '../cluster/deferred-cluster.ts';
import type { Environment } from '../config/env.ts';
import { loadConfig } from '../config/index.ts';
import type { Cluster, Config, StoreConfig, Track } from '../config/types.ts';
import type { SecretRef } from '../config/secret-ref.ts';
import type { GitSource } from '../source/ports.ts';
import { createStore } from '../store/create-store.ts';
import type {
  ArtifactStore,
  DeliveryLog,
  PublishedTrackStore,
  StoreConfig as StorePortConfig,
  StateStore,
} from '../store/ports.ts';
import { knownTracks } from './published-tracks.ts';
import { clusterOf } from './track-named.ts';
import { checkHealthExprs } from '../apply/health-exprs.ts';
import { expandHome } from '../config/expand-home.ts';
import { gitCacheDir } from '../config/git-cache-dir.ts';
import { readSecret } from '../config/read-secret.ts';

/** What a command works with. Tests build one from fakes. */
export interface LocalContext {
  readonly config: Config;
  readonly artifacts: ArtifactStore;
  readonly state: StateStore;
  /** Track lists published by `tracksFrom` discoveries; contexts built for tests may omit it. */
  readonly published?: PublishedTrackStore;
  /** Webhook deliveries already handled (`serve`); contexts built for other commands may omit it. */
  readonly deliveries?: DeliveryLog;
  /** Resolves a secret reference with the CLI's environment (`serve`'s webhook secrets). */
  readonly readSecret?: (ref: SecretRef) => Promise<string>;
  /** The Git source, built on first use. */
  source(): Promise<GitSource>;
  /** The cluster of `track`, connected on first use and shared by tracks on the same cluster. */
  cluster(track: Pick<Track, 'name' | 'cluster'>): Promise<KubernetesPort>;
  /** Releases what the context opened. */
  close(): void;
}

/** Builds the context for a config file; ConfigError when the file is invalid. */
export type OpenLocalContext = (configFile: string, env: Environment) => Promise<LocalContext>;

/**
 * The store port's config for driftless.yaml's `store:`. The config module
 * and the store describe the same thing in two shapes; this is the one place
 * that maps between them.
 */
export function storePortConfig(store: StoreConfig): StorePortConfig {
  if (store.type === 'fs') return { type: 'fs', path: store.path };
  return {
    type: 's3',
    bucket: store.bucket,
    prefix: store.prefix,
    ...(store.endpoint === undefined ? {} : { endpoint: store.endpoint }),
    ...(store.region === undefined ? {} : { region: store.region }),
  };
}

/** `cluster` with a `~/` kubeconfig path expanded, which the kubeconfig loader takes literally. */
function withExpandedPaths(cluster: Cluster, env: Environment): Cluster {
  const credentials = cluster.credentials;
  if (credentials.type !== 'kubeconfig' || credentials.path === undefined) return cluster;
  return { ...cluster, credentials: { ...credentials, path: expandHome(credentials.path, env) } };
}

/**
 * How long a discovery read started ahead of need (as a cluster is connected) waits for a caller
 * before it is cancelled. A healthy API server answers one in a second or two, and a caller that
 * comes later reads it again: a read still running by then, that nothing waits for, is one of a
 * server that does not answer, whose open connection would otherwise stay until the context is
 * closed (`serve`: until it stops) or the request's own idle timeout. Once a caller waits for it,
 * the callers decide (cluster/shared-work.ts).
 */
export const PREFETCH_UNCLAIMED_MS = 10_000;

/** Aborted once `closing` is or `ms` have passed; its timer keeps no process up. */
function closingOrAfter(closing: AbortSignal, ms: number): AbortSignal {
  const until = new AbortController();
  if (closing.aborted) until.abort(closing.reason);
  closing.addEventListener('abort', () => until.abort(closing.reason), { once: true });
  setTimeout(() => until.abort(new Error(`nothing waited for it within ${ms} ms`)), ms).unref();
  return until.signal;
}

/** Opens the context of the real CLI: the configured store, Git over isomorphic-git, kubeconfig clusters. */
export const openLocalContext: OpenLocalContext = async (configFile, env) => {
  const config = await loadConfig(configFile);
  await checkHealthExprs(config, configFile);
  const store = createStore(storePortConfig(config.store));
  const secrets = (ref: Parameters<typeof readSecret>[0]): Promise<string> => readSecret(ref, env);
  let source: Promise<GitSource> | undefined;
  const clusters = new Map<string, Promise<KubernetesPort>>();
  // Ends what was started ahead of need and never needed (discovery, before a Git fetch that
  // failed): an open handshake would keep the process up until its idle timeout. One listener a
  // cluster: past 10 Node would warn of a leak that is none.
  const closing = new AbortController();
  setMaxListeners(0, closing.signal);
  return {
    // With the tracks published by `tracksFrom` discoveries, which every command can name.
    config: { ...config, tracks: await knownTracks(config, store.published) },
    published: store.published,
    artifacts: store.artifacts,
    state: store.state,
    deliveries: store.deliveries,
    readSecret: secrets,
    source() {
      // Imported here: isomorphic-git is only loaded by commands that fetch.
      source ??= import('../source/track-source.ts').then(({ createTrackSource }) =>
        createTrackSource({ cacheDir: gitCacheDir(config.store, env), readSecret: secrets }),
      );
      return source;
    },
    async cluster(track) {
      let connection = clusters.get(track.cluster);
      if (!connection) {
        const cluster = clusterOf(config.clusters, track);
        connection = connectCluster(withExpandedPaths(cluster, env), { readSecret: secrets, env });
        // Every command that connects reads discovery: start it now, so its requests
        // (and the connection's TLS handshake) overlap the Git and store work. A failure
        // is not kept (discover() reads again) and reaches the caller that needs it. Not
        // waited for here: a caller that gives up at its deadline must be able to cancel it.
        // One nobody waits for is not kept for long (PREFETCH_UNCLAIMED_MS).
        void connection
          .then((port) =>
            port.prefetchDiscovery?.(closingOrAfter(closing.signal, PREFETCH_UNCLAIMED_MS)),
          )
          .catch(() => undefined);
        clusters.set(track.cluster, connection);
      }
      // A connection that fails, fails the track's first request, inside the use-case that
      // records it (deferred-cluster.ts), not the command.
      return deferredCluster(connection);
    },
    close() {
      closing.abort();
      store.close();
    },
  };
};
