/**
 * Tracks read at run time (`tracksFrom`) on the real test cluster, with the
 * real kubectl and the GitTrack CRD from infra/crds: a GitTrack applied with
 * kubectl is discovered (finalizer held, track published), fetched and
 * synced, and its `.status` is read back with kubectl; GitTracks that reach
 * for another cluster, a local path or a deploy key outside the allowed
 * prefix are refused on their own status; deleting a GitTrack collects its
 * objects through the finalizer by its deletion policy; GitTrack documents
 * kept in Git become tracks, and one removed from Git is reported, not
 * collected.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { parseConfig } from '../../src/config/index.ts';
import type { SecretRef } from '../../src/config/secret-ref.ts';
import type { Config } from '../../src/config/types.ts';
import { createTrackSource } from '../../src/source/track-source.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import { GC_FINALIZER } from '../../src/sync/discover-git-tracks.ts';
import { discoverAny, executeJob } from '../../src/sync/execute-job.ts';
import type { Job } from '../../src/sync/jobs.ts';
import { knownTracks, type PublishedTracks } from '../../src/sync/published-tracks.ts';
import { runJob, type JobDeps, type JobResult } from '../../src/sync/run-job.ts';
import { discoverJob, tracksRemovedFromConfig } from '../../src/sync/schedule.ts';
import { pushFiles } from '../harness/git-server.ts';
import { sharedKubeconfigPath } from '../harness/shared-cluster.ts';
import { controlPlaneBinaries } from '../harness/testbin.ts';
import { TrackFixture } from '../harness/track-fixture.ts';

const run = promisify(execFile);
const CRD = join(import.meta.dirname, '..', '..', 'infra', 'crds', 'gittrack.yaml');

const configMap = (name: string, value: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ${name}}\ndata: {value: "${value}"}\n`;

interface GitTrackSpec {
  readonly name: string;
  readonly namespace?: string;
  readonly repository: string;
  readonly annotations?: Record<string, string>;
  readonly deployKey?: boolean;
}

/** A GitTrack as a user writes it for kubectl. */
function gitTrackYaml(spec: GitTrackSpec): string {
  return JSON.stringify({
    apiVersion: 'faros.pusher.com/v1alpha1',
    kind: 'GitTrack',
    metadata: {
      name: spec.name,
      ...(spec.namespace ? { namespace: spec.namespace } : {}),
      ...(spec.annotations ? { annotations: spec.annotations } : {}),
    },
    spec: {
      repository: spec.repository,
      reference: 'main',
      ...(spec.deployKey === false
        ? {}
        : { deployKey: { secretName: 'git-creds', key: 'credentials', type: 'HTTPBasicAuth' } }),
    },
  });
}

interface LiveGitTrack {
  readonly metadata: { readonly finalizers?: string[]; readonly deletionTimestamp?: string };
  readonly status: {
    readonly objectsApplied: number;
    readonly objectsDiscovered: number;
    readonly conditions: { readonly type: string; readonly status: string }[];
  };
}

