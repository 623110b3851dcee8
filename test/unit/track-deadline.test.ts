/**
 * A track's `timeout` bounds a job against an API server that takes the
 * connection and never answers: each request's own idle timeout (60 s) would
 * hold the sync, rollback or drift check, and its lease, far longer. Loopback
 * servers of the test's own stand in for the fault (a TLS server that reads
 * requests and answers none, a TCP server that never finishes the handshake);
 * the cluster is reached through a kubeconfig like any other. The real fs
 * store and use-cases; a Git source and, to prepare a track's history, the
 * in-memory cluster fake.
 */
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it, mock } from 'node:test';
import { APPLY_CONCURRENCY } from '../../src/apply/apply-objects.ts';
import { connectCluster } from '../../src/cluster/connect-cluster.ts';
import { KubeApiCluster } from '../../src/cluster/kube-api-cluster.ts';
import { createKubeTransport, type KubeTransport } from '../../src/cluster/kube-http.ts';
import type { KubernetesPort } from '../../src/cluster/kubernetes-port.ts';
import { SharedWork } from '../../src/cluster/shared-work.ts';
import { parseConfig } from '../../src/config/index.ts';
import type { Config, Track } from '../../src/config/types.ts';
import type { GitSource } from '../../src/source/ports.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import { reconcileDrift } from '../../src/sync/reconcile-drift.ts';
import { rollbackTrack } from '../../src/sync/rollback.ts';
import { syncTrack } from '../../src/sync/sync-track.ts';
import { TrackDeadline, TrackTimeoutError } from '../../src/sync/track-cluster.ts';
import { conditionOf, readTrackState } from '../../src/sync/track-state.ts';
import { generateServingCertificate } from '../harness/certificates.ts';
import { InMemoryCluster } from './fakes/in-memory-cluster.ts';

const FIRST = '1'.repeat(40);
const SECOND = '2'.repeat(40);
const gaveUp = (job: string): string =>
  `track "web": the ${job} did not finish within the track's timeout (2000 ms)`;

