/**
 * The drift job (reconcileDrift) on a track synced from the test Git server to
 * the real test cluster: hand changes are reported with who made them and put
 * back, deleted objects recreated, and detect-only (`--detect-only` or
 * `drift: detect`) changes nothing. Detection's finer rules (defaults, other
 * managers' fields, ignore rules) are tested in drift.test.ts.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { KubeApiCluster } from '../../src/cluster/kube-api-cluster.ts';
import { parseConfig } from '../../src/config/index.ts';
import type { SecretRef } from '../../src/config/secret-ref.ts';
import type { Track } from '../../src/config/types.ts';
import { createGitSource } from '../../src/source/git-source.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import { reconcileDrift } from '../../src/sync/reconcile-drift.ts';
import { syncTrack, type SyncDeps } from '../../src/sync/sync-track.ts';
import { readTrackState } from '../../src/sync/track-state.ts';
import { pushFiles, startGitServer, type GitServer } from '../harness/git-server.ts';
import { sharedKubeConfig } from '../harness/shared-cluster.ts';

const configMap = (name: string, value: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  value: "${value}"\n`;

describe('reconcileDrift', () => {
  let kc: KubeConfig;
  let core: CoreV1Api;
  let git: GitServer;
  let workDir: string;
  let deps: SyncDeps;
  const namespaces: string[] = [];

  /** A track with ConfigMaps `a` and `b` synced into a namespace of its own. */
  async function syncedTrack(
    name: string,
    extra = '',
  ): Promise<{ track: Track; ns: string; revision: string }> {
    const repo = await git.createRepository(name);
    const ns = `reconcile-${name}-${Date.now().toString(36)}`;
    namespaces.push(ns);
    await core.createNamespace({ body: { metadata: { name: ns } } });
    const track = parseConfig(
      [
        'tracks:',
        `  - name: ${name}`,
        `    repository: ${repo.url}`,
        `    namespace: ${ns}`,
        '    auth: {type: basic, secret: env:TEST_GIT_CREDENTIALS}',
        ...(extra ? [`    ${extra}`] : []),
      ].join('\n'),
      'driftless.yaml',
    ).tracks[0]!;
    const revision = await pushFiles(repo, {
      'a.yaml': configMap('a', 'one'),
      'b.yaml': configMap('b', 'one'),
    });
    const synced = await syncTrack(track, { trigger: 'manual' }, deps);
    assert.equal(synced.result, 'applied', synced.error);
    return { track, ns, revision };
  }

  /** Sets `a`'s value as `kubectl edit` does: a full update under its own field manager. */
  async function editByHand(ns: string, value: string): Promise<void> {
    const live = await core.readNamespacedConfigMap({ name: 'a', namespace: ns });
    await core.replaceNamespacedConfigMap({
      name: 'a',
      namespace: ns,
      body: { ...live, data: { value } },
      fieldManager: 'kubectl-edit',
    });
  }

  async function valueOf(ns: string, name: string): Promise<string | undefined> {
    try {
      return (await core.readNamespacedConfigMap({ name, namespace: ns })).data?.value;
    } catch {
      return undefined;
    }
  }

  before(async () => {
    kc = sharedKubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    git = await startGitServer();
    workDir = await mkdtemp(join(tmpdir(), 'driftless-reconcile-'));
    const store = new FsStore({ path: join(workDir, 'store') });
    const credentials = `${git.username}:${git.password}`;
    const readSecret = async (_ref: SecretRef): Promise<string> => credentials;
    deps = {
      cluster: await KubeApiCluster.fromKubeConfig(kc),
      source: createGitSource({ cacheDir: join(workDir, 'git'), readSecret }),
      artifacts: store,
      state: store,
    };
  });

  after(async () => {
    for (const ns of namespaces) await core.deleteNamespace({ name: ns }).catch(() => undefined);
    await git.stop();
    await rm(workDir, { recursive: true, force: true });
  });

  it('reports a hand change with who made it and puts the value back', async () => {
    // Prepare
    const { track, ns, revision } = await syncedTrack('corrected');
    await editByHand(ns, 'by hand');

    // Act
    const result = await reconcileDrift(
      track,
      { type: 'drift', track: track.name, trigger: 'manual' },
      deps,
    );

    // Assess
    assert.equal(result.revision, revision);
    assert.deepEqual(
      result.drifted.map((d) => ({ subject: d.subject, patch: d.patch, changedBy: d.changedBy })),
      [
        {
          subject: `ConfigMap/${ns}/a`,
          patch: [{ op: 'replace', path: '/data/value', value: 'one' }],
          changedBy: ['kubectl-edit'],
        },
      ],
    );
    assert.deepEqual(result.missing, []);
    assert.deepEqual(result.errors, []);
    assert.equal(result.corrected, true);
    assert.deepEqual(result.changeset, [{ subject: `ConfigMap/${ns}/a`, action: 'configured' }]);
    assert.equal(await valueOf(ns, 'a'), 'one');
    const [latest] = await deps.state.listHistory(track.name);
    assert.deepEqual(
      [latest?.revision, latest?.result, latest?.trigger, latest?.drifted],
      [revision, 'drift-corrected', 'manual', [`ConfigMap/${ns}/a`]],
    );
  });

  it('finds nothing on a track just synced, and records when it checked', async () => {
    // Prepare
    const { track } = await syncedTrack('clean');
    const checkedAt = new Date('2030-01-02T03:04:05.000Z');

    // Act
    const result = await reconcileDrift(
      track,
      { type: 'drift', track: track.name },
      { ...deps, now: () => checkedAt },
    );

    // Assess
    assert.deepEqual([result.drifted, result.missing, result.errors], [[], [], []]);
    assert.equal(result.corrected, false);
    const state = await readTrackState(deps.state, track.name);
    assert.equal(state.driftCheckedAt, checkedAt.toISOString());
    assert.equal(state.applyLease, null, 'the apply lease is given back');
  });

  it('only reports with detectOnly: nothing changes and no history is written', async () => {
    // Prepare
    const { track, ns } = await syncedTrack('detect-only');
    await editByHand(ns, 'by hand');
    await core.deleteNamespacedConfigMap({ name: 'b', namespace: ns });
    const historyBefore = await deps.state.listHistory(track.name);

    // Act
    const result = await reconcileDrift(
      track,
      { type: 'drift', track: track.name, detectOnly: true, trigger: 'manual' },
      deps,
    );

    // Assess
    assert.deepEqual(
      result.drifted.map((d) => d.subject),
      [`ConfigMap/${ns}/a`],
    );
    assert.deepEqual(result.missing, [`ConfigMap/${ns}/b`]);
    assert.equal(result.corrected, false);
    assert.deepEqual(result.changeset, []);
    assert.equal(await valueOf(ns, 'a'), 'by hand');
    assert.equal(await valueOf(ns, 'b'), undefined);
    assert.deepEqual(await deps.state.listHistory(track.name), historyBefore);
  });

  it('only reports for a "drift: detect" track', async () => {
    // Prepare
    const { track, ns } = await syncedTrack('detect-track', 'drift: detect');
    await editByHand(ns, 'by hand');

    // Act
    const result = await reconcileDrift(
      track,
      { type: 'drift', track: track.name, trigger: 'schedule' },
      deps,
    );

    // Assess
    assert.equal(track.drift, 'detect');
    assert.deepEqual(
      result.drifted.map((d) => d.subject),
      [`ConfigMap/${ns}/a`],
    );
    assert.equal(result.corrected, false);
    assert.equal(await valueOf(ns, 'a'), 'by hand');
  });

  it('recreates a deleted object', async () => {
    // Prepare
    const { track, ns } = await syncedTrack('recreated');
    await core.deleteNamespacedConfigMap({ name: 'b', namespace: ns });

    // Act
    const result = await reconcileDrift(
      track,
      { type: 'drift', track: track.name, trigger: 'manual' },
      deps,
    );

    // Assess
    assert.deepEqual(result.missing, [`ConfigMap/${ns}/b`]);
    assert.deepEqual(result.drifted, []);
    assert.equal(result.corrected, true);
    assert.deepEqual(
      result.changeset.map((e) => e.subject),
      [`ConfigMap/${ns}/b`],
    );
    assert.equal(await valueOf(ns, 'b'), 'one');
  });

  it('checks nothing on a track that never applied a revision', async () => {
    // Prepare
    const track = parseConfig(
      'tracks:\n  - name: never\n    repository: https://git.example.com/never.git\n',
      'driftless.yaml',
    ).tracks[0]!;

    // Act
    const result = await reconcileDrift(track, { type: 'drift', track: track.name }, deps);

    // Assess
    assert.equal(result.revision, null);
    assert.equal(result.corrected, false);
    assert.deepEqual([result.drifted, result.missing], [[], []]);
  });
});
