/**
 * A condition's lastTransitionTime moves only when its status does (Kubernetes' and Flux'
 * rule), also when one sync writes it in two steps (fetch, then apply): a sync that fails
 * again the same way leaves it where the first failure put it. Real fs store and sync
 * use-cases; a small Git source and the in-memory cluster stand in for Git and Kubernetes.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { refOf, type KubeObject } from '../../src/cluster/kube-object.ts';
import type {
  ApplyOptions,
  ApplyResult,
  KubernetesPort,
} from '../../src/cluster/kubernetes-port.ts';
import { GIT_TRACK_API_VERSION } from '../../src/config/git-track.ts';
import { parseConfig } from '../../src/config/index.ts';
import type { GitTracksFromCluster, Track } from '../../src/config/types.ts';
import type { GitSource } from '../../src/source/ports.ts';
import { VerificationError } from '../../src/source/verify-signature.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import { discoverGitTracks } from '../../src/sync/discover-git-tracks.ts';
import { syncTrack } from '../../src/sync/sync-track.ts';
import {
  conditionOf,
  transitionTime,
  type ConditionType,
  type TrackState,
} from '../../src/sync/track-state.ts';
import { InMemoryCluster } from './fakes/in-memory-cluster.ts';

const configMap = (name: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  value: "v"\n`;

const REV = '1'.repeat(40);
const START = Date.parse('2026-01-01T12:00:00Z');
/** The ISO time `minutes` after START. */
const at = (minutes: number): string => new Date(START + minutes * 60_000).toISOString();

/** A Git source whose head is REV, holding one ConfigMap; `verify` answers signature checks. */
function gitSource(verify?: () => Promise<string>): GitSource {
  return {
    resolve: async () => ({ revision: REV, ref: 'refs/heads/main' }),
    readFiles: async () => [{ path: 'a.yaml', content: new TextEncoder().encode(configMap('a')) }],
    ...(verify ? { verifyCommit: verify } : {}),
  };
}

/**
 * The in-memory cluster, where a status apply changes only `.status` and any other apply keeps
 * it, as an API server does for a resource with a status subresource.
 */
class GitTrackCluster extends InMemoryCluster {
  override async apply(object: KubeObject, options: ApplyOptions): Promise<ApplyResult> {
    const live = await this.get(refOf(object));
    const status = options.subresource === 'status' ? object['status'] : live?.['status'];
    const body = options.subresource === 'status' && live ? live : object;
    return super.apply({ ...body, ...(status === undefined ? {} : { status }) }, options);
  }

  gitTrack(): Promise<KubeObject | undefined> {
    return this.get({
      apiVersion: GIT_TRACK_API_VERSION,
      kind: 'GitTrack',
      namespace: 'apps',
      name: 'web',
    });
  }
}

/** The Ready condition of a GitTrack's `.status`. */
async function readyOf(
  object: Promise<KubeObject | undefined>,
): Promise<Record<string, unknown> | undefined> {
  const status = (await object)?.['status'] as { conditions?: Record<string, unknown>[] };
  return status?.conditions?.find((c) => c['type'] === 'Ready');
}

/** [status, lastTransitionTime] of the condition. */
function timeOf(state: TrackState, type: ConditionType): [string?, string?] {
  const condition = conditionOf(state, type);
  return [condition?.status, condition?.lastTransitionTime];
}