const configMap = (name: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  value: "v"\n`;

/** A Git source whose head is `revision`, holding `names` as ConfigMaps. */
function gitAt(revision: string, names: readonly string[]): GitSource {
  return {
    resolve: async () => ({ revision, ref: 'refs/heads/main' }),
    readFiles: async () =>
      names.map((name) => ({
        path: `${name}.yaml`,
        content: new TextEncoder().encode(configMap(name)),
      })),
  };
}

/** What a hung server saw: requests (streams or connections) opened, and closed by the client. */
interface Hung {
  readonly port: number;
  readonly opened: () => number;
  readonly closed: () => number;
  stop(): void;
}

describe("a track's timeout against an API server that never answers", () => {
  let dir: string;
  let tls: { ca: string; cert: string; key: string };
  let store: FsStore;
  let servers: Hung[];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-deadline-'));
    const files = await generateServingCertificate(dir);
    tls = {
      ca: files.caCert,
      cert: await readFile(files.cert, 'utf8'),
      key: await readFile(files.key, 'utf8'),
    };
  });

  beforeEach(async () => {
    for (const server of servers ?? []) server.stop();
    servers = [];
    store = new FsStore({ path: await mkdtemp(join(dir, 'store-')) });
  });

  after(async () => {
    for (const server of servers ?? []) server.stop();
    await rm(dir, { recursive: true, force: true });
  });

  /** A TLS server offering HTTP/2 that reads every request and answers none. */
  async function silentApiServer(): Promise<Hung> {
    let opened = 0;
    let closed = 0;
    const server = http2.createSecureServer({ cert: tls.cert, key: tls.key }, (req) => {
      opened++;
      req.stream.once('close', () => closed++);
      req.resume();
    });
    const sessions = new Set<http2.ServerHttp2Session>();
    server.on('session', (session: http2.ServerHttp2Session) => {
      sessions.add(session);
      session.once('close', () => sessions.delete(session));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const hung = {
      port: (server.address() as AddressInfo).port,
      opened: () => opened,
      closed: () => closed,
      stop: () => {
        for (const session of sessions) session.destroy();
        server.close();
      },
    };
    servers.push(hung);
    return hung;
  }

  /** A TCP server that takes connections and sends nothing: the TLS handshake never ends. */
  async function silentSocket(): Promise<Hung> {
    let opened = 0;
    let closed = 0;
    const sockets = new Set<net.Socket>();
    const server = net.createServer((socket) => {
      opened++;
      sockets.add(socket);
      socket.once('close', () => {
        closed++;
        sockets.delete(socket);
      });
      socket.resume();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const hung = {
      port: (server.address() as AddressInfo).port,
      opened: () => opened,
      closed: () => closed,
      stop: () => {
        for (const socket of sockets) socket.destroy();
        server.close();
      },
    };
    servers.push(hung);
    return hung;
  }

  /** The config: one cluster, reached through a kubeconfig at `port`, and track `web` on it. */
  async function configFor(port: number, extra = ''): Promise<Config> {
    const kubeconfig = join(dir, `kubeconfig-${port}`);
    await writeFile(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        `clusters: [{name: hung, cluster: {server: "https://127.0.0.1:${port}", certificate-authority: ${tls.ca}}}]`,
        'users: [{name: admin, user: {token: not-a-secret}}]',
        'contexts: [{name: hung, context: {cluster: hung, user: admin}}]',
        'current-context: hung',
        '',
      ].join('\n'),
    );
    return parseConfig(
      [
        `clusters: [{name: hung, kubeconfig: ${kubeconfig}}]`,
        `tracks: [{name: web, repository: https://git.example.com/web.git, namespace: apps, timeout: 2s${extra}}]`,
      ].join('\n'),
      'driftless.yaml',
    );
  }

  async function clusterOf(config: Config): Promise<KubernetesPort> {
    return connectCluster(config.clusters[0]!);
  }

  /** Syncs `track` to `revision` against `cluster`, timed. */
  async function timedSync(
    track: Track,
    cluster: KubernetesPort,
    revision: string,
    names: readonly string[],
  ) {
    const started = performance.now();
    const result = await syncTrack(
      track,
      { trigger: 'manual' },
      { cluster, source: gitAt(revision, names), artifacts: store, state: store },
    );
    return { result, seconds: (performance.now() - started) / 1000 };
  }

  /**
   * At the track's 2 s, not at the 60 s request timeout; the upper bound leaves room for a
   * loaded machine (CI), not a measure of speed.
   */
  function assertAboutTwoSeconds(seconds: number): void {
    assert.ok(seconds >= 1.9 && seconds < 15, `took ${seconds} s`);
  }

  it(
    'fails a sync at the timeout, saying so, records it and gives the lease back',
    { timeout: 20_000 },
    async () => {
      // Prepare
      const server = await silentApiServer();
      const config = await configFor(server.port);
      const track = config.tracks[0]!;

      // Act
      const { result, seconds } = await timedSync(track, await clusterOf(config), FIRST, [
        'a',
        'b',
      ]);
      const state = await readTrackState(store, track.name);
      const history = await store.listHistory(track.name);

      // Assess
      assertAboutTwoSeconds(seconds);
      assert.equal(result.result, 'failed');
      // Discovery, the first request, got no answer: nothing was sent after it.
      assert.equal(result.error, gaveUp('sync'));
      assert.equal(state.applyLease, null);
      assert.equal(state.appliedRevision, null);
      const ready = conditionOf(state, 'Ready');
      assert.equal(ready?.status, 'False');
      assert.equal(ready?.reason, 'SyncFailed');
      assert.equal(ready?.message, result.error);
      assert.deepEqual(
        history.map((entry) => [entry.result, entry.error]),
        [['failed', result.error]],
      );
      // The request left waiting was cancelled on its connection, not left to the idle timeout.
      assert.ok(server.opened() > 0);
      await waitFor(() => server.closed() === server.opened(), 'the server to see its streams end');
    },
  );

  it(
    'fails a sync at the timeout when the TLS handshake never ends',
    { timeout: 20_000 },
    async () => {
      // Prepare
      const server = await silentSocket();
      const config = await configFor(server.port);
      const track = config.tracks[0]!;

      // Act
      const { result, seconds } = await timedSync(track, await clusterOf(config), FIRST, ['a']);
      const state = await readTrackState(store, track.name);

      // Assess
      assertAboutTwoSeconds(seconds);
      assert.equal(result.result, 'failed');
      // Discovery, the first request, got no answer: nothing was sent after it.
      assert.equal(result.error, gaveUp('sync'));
      assert.equal(state.applyLease, null);
      assert.equal(conditionOf(state, 'Ready')?.message, result.error);
      assert.deepEqual(
        (await store.listHistory(track.name)).map((entry) => entry.result),
        ['failed'],
      );
      // The connection nobody waits for any more is closed, not left to the idle timeout.
      assert.ok(server.opened() > 0);
      await waitFor(() => server.closed() === server.opened(), 'the server to see it closed');
    },
  );

  it(
    'keeps what was applied, fails the rollback at the timeout and frees the track',
    { timeout: 20_000 },
    async () => {
      // Prepare: two revisions applied where the cluster answered; now it hangs.
      const server = await silentApiServer();
      const config = await configFor(server.port);
      const track = config.tracks[0]!;
      const answering = new InMemoryCluster();
      await timedSync(track, answering, FIRST, ['a']);
      await timedSync(track, answering, SECOND, ['a', 'b']);

      // Act
      const started = performance.now();
      const result = await rollbackTrack(
        track,
        { type: 'rollback', track: track.name, revision: FIRST },
        { cluster: await clusterOf(config), artifacts: store, state: store },
      );
      const seconds = (performance.now() - started) / 1000;
      const state = await readTrackState(store, track.name);

      // Assess: nothing pruned nor undone; the track still holds what it applied.
      assertAboutTwoSeconds(seconds);
      assert.equal(result.result, 'failed');
      assert.match(result.error ?? '', new RegExp(`^${escape(gaveUp('rollback'))}`));
      assert.equal(state.applyLease, null);
      assert.equal(state.appliedRevision, SECOND);
      assert.deepEqual(
        state.inventory.map((entry) => entry.subject),
        ['ConfigMap/apps/a', 'ConfigMap/apps/b'],
      );
      assert.deepEqual(
        (await store.listHistory(track.name)).map((entry) => [entry.result, entry.trigger]),
        [
          ['failed', 'rollback'],
          ['applied', 'manual'],
          ['applied', 'manual'],
        ],
      );
    },
  );

  it(
    'fails a drift check at the timeout, naming the track, and frees the track',
    { timeout: 20_000 },
    async () => {
      // Prepare
      const server = await silentApiServer();
      const config = await configFor(server.port);
      const track = config.tracks[0]!;
      await timedSync(track, new InMemoryCluster(), FIRST, ['a', 'b']);

      // Act
      const started = performance.now();
      const check = reconcileDrift(
        track,
        { type: 'drift', track: track.name, trigger: 'manual' },
        { cluster: await clusterOf(config), artifacts: store, state: store },
      );
      await assert.rejects(check, (error: unknown) => {
        assert.ok(error instanceof TrackTimeoutError, String(error));
        assert.equal(error.message, gaveUp('drift check'));
        assert.equal(error.code, 'TRACK_TIMEOUT');
        return true;
      });
      const seconds = (performance.now() - started) / 1000;
      const state = await readTrackState(store, track.name);

      // Assess
      assertAboutTwoSeconds(seconds);
      assert.equal(state.applyLease, null);
      assert.equal(state.appliedRevision, FIRST);
    },
  );

  it(
    'ends a health wait at the timeout as a failure naming what is not healthy',
    { timeout: 20_000 },
    async () => {
      // Prepare: the cluster answers; its Deployment never becomes available.
      const config = parseConfig(
        'tracks: [{name: web, repository: https://git.example.com/web.git, namespace: apps, wait: true, timeout: 2s}]',
        'driftless.yaml',
      );
      const track = config.tracks[0]!;
      const cluster = new InMemoryCluster();
      const source: GitSource = {
        resolve: async () => ({ revision: FIRST, ref: 'refs/heads/main' }),
        readFiles: async () => [
          {
            path: 'web.yaml',
            content: new TextEncoder().encode(
              'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 1}\n',
            ),
          },
        ],
      };
      // Applying takes a second, so the health wait's own 2 s would end past the track's.
      const slow: KubernetesPort = {
        discover: () => cluster.discover(),
        serverVersion: () => cluster.serverVersion(),
        get: (ref) => cluster.get(ref),
        list: (query) => cluster.list(query),
        delete: (ref) => cluster.delete(ref),
        apply: async (object, options) => {
          await new Promise((resolve) => setTimeout(resolve, 1_000));
          return cluster.apply(object, options);
        },
      };

      // Act
      const started = performance.now();
      const result = await syncTrack(
        track,
        { trigger: 'manual' },
        { cluster: slow, source, artifacts: store, state: store },
      );
      const seconds = (performance.now() - started) / 1000;
      const state = await readTrackState(store, track.name);

      // Assess: applied, then judged by the cluster's answers until the track's time was up.
      // Without the shared deadline the wait would end 2 s after the applies: at 3 s at least.
      assert.ok(seconds >= 1.4 && seconds < 2.9, `took ${seconds} s`);
      assert.deepEqual(result.changeset, [{ subject: 'Deployment/apps/web', action: 'created' }]);
      assert.equal(result.result, 'failed');
      assert.equal(
        result.error,
        'not healthy within 2000 ms: Deployment/apps/web: 0 of 1 replicas updated',
      );
      assert.equal(conditionOf(state, 'Healthy')?.reason, 'HealthCheckFailed');
      assert.equal(conditionOf(state, 'Ready')?.reason, 'SyncFailed');
      assert.equal(state.appliedRevision, FIRST);
      assert.equal(state.applyLease, null);
    },
  );
});