describe('tracks read at run time (tracksFrom)', () => {
  const fixture = new TrackFixture('from');
  let kubectl: (...args: string[]) => Promise<string>;
  let store: FsStore;
  /** Secret references the Git source was asked for. */
  const asked: string[] = [];

  before(async () => {
    await fixture.start();
    const bins = await controlPlaneBinaries();
    kubectl = async (...args) =>
      (await run(bins.kubectl, ['--kubeconfig', sharedKubeconfigPath(), ...args])).stdout;
    await kubectl('apply', '-f', CRD);
    await kubectl('wait', '--for=condition=Established', 'crd/gittracks.faros.pusher.com');
    store = new FsStore({ path: join(fixture.storeDir, '..', 'tracks-from-store') });
  });
  after(async () => {
    // Finalizers of GitTracks a failed test left would hold their namespaces.
    const left = await kubectl('get', 'gittracks', '-A', '-o', 'json').catch(() => '{"items":[]}');
    for (const item of (JSON.parse(left) as { items: { metadata: Record<string, string> }[] })
      .items) {
      await kubectl(
        'patch',
        'gittrack',
        item.metadata['name']!,
        '-n',
        item.metadata['namespace']!,
        '--type=merge',
        '-p',
        '{"metadata":{"finalizers":null}}',
      ).catch(() => undefined);
    }
    await fixture.stop();
  });

  /**
   * Job deps as a deployment has them: the config, the published tracks read
   * afresh (as each Lambda invocation does), a Git source whose deploy keys
   * are answered only under the expected, namespaced name.
   */
  async function jobDeps(
    config: Config,
    credentialsRef: string,
  ): Promise<JobDeps & { queued: Job[] }> {
    const queued: Job[] = [];
    const readSecret = async (ref: SecretRef): Promise<string> => {
      const name = ref.scheme === 'env' ? ref.name : JSON.stringify(ref);
      asked.push(name);
      if (name !== credentialsRef) throw new Error(`unexpected secret reference ${name}`);
      return `${fixture.git.username}:${fixture.git.password}`;
    };
    const source = createTrackSource({
      cacheDir: join(fixture.storeDir, '..', `git-${asked.length}-${Date.now()}`),
      readSecret,
    });
    return {
      tracks: await knownTracks(config, store),
      config,
      published: store,
      artifacts: store,
      state: store,
      queue: { enqueue: async (job) => void queued.push(job) },
      source: async () => source,
      cluster: async () => fixture.deps.cluster,
      queued,
    };
  }

  /** Runs a job, then every job it queued, depth first, as the queues would. */
  async function runAll(job: Job, deps: JobDeps & { queued: Job[] }): Promise<JobResult[]> {
    const results = [await runJob(job, deps, executeJob, discoverAny)];
    while (deps.queued.length > 0)
      results.push(await runJob(deps.queued.shift()!, deps, executeJob, discoverAny));
    return results;
  }

  /** `kubectl apply -f` of a document written to a file, as a user does. */
  async function kubectlApply(ns: string, document: string): Promise<void> {
    const file = join(fixture.storeDir, '..', `gittrack-${Date.now()}-${Math.random()}.json`);
    await writeFile(file, document);
    await kubectl('apply', '-n', ns, '-f', file);
  }

  /** The GitTrack as kubectl shows it. */
  async function gitTrack(ns: string, name: string): Promise<LiveGitTrack> {
    return JSON.parse(await kubectl('get', 'gittrack', name, '-n', ns, '-o', 'json'));
  }

  const clusterSource = parseConfig(
    'tracksFrom:\n  - {cluster: default, gitTracks: true, deployKeySecrets: "env:GITTRACK_"}\n',
    'driftless.yaml',
  );

  it('syncs a GitTrack applied with kubectl and writes its status, read back with kubectl', async () => {
    // Prepare: a repository with a ConfigMap, and a GitTrack for it applied with kubectl.
    const { repo, ns } = await fixture.newTrack('web');
    await pushFiles(repo, { 'settings.yaml': configMap('settings', 'v1') });
    await kubectlApply(ns, gitTrackYaml({ name: 'web', repository: repo.url }));
    const credentials = `GITTRACK_${ns.toUpperCase().replace(/-/g, '_')}_GIT_CREDS_CREDENTIALS`;

    // Act: a schedule tick's discovery, then (next invocation, tracks read afresh) a webhook's fetch.
    const discovery = await runJob(
      discoverJob(clusterSource.tracksFrom[0]!, new Date().toISOString()),
      await jobDeps(clusterSource, credentials),
      executeJob,
      discoverAny,
    );
    const deps = await jobDeps(clusterSource, credentials);
    const results = await runAll({ type: 'fetch', track: 'web', trigger: 'webhook' }, deps);

    // Assess: published with the namespaced deploy key, synced, finalizer held, status written.
    assert.equal(discovery.type, 'discover');
    assert.deepEqual(discovery.type === 'discover' && discovery.result.tracks, ['web']);
    const web = deps.tracks.find((track) => track.name === 'web');
    assert.equal(web?.cluster, 'default');
    assert.equal(web?.namespace, ns);
    assert.deepEqual(web?.auth, { type: 'basic', secret: { scheme: 'env', name: credentials } });
    assert.deepEqual(
      results.map((r) => r.type),
      ['fetch', 'sync'],
    );
    assert.equal(await fixture.configMapValue(ns, 'settings'), 'v1');
    const live = await gitTrack(ns, 'web');
    assert.deepEqual(live.metadata.finalizers, [GC_FINALIZER]);
    assert.equal(live.status.objectsApplied, 1);
    assert.equal(live.status.objectsDiscovered, 1);
    const ready = live.status.conditions.find((c) => c.type === 'Ready');
    assert.equal(ready?.status, 'True');
    // kubectl's own columns show it too.
    assert.match(
      await kubectl('get', 'gittrack', 'web', '-n', ns),
      /web\s+\S+\s+main\s+1\s+1\s+1\s+True/,
    );
  });

  it('refuses GitTracks that reach for another cluster or a local path, on their own status', async () => {
    // Prepare
    const { repo, ns } = await fixture.newTrack('refused');
    await kubectlApply(
      ns,
      gitTrackYaml({
        name: 'elsewhere',
        repository: repo.url,
        annotations: { 'driftless.dev/cluster': 'prod' },
      }),
    );
    await kubectlApply(
      ns,
      gitTrackYaml({ name: 'local', repository: '/srv/git/manifests', deployKey: false }),
    );

    // Act
    const discovery = await runJob(
      discoverJob(clusterSource.tracksFrom[0]!, new Date().toISOString()),
      await jobDeps(clusterSource, 'none'),
      executeJob,
      discoverAny,
    );

    // Assess: neither is published; each says why on its status; other GitTracks are unaffected.
    assert.equal(discovery.type, 'discover');
    const published = await store.readPublished<PublishedTracks>('cluster-default');
    const names = published?.tracks.map((t) => t.name) ?? [];
    assert.ok(!names.includes('elsewhere') && !names.includes('local'), names.join());
    assert.ok(names.includes('web'));
    const reason = async (name: string) =>
      kubectl(
        'get',
        'gittrack',
        name,
        '-n',
        ns,
        '-o',
        'jsonpath={.status.conditions[?(@.type=="Ready")].message}',
      );
    assert.match(
      await reason('elsewhere'),
      /"prod" is not allowed: tracks of this source reach only cluster "default"/,
    );
    assert.match(await reason('local'), /is a local repository/);
    // The next discovery finds the same problem: the GitTrack is not written again.
    const version = () =>
      kubectl('get', 'gittrack', 'local', '-n', ns, '-o', 'jsonpath={.metadata.resourceVersion}');
    const before = await version();
    await runJob(
      discoverJob(clusterSource.tracksFrom[0]!, new Date().toISOString()),
      await jobDeps(clusterSource, 'none'),
      executeJob,
      discoverAny,
    );
    assert.equal(await version(), before);
    await kubectl('delete', 'gittrack', 'elsewhere', 'local', '-n', ns, '--wait=false');
    // A GitTrack that never became a track is released at once: nothing of it to collect.
    await runJob(
      discoverJob(clusterSource.tracksFrom[0]!, new Date().toISOString()),
      await jobDeps(clusterSource, 'none'),
      executeJob,
      discoverAny,
    );
    assert.equal((await kubectl('get', 'gittracks', '-n', ns, '-o', 'name')).trim(), '');
  });

  for (const policy of ['Delete', 'Orphan'] as const) {
    it(`collects a deleted GitTrack's objects through its finalizer (${policy})`, async () => {
      // Prepare: a synced GitTrack with the deletion-policy annotation.
      const name = `gone-${policy.toLowerCase()}`;
      const { repo, ns } = await fixture.newTrack(name);
      await pushFiles(repo, { 'settings.yaml': configMap('settings', 'v1') });
      await kubectlApply(
        ns,
        gitTrackYaml({
          name,
          repository: repo.url,
          annotations: { 'driftless.dev/deletion-policy': policy },
        }),
      );
      const credentials = `GITTRACK_${ns.toUpperCase().replace(/-/g, '_')}_GIT_CREDS_CREDENTIALS`;
      const tick = () => discoverJob(clusterSource.tracksFrom[0]!, new Date().toISOString());
      await runJob(tick(), await jobDeps(clusterSource, credentials), executeJob, discoverAny);
      await runAll(
        { type: 'fetch', track: name, trigger: 'webhook' },
        await jobDeps(clusterSource, credentials),
      );
      assert.equal(await fixture.configMapValue(ns, 'settings'), 'v1');

      // Act: kubectl delete (the finalizer holds it), then the next discovery.
      await kubectl('delete', 'gittrack', name, '-n', ns, '--wait=false');
      const held = await gitTrack(ns, name);
      const discovery = await runJob(
        tick(),
        await jobDeps(clusterSource, credentials),
        executeJob,
        discoverAny,
      );

      // Assess
      assert.ok(held.metadata.deletionTimestamp, 'the finalizer held the GitTrack');
      assert.deepEqual(discovery.type === 'discover' && discovery.result.collected, [name]);
      assert.equal(
        await fixture.configMapValue(ns, 'settings'),
        policy === 'Delete' ? undefined : 'v1',
      );
      assert.equal((await kubectl('get', 'gittracks', '-n', ns, '-o', 'name')).trim(), '');
      assert.equal(await store.read(name), undefined, 'state removed');
      const history = await store.listHistory(name);
      assert.equal(history[0]?.result, 'deleted');
      assert.equal(history[0]?.['policy'], policy);
      const after = await jobDeps(clusterSource, credentials);
      assert.ok(!after.tracks.some((t) => t.name === name));
    });
  }

  it('turns GitTrack documents in Git into tracks; one removed from Git is reported, not collected', async () => {
    // Prepare: a repository of track documents, and the repository they deploy.
    const { repo: app, ns } = await fixture.newTrack('docs-app');
    await pushFiles(app, { 'settings.yaml': configMap('settings', 'from-docs') });
    const docs = await fixture.git.createRepository('track-docs');
    await pushFiles(docs, {
      'tracks/app.yaml': `${gitTrackYaml({ name: 'docs-app', namespace: ns, repository: app.url })}\n`,
      'tracks/broken.yaml': `${gitTrackYaml({ name: 'Not_A_Label', repository: app.url })}\n`,
      'README.md': 'not read',
    });
    const config = parseConfig(
      [
        'tracksFrom:',
        `  - repository: ${docs.url}`,
        '    subPath: tracks',
        '    auth: {type: basic, secret: env:TRACK_DOCS}',
        '    deployKeySecrets: "env:GITTRACK_"',
      ].join('\n'),
      'driftless.yaml',
    );
    const source = config.tracksFrom[0]!;
    const credentials = `GITTRACK_${ns.toUpperCase().replace(/-/g, '_')}_GIT_CREDS_CREDENTIALS`;

    // Act: the discovery runs where Git is (fetch), then the track syncs.
    const discoverDeps = await jobDeps(config, 'TRACK_DOCS');
    const discovery = await runJob(
      discoverJob(source, new Date().toISOString()),
      discoverDeps,
      executeJob,
      discoverAny,
    );
    // The documents' repository and the app's have credentials of their own, each asked for by name.
    const results = await runAll(
      { type: 'fetch', track: 'docs-app', trigger: 'webhook' },
      await jobDeps(config, credentials),
    );

    // Assess
    assert.equal(discovery.type, 'discover');
    assert.ok(discovery.type === 'discover');
    assert.deepEqual(discovery.result.tracks, ['docs-app']);
    assert.match(discovery.result.revision ?? '', /^[0-9a-f]{40}$/);
    assert.equal(discovery.result.problems.length, 1);
    assert.match(discovery.result.problems[0]!.where, /^tracks\/broken\.yaml \(document 1\)$/);
    assert.deepEqual(
      results.map((r) => r.type),
      ['fetch', 'sync'],
    );
    assert.equal(await fixture.configMapValue(ns, 'settings'), 'from-docs');

    // The document is taken out of Git: the track leaves the list, its objects stay, it is reported.
    await pushFiles(docs, { 'tracks/app.yaml': null });
    await runJob(
      discoverJob(source, new Date().toISOString()),
      await jobDeps(config, 'TRACK_DOCS'),
      executeJob,
      discoverAny,
    );
    const after = await jobDeps(config, credentials);
    assert.ok(!after.tracks.some((t) => t.name === 'docs-app'));
    assert.ok((await tracksRemovedFromConfig(after.tracks, store)).includes('docs-app'));
    assert.equal(await fixture.configMapValue(ns, 'settings'), 'from-docs');
  });
});