describe('condition transitions', () => {
  let dir: string;
  let store: FsStore;
  let tracks = 0;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-transitions-'));
    store = new FsStore({ path: dir });
  });

  after(() => rm(dir, { recursive: true, force: true }));

  /** A track of its own (so its state starts empty), with `extra` YAML fields. */
  function newTrack(extra = ''): Track {
    return parseConfig(
      `tracks: [{name: t${++tracks}, repository: https://git.example.com/a.git, namespace: apps${extra}}]`,
      'driftless.yaml',
    ).tracks[0]!;
  }

  /** Syncs `track` as at `minutes` after START. */
  function syncAt(
    track: Track,
    minutes: number,
    source: GitSource,
    cluster: KubernetesPort,
  ): ReturnType<typeof syncTrack> {
    const now = (): Date => new Date(at(minutes));
    return syncTrack(
      track,
      { trigger: 'schedule' },
      { source, cluster, artifacts: store, state: store, now },
    );
  }

  it('keeps FilesParsed and Ready where the first refusal put them while every sync is refused again', async () => {
    // Prepare: the track's filters leave out the revision's only object (EmptyRevision).
    const track = newTrack(', ignoreResources: [configmaps/v1]');
    const [source, cluster] = [gitSource(), new InMemoryCluster()];

    // Act
    const first = await syncAt(track, 0, source, cluster);
    const retries = [
      await syncAt(track, 5, source, cluster),
      await syncAt(track, 10, source, cluster),
    ];

    // Assess
    assert.equal(conditionOf(first.state, 'FilesParsed')?.reason, 'EmptyRevision');
    for (const retry of retries) {
      assert.equal(retry.result, 'failed');
      assert.equal(conditionOf(retry.state, 'FilesParsed')?.reason, 'EmptyRevision');
      assert.deepEqual(
        timeOf(retry.state, 'FilesParsed'),
        ['False', at(0)],
        'FilesParsed stayed False: its time is the first refusal',
      );
      assert.deepEqual(timeOf(retry.state, 'Ready'), ['False', at(0)]);
      assert.deepEqual(timeOf(retry.state, 'FilesFetched'), ['True', at(0)]);
    }
  });

  it('sets FilesParsed True, at that sync, once the revision it could not load loads', async () => {
    // Prepare: API discovery fails for two syncs, then works.
    const track = newTrack();
    const source = gitSource();
    const cluster: KubernetesPort = new InMemoryCluster();
    let down = true;
    const flaky: KubernetesPort = {
      discover: async (refresh) => {
        if (down) throw new Error('connect ECONNREFUSED 127.0.0.1:6443');
        return cluster.discover(refresh);
      },
      serverVersion: () => cluster.serverVersion(),
      apply: (object, options) => cluster.apply(object, options),
      get: (ref) => cluster.get(ref),
      list: (query) => cluster.list(query),
      delete: (ref, options) => cluster.delete(ref, options),
    };
    await syncAt(track, 0, source, flaky);
    const refused = await syncAt(track, 5, source, flaky);
    down = false;

    // Act
    const loaded = await syncAt(track, 10, source, flaky);

    // Assess
    assert.deepEqual(timeOf(refused.state, 'FilesParsed'), ['False', at(0)]);
    assert.equal(loaded.result, 'applied', loaded.error);
    assert.deepEqual(timeOf(loaded.state, 'FilesParsed'), ['True', at(10)]);
    assert.equal(
      conditionOf(loaded.state, 'FilesParsed')?.message,
      `revision ${REV} parsed and stored`,
    );
    assert.deepEqual(timeOf(loaded.state, 'Ready'), ['True', at(10)]);
  });

  it('keeps FilesFetched where the first refusal put it while the commit is refused again', async () => {
    // Prepare: every signature check of the head refuses it.
    const track = newTrack(', verify: {keys: [env:SIGNERS]}');
    const source = gitSource(async () => {
      throw new VerificationError(`commit ${REV} is not signed`);
    });
    const cluster = new InMemoryCluster();

    // Act
    await syncAt(track, 0, source, cluster);
    const retry = await syncAt(track, 5, source, cluster);

    // Assess
    assert.equal(retry.result, 'failed');
    assert.equal(conditionOf(retry.state, 'FilesFetched')?.reason, 'VerificationFailed');
    assert.deepEqual(
      timeOf(retry.state, 'FilesFetched'),
      ['False', at(0)],
      'FilesFetched stayed False: its time is the first refusal',
    );
    assert.deepEqual(timeOf(retry.state, 'Ready'), ['False', at(0)]);
  });

  it("keeps a refused GitTrack's Ready time while it is refused again for another reason", async () => {
    // Prepare: a GitTrack refused (a local repository), then changed and refused again.
    const config = parseConfig(
      'tracksFrom:\n  - {cluster: default, gitTracks: true}\n',
      'driftless.yaml',
    );
    const cluster = new GitTrackCluster();
    const apply = (repository: string) =>
      cluster.apply(
        {
          apiVersion: GIT_TRACK_API_VERSION,
          kind: 'GitTrack',
          metadata: { name: 'web', namespace: 'apps' },
          spec: { repository, reference: 'main' },
        },
        { fieldManager: 'kubectl', force: false },
      );
    const discover = (minutes: number) =>
      discoverGitTracks(config.tracksFrom[0] as GitTracksFromCluster, {
        config,
        published: store,
        state: store,
        cluster,
        now: () => new Date(at(minutes)),
      });
    await apply('/srv/git/web');
    await discover(0);
    const first = await readyOf(cluster.gitTrack());
    await apply('/srv/git/other');

    // Act
    await discover(5);

    // Assess
    const ready = await readyOf(cluster.gitTrack());
    assert.deepEqual([first?.['status'], first?.['lastTransitionTime']], ['False', at(0)]);
    assert.notEqual(ready?.['message'], first?.['message'], 'refused for another reason');
    assert.equal(ready?.['status'], 'False');
    assert.equal(ready?.['lastTransitionTime'], at(0), 'Ready stayed False: its time is the first');
  });

  it('moves the time only when the status changes, whatever the reason and message say', () => {
    const previous = { status: 'False', lastTransitionTime: at(0) };
    const now = new Date(at(5));

    assert.equal(transitionTime(previous, 'False', now), at(0));
    assert.equal(transitionTime(previous, 'True', now), at(5));
    assert.equal(transitionTime(previous, 'Unknown', now), at(5));
    assert.equal(transitionTime(undefined, 'False', now), at(5));
  });
});
