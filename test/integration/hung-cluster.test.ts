/**
 * A sync against an API server that stops answering ends at the track's
 * `timeout`, not at each request's 60 s idle timeout: the real test cluster
 * behind a loopback TCP proxy that falls silent (the connection stays open,
 * nothing more comes back), the test Git server and the filesystem store.
 * What was applied before stays; the next sync, once the cluster answers
 * again, converges.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { KubeApiCluster } from '../../src/cluster/kube-api-cluster.ts';
import type { KubernetesPort } from '../../src/cluster/kubernetes-port.ts';
import { syncTrack } from '../../src/sync/sync-track.ts';
import { conditionOf, readTrackState } from '../../src/sync/track-state.ts';
import { startTcpFaultProxy, type TcpFaultProxy } from '../harness/fault-proxy.ts';
import { pushFiles } from '../harness/git-server.ts';
import { sharedClusterEndpoint } from '../harness/shared-cluster.ts';
import { TrackFixture } from '../harness/track-fixture.ts';

const configMap = (name: string, value: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  value: "${value}"\n`;

const gaveUp = (track: string): string =>
  `track "${track}": the sync did not finish within the track's timeout (3000 ms)`;

describe('a sync against an API server that falls silent', () => {
  const fixture = new TrackFixture('hung');
  const proxies: TcpFaultProxy[] = [];

  before(() => fixture.start());

  after(async () => {
    for (const proxy of proxies) await proxy.stop();
    await fixture.stop();
  });

  /** The test cluster reached through a new proxy that can fall silent. */
  async function proxiedCluster(): Promise<{ proxy: TcpFaultProxy; cluster: KubeApiCluster }> {
    const endpoint = sharedClusterEndpoint();
    const proxy = await startTcpFaultProxy(Number(new URL(endpoint.server).port));
    proxies.push(proxy);
    // The serving certificate names 127.0.0.1, the proxy's address too.
    const cluster = KubeApiCluster.forEndpoint({
      ...endpoint,
      server: `https://127.0.0.1:${proxy.port}`,
    });
    return { proxy, cluster };
  }

  /** `cluster`, falling silent (`proxy.blackhole()`) just before its first apply is sent. */
  function silentFromFirstApply(cluster: KubernetesPort, proxy: TcpFaultProxy): KubernetesPort {
    return {
      discover: (refresh) => cluster.discover(refresh),
      serverVersion: () => cluster.serverVersion(),
      get: (ref) => cluster.get(ref),
      list: (query) => cluster.list(query),
      delete: (ref, options) => cluster.delete(ref, options),
      apply: (object, options) => {
        proxy.blackhole();
        return cluster.apply(object, options);
      },
    };
  }

  it('fails at the timeout when reads get no answer, and keeps the revision applied before', async () => {
    // Prepare: one revision applied through the proxy; then a new one, and silence.
    const { track, repo, ns } = await fixture.newTrack('reads', 'timeout: 3s');
    const { proxy, cluster } = await proxiedCluster();
    const deps = { ...fixture.deps, cluster };
    const first = await pushFiles(repo, {
      'a.yaml': configMap('a', 'one'),
      'b.yaml': configMap('b', 'one'),
    });
    const applied = await syncTrack(track, { trigger: 'manual' }, deps);
    assert.equal(applied.result, 'applied', applied.error);
    await pushFiles(repo, { 'a.yaml': configMap('a', 'two'), 'b.yaml': null });
    proxy.blackhole();

    // Act
    const started = performance.now();
    const result = await syncTrack(track, { trigger: 'webhook' }, deps);
    const seconds = (performance.now() - started) / 1000;
    const state = await readTrackState(fixture.deps.state, track.name);
    const history = await fixture.deps.state.listHistory(track.name);

    // Assess: failed at 3 s, not 60; nothing undone nor pruned; the track free.
    assert.ok(seconds >= 2.9 && seconds < 30, `took ${seconds} s`);
    assert.equal(result.result, 'failed');
    assert.match(result.error ?? '', new RegExp(`^${escape(gaveUp(track.name))}`));
    assert.ok(proxy.swallowed > 0, 'the requests reached the silent proxy');
    assert.equal(state.applyLease, null);
    assert.equal(state.appliedRevision, first);
    assert.equal(conditionOf(state, 'Ready')?.status, 'False');
    assert.equal(conditionOf(state, 'Ready')?.message, result.error);
    assert.deepEqual(
      history.map((entry) => [entry.result, entry.trigger]),
      [
        ['failed', 'webhook'],
        ['applied', 'manual'],
      ],
    );
    assert.equal(await fixture.configMapValue(ns, 'a'), 'one');
    assert.equal(await fixture.configMapValue(ns, 'b'), 'one');
  });

  it('cancels the applies in flight at the timeout, then converges once the cluster answers', async () => {
    // Prepare
    const { track, repo, ns } = await fixture.newTrack('applies', 'timeout: 3s');
    const { proxy, cluster } = await proxiedCluster();
    const sha = await pushFiles(repo, {
      'a.yaml': configMap('a', 'one'),
      'b.yaml': configMap('b', 'one'),
    });

    // Act
    const started = performance.now();
    const result = await syncTrack(
      track,
      { trigger: 'manual' },
      { ...fixture.deps, cluster: silentFromFirstApply(cluster, proxy) },
    );
    const seconds = (performance.now() - started) / 1000;
    const state = await readTrackState(fixture.deps.state, track.name);
    const next = await syncTrack(track, { trigger: 'manual' }, fixture.deps);

    // Assess: each apply in flight failed with the track's timeout; the next sync applies.
    assert.ok(seconds >= 2.9 && seconds < 30, `took ${seconds} s`);
    assert.equal(result.result, 'failed');
    assert.deepEqual(
      result.changeset.map((entry) => [entry.subject, entry.action, entry.error]),
      [
        [`ConfigMap/${ns}/a`, 'failed', `ConfigMap/${ns}/a (a.yaml): ${gaveUp(track.name)}`],
        [`ConfigMap/${ns}/b`, 'failed', `ConfigMap/${ns}/b (b.yaml): ${gaveUp(track.name)}`],
      ],
    );
    assert.equal(state.applyLease, null);
    assert.equal(conditionOf(state, 'Ready')?.reason, 'SyncFailed');
    assert.equal(next.result, 'applied', next.error);
    assert.equal(next.state.appliedRevision, sha);
    assert.equal(await fixture.configMapValue(ns, 'a'), 'one');
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