describe('TrackDeadline', () => {
  it('lets every request in flight wait on it without Node warning of a listener leak', async () => {
    // Prepare: more requests at once than an apply sends (APPLY_CONCURRENCY)
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
    process.on('warning', onWarning);
    const deadline = new TrackDeadline({ name: 'web', timeout: 60_000 }, 'sync', undefined);
    try {
      const cluster = deadline.bound(new InMemoryCluster());

      // Act
      await Promise.all(
        Array.from({ length: APPLY_CONCURRENCY + 10 }, (_, i) =>
          cluster.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'apps', name: `c${i}` }),
        ),
      );
      await new Promise((resolve) => setImmediate(resolve));

      // Assess: Node writes such warnings on the user's terminal
      assert.deepEqual(warnings, []);
    } finally {
      deadline.dispose();
      process.off('warning', onWarning);
    }
  });

  /** Node's longest timer, 2^31 - 1 ms: a longer one fires after 1 ms. */
  const LONGEST_TIMER_MS = 2 ** 31 - 1;
  const SIX_HUNDRED_HOURS_MS = 600 * 3_600_000;

  it('keeps a job running under a timeout longer than the longest timer, and warns of nothing', async () => {
    // Prepare: `600h`, which the config accepts
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
    process.on('warning', onWarning);
    const deadline = new TrackDeadline(
      { name: 'web', timeout: SIX_HUNDRED_HOURS_MS },
      'sync',
      undefined,
    );
    try {
      const cluster = deadline.bound(new InMemoryCluster());

      // Act: past the 1 ms Node shortens an overflowing timer to
      await new Promise((resolve) => setTimeout(resolve, 50));
      const read = await cluster.get({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        namespace: 'apps',
        name: 'a',
      });

      // Assess
      assert.equal(read, undefined);
      assert.equal(deadline.passed, false);
      assert.equal(deadline.signal.aborted, false);
      assert.deepEqual(warnings, []);
    } finally {
      deadline.dispose();
      process.off('warning', onWarning);
    }
  });

  it('ends a job at a timeout longer than the longest timer, not before', () => {
    // Prepare
    mock.timers.enable({ apis: ['setTimeout'] });
    const deadline = new TrackDeadline(
      { name: 'web', timeout: SIX_HUNDRED_HOURS_MS },
      'sync',
      undefined,
    );
    try {
      // Act and assess: through the first longest timer, to a millisecond short of 600 h
      mock.timers.tick(LONGEST_TIMER_MS);
      assert.equal(deadline.passed, false);
      mock.timers.tick(SIX_HUNDRED_HOURS_MS - LONGEST_TIMER_MS - 1);
      assert.equal(deadline.passed, false);
      mock.timers.tick(1);
      assert.equal(deadline.passed, true);
      assert.equal(deadline.signal.aborted, true);
      assert.equal(
        deadline.error.message,
        `track "web": the sync did not finish within the track's timeout (${SIX_HUNDRED_HOURS_MS} ms)`,
      );
    } finally {
      deadline.dispose();
      mock.timers.reset();
    }
  });

  it('reads discovery from a server without aggregated discovery without Node warning of a listener leak', async () => {
    // Prepare: an API server answering the legacy lists, one request per group version (16)
    const dir = await mkdtemp(join(tmpdir(), 'driftless-legacy-'));
    const files = await generateServingCertificate(dir);
    const groups = Array.from({ length: 15 }, (_, i) => `g${i}.example.com`);
    const answers = new Map<string, unknown>([
      ['/api', { kind: 'APIVersions', versions: ['v1'] }],
      [
        '/apis',
        {
          kind: 'APIGroupList',
          groups: groups.map((name) => ({ name, versions: [{ version: 'v1' }] })),
        },
      ],
      ['/api/v1', { resources: [{ name: 'configmaps', kind: 'ConfigMap', namespaced: true }] }],
      ...groups.map((name, i): [string, unknown] => [
        `/apis/${name}/v1`,
        { resources: [{ name: `widgets${i}`, kind: `Widget${i}`, namespaced: true }] },
      ]),
    ]);
    let requests = 0;
    const server = http2.createSecureServer(
      { cert: await readFile(files.cert, 'utf8'), key: await readFile(files.key, 'utf8') },
      (req, res) => {
        requests++;
        const body = answers.get(req.url);
        res.writeHead(body === undefined ? 404 : 200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body ?? { kind: 'Status', code: 404 }));
      },
    );
    const sessions = new Set<http2.ServerHttp2Session>();
    server.on('session', (session: http2.ServerHttp2Session) => sessions.add(session));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const kubeconfig = join(dir, 'kubeconfig');
    await writeFile(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        `clusters: [{name: legacy, cluster: {server: "https://127.0.0.1:${(server.address() as AddressInfo).port}", certificate-authority: ${files.caCert}}}]`,
        'users: [{name: admin, user: {token: not-a-secret}}]',
        'contexts: [{name: legacy, context: {cluster: legacy, user: admin}}]',
        'current-context: legacy',
        '',
      ].join('\n'),
    );
    const config = parseConfig(
      `clusters: [{name: legacy, kubeconfig: ${kubeconfig}}]\ntracks: [{name: web, repository: https://git.example.com/web.git, namespace: apps}]`,
      'driftless.yaml',
    );
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
    process.on('warning', onWarning);
    const deadline = new TrackDeadline({ name: 'web', timeout: 60_000 }, 'sync', undefined);
    try {
      // Act
      const catalog = await deadline.bound(await connectCluster(config.clusters[0]!)).discover();
      await new Promise((resolve) => setImmediate(resolve));

      // Assess: every group version was read, and Node wrote nothing on the user's terminal
      assert.equal(requests, 2 + 1 + groups.length);
      assert.equal(catalog.find('g14.example.com', 'v1', 'Widget14')?.plural, 'widgets14');
      assert.deepEqual(warnings, []);
    } finally {
      deadline.dispose();
      process.off('warning', onWarning);
      for (const session of sessions) session.destroy();
      server.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('SharedWork', () => {
  /** Work that runs until `finish` is called or its cancel signal aborts. */
  function pending(): {
    work: (cancel: AbortSignal) => Promise<string>;
    finish: (value: string) => void;
    cancelled: () => AbortSignal | undefined;
  } {
    let finish: (value: string) => void = () => undefined;
    let signal: AbortSignal | undefined;
    return {
      work: (cancel) => {
        signal = cancel;
        return new Promise<string>((resolve, reject) => {
          finish = resolve;
          cancel.addEventListener('abort', () => reject(cancel.reason as Error), { once: true });
        });
      },
      finish: (value) => finish(value),
      cancelled: () => (signal?.aborted ? signal : undefined),
    };
  }

  it('keeps running for the other waiter when one gives up', async () => {
    // Prepare
    const running = pending();
    const shared = new SharedWork(running.work);
    const first = new AbortController();
    const second = new AbortController();
    const firstWait = shared.wait(first.signal);
    const secondWait = shared.wait(second.signal);

    // Act
    first.abort(new Error('the first gave up'));
    await assert.rejects(firstWait, /the first gave up/);
    const cancelledThen = running.cancelled();
    running.finish('catalog');

    // Assess
    assert.equal(cancelledThen, undefined);
    assert.equal(await secondWait, 'catalog');
  });

  it('is cancelled, with the reason of the last waiter, once every waiter gave up', async () => {
    // Prepare
    const running = pending();
    const shared = new SharedWork(running.work);
    const first = new AbortController();
    const second = new AbortController();
    const firstWait = shared.wait(first.signal);
    const secondWait = shared.wait(second.signal);

    // Act
    first.abort(new Error('the first gave up'));
    await assert.rejects(firstWait, /the first gave up/);
    second.abort(new Error('the second gave up'));

    // Assess
    assert.equal((running.cancelled()?.reason as Error | undefined)?.message, 'the second gave up');
    await assert.rejects(secondWait, /the second gave up/);
    await assert.rejects(shared.result, /the second gave up/);
  });

  it('answers once done without listening on the waiter’s signal', async () => {
    // Prepare: finished work (discovery, waited for once per object applied)
    const running = pending();
    const shared = new SharedWork(running.work);
    running.finish('catalog');
    await shared.result;
    const deadline = new AbortController();

    // Act: many waits with the track's one signal, none of them awaited yet
    const waits = Array.from({ length: 50 }, () => shared.wait(deadline.signal));
    const listening = getEventListeners(deadline.signal, 'abort').length;

    // Assess: no listener was added (each costs every later one a walk over the list)
    assert.equal(listening, 0);
    assert.deepEqual(new Set(await Promise.all(waits)), new Set(['catalog']));
  });

  it('is forgotten by whoever keeps it before it is cancelled, so no later caller joins it', async () => {
    // Prepare: a cluster port whose discovery waits until cancelled, and answers once told to
    let answering = false;
    const transport: KubeTransport = (request) =>
      answering
        ? Promise.resolve({ status: 200, body: { kind: 'APIGroupDiscoveryList', items: [] } })
        : new Promise((_, reject) => {
            const { signal } = request;
            signal?.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
          });
    const cluster = new KubeApiCluster(transport);
    const first = new AbortController();
    const second = new AbortController();
    const firstRead = cluster.withSignal(first.signal).discover();

    // Act: the only waiter gives up, and another track's job asks at once, in the same tick
    first.abort(new Error('track "one": the sync did not finish within the track\'s timeout'));
    answering = true;
    const secondRead = cluster.withSignal(second.signal).discover();

    // Assess: the second read is its own, not the cancelled one failing with the other's timeout
    await assert.rejects(firstRead, /track "one"/);
    assert.equal((await secondRead).size, 0);
  });

  it('is a connection being opened that no request joins once its last waiter gave up', async () => {
    // Prepare: a TCP server that never finishes the TLS handshake
    const sockets = new Set<net.Socket>();
    const server = net.createServer((socket) => {
      sockets.add(socket);
      socket.resume();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const transport = createKubeTransport({
      server: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
      insecureSkipTlsVerify: true,
      credentials: { current: async () => ({ headers: {} }), invalidate: () => undefined },
      label: 'context "hung"',
    });
    const first = new AbortController();
    const second = new AbortController();
    try {
      const firstRequest = transport({ method: 'GET', path: '/version', signal: first.signal });
      await waitFor(() => sockets.size === 1, 'the connection to be taken');

      // Act: the only request waiting gives up; another is sent at once
      first.abort(new Error('the first gave up'));
      const secondRequest = transport({ method: 'GET', path: '/version', signal: second.signal });
      await assert.rejects(firstRequest, /the first gave up/);
      setTimeout(() => second.abort(new Error('the second gave up')), 100);

      // Assess: the second waited on a connection of its own until its own deadline, rather than
      // failing with the cancelled one ('no request waits for the connection any more')
      await assert.rejects(secondRequest, /the second gave up/);
      assert.equal(sockets.size, 2);
    } finally {
      for (const socket of sockets) socket.destroy();
      server.close();
    }
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

async function waitFor(done: () => boolean, what: string): Promise<void> {
  for (let tries = 0; tries < 50; tries++) {
    if (done()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.fail(`timed out waiting for ${what}`);
}
