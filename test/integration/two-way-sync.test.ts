/**
 * Two-way sync on the real test cluster and the test Git server (git
 * http-backend with receive-pack): a ConfigMap changed with kubectl under a
 * `syncTo: git` rule is committed back into its own file with comments and
 * the other documents intact (read back with the git CLI); a push by someone
 * else in between is kept; a field Git changed meanwhile stays as Git has
 * it; a Secret is refused; a `syncTo: ignore` Deployment is never applied;
 * and the write-back commit's own webhook applies nothing.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import type { SignalSource } from '../../src/cli/interrupts.ts';
import { runCli } from '../../src/cli/main.ts';
import { parseConfig } from '../../src/config/index.ts';
import type { Track } from '../../src/config/types.ts';
import type { GitSource } from '../../src/source/ports.ts';
import { executeJob } from '../../src/sync/execute-job.ts';
import type { LocalContext } from '../../src/sync/local-context.ts';
import type { Job } from '../../src/sync/jobs.ts';
import { runJob, type JobDeps, type JobResult } from '../../src/sync/run-job.ts';
import { readTrackState } from '../../src/sync/track-state.ts';
import { pushFiles, runGit, type GitRepository } from '../harness/git-server.ts';
import { cliOver } from '../harness/run-cli.ts';
import { sharedKubeconfigPath } from '../harness/shared-cluster.ts';
import { controlPlaneBinaries } from '../harness/testbin.ts';
import { TrackFixture } from '../harness/track-fixture.ts';

const run = promisify(execFile);

/** The process's SIGINT and SIGTERM, raised by the test; runCli takes it for `process`. */
class StopSignals extends EventEmitter implements SignalSource {
  exit(code: number): void {
    throw new Error(`the command quit at once with ${code}`);
  }
}

const SETTINGS = `# Settings the ops team changes in the cluster; Driftless writes them back here.
apiVersion: v1
kind: ConfigMap
metadata:
  name: ops-settings
  labels:
    team: ops # owned by ops
data:
  value: from-git # the value people tune
  level: info
---
# Not ops': Git drives this one.
apiVersion: v1
kind: ConfigMap
metadata: {name: app-settings}
data: {mode:   "strict"}
`;

const SECRET = `apiVersion: v1
kind: Secret
metadata:
  name: ops-token
  labels: {team: ops}
stringData:
  token: from-git
`;

const DEPLOYMENT = `apiVersion: apps/v1
kind: Deployment
metadata: {name: batch-job}
spec:
  replicas: 1
  selector: {matchLabels: {app: batch}}
  template:
    metadata: {labels: {app: batch}}
    spec: {containers: [{name: c, image: registry.example.com/batch:1}]}
`;

const RULES = `rules:
  - {apiGroups: [""], resources: [configmaps, secrets], labels: {team: ops}, syncTo: git}
  - {apiGroups: [apps], resources: [deployments], names: ["batch-*"], syncTo: ignore}
writeBack: {author: {name: Driftless Bot, email: bot@example.com}}`;

describe('two-way sync', () => {
  const fixture = new TrackFixture('twoway');
  let kubectl: (...args: string[]) => Promise<string>;

  before(async () => {
    await fixture.start();
    const { kubectl: binary } = await controlPlaneBinaries();
    kubectl = async (...args) =>
      (await run(binary, ['--kubeconfig', sharedKubeconfigPath(), ...args])).stdout;
  });
  after(() => fixture.stop());

  async function runAll(job: Job, deps: JobDeps & { queued: Job[] }): Promise<JobResult[]> {
    const results = [await runJob(job, deps, executeJob)];
    while (deps.queued.length > 0)
      results.push(await runJob(deps.queued.shift()!, deps, executeJob));
    return results;
  }

  /** `kubectl patch --type=merge`, as people change objects by hand. */
  const patchLive = (kind: string, name: string, ns: string, patch: string) =>
    kubectl('patch', kind, name, '-n', ns, '--type=merge', '-p', patch);

  /** The `driftless` command over the fixture's store, Git and cluster, configured with `track`. */
  const cliOn = (track: Track) =>
    cliOver(() => ({
      config: {
        ...parseConfig(
          'tracks: [{name: x, repository: https://git.example.com/x.git}]',
          'driftless.yaml',
        ),
        tracks: [track],
      },
      artifacts: fixture.deps.artifacts,
      state: fixture.deps.state,
      source: async () => fixture.deps.source,
      cluster: async () => fixture.deps.cluster,
      close: () => undefined,
    }));

  const show = (repo: GitRepository, what: string) =>
    runGit(['--git-dir', repo.bareDir, 'show', what]);

  async function syncedTrack(
    name: string,
  ): Promise<{ track: Track; repo: GitRepository; ns: string }> {
    const made = await fixture.newTrack(name, RULES);
    await pushFiles(made.repo, {
      'settings.yaml': SETTINGS,
      'secret.yaml': SECRET,
      'batch.yaml': DEPLOYMENT,
    });
    const results = await runAll(
      { type: 'fetch', track: name, trigger: 'webhook' },
      fixture.jobDeps([made.track]),
    );
    assert.equal(results.at(-1)?.type, 'sync');
    return made;
  }

  it('commits a kubectl change into its own file, comments and other documents intact', async () => {
    // Prepare: synced; the ignored Deployment was never applied.
    const { track, repo, ns } = await syncedTrack('ops');
    const state = await readTrackState(fixture.deps.state, 'ops');
    assert.match(
      state.ignoredObjects[`Deployment/${ns}/batch-job`] ?? '',
      /rules\[1\]: syncTo: ignore/,
    );
    await assert.rejects(kubectl('get', 'deployment', 'batch-job', '-n', ns));
    const before = await show(repo, 'main');

    // Act: the ops team tunes the value with kubectl; then the schedule's drift check.
    await patchLive(
      'configmap',
      'ops-settings',
      ns,
      '{"data":{"value":"from-cluster"},"metadata":{"labels":{"tuned":"yes"}}}',
    );
    // A poll's sync before the drift check (as a schedule tick queues both) leaves it alone.
    const poll = await runAll(
      { type: 'fetch', track: 'ops', trigger: 'schedule' },
      fixture.jobDeps([track]),
    );
    const polled = poll.find((r) => r.type === 'sync');
    assert.ok(polled?.type === 'sync');
    assert.equal(
      polled.result.changeset.find((e) => e.subject === `ConfigMap/${ns}/ops-settings`)?.action,
      'skipped',
    );
    // `diff` agrees with it: nothing a sync would change, so no change shown and exit 0.
    const diff = await cliOn(track)('diff', '--track', 'ops', '-o', 'json');
    assert.equal(diff.code, 0, diff.stdout + diff.stderr);
    assert.deepEqual(JSON.parse(diff.stdout).changes, []);
    const deps = fixture.jobDeps([track]);
    const results = await runAll({ type: 'drift', track: 'ops', trigger: 'schedule' }, deps);

    // Assess: the drift was not put back but committed, in the file it came from.
    const [drift, writeBack] = results;
    assert.equal(drift?.type, 'drift');
    assert.equal(writeBack?.type, 'writeBack');
    assert.ok(writeBack?.type === 'writeBack');
    assert.equal(writeBack.result.result, 'written-back', writeBack.result.error);
    assert.deepEqual(writeBack.result.writtenBack, [`ConfigMap/${ns}/ops-settings`]);
    const live = JSON.parse(
      await kubectl('get', 'configmap', 'ops-settings', '-n', ns, '-o', 'json'),
    );
    assert.equal(live.data.value, 'from-cluster', 'the cluster change stays');
    const file = await show(repo, 'main:settings.yaml');
    assert.match(file, /^# Settings the ops team changes in the cluster/);
    assert.match(file, /value: from-cluster # the value people tune/);
    assert.match(file, /team: ops # owned by ops/);
    // Quoted: kubectl (YAML 1.1) would read a plain yes as true.
    assert.match(file, /tuned: "yes"/);
    assert.match(file, /level: info/);
    // The other document, byte for byte (its odd spacing too).
    assert.ok(
      file.endsWith(
        `---\n# Not ops': Git drives this one.\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: app-settings}\ndata: {mode:   "strict"}\n`,
      ),
      file,
    );
    assert.doesNotMatch(
      file,
      /resourceVersion|managedFields|creationTimestamp|driftless\.dev\/track/,
    );
    const commit = await runGit([
      '--git-dir',
      repo.bareDir,
      'log',
      '-1',
      '--format=%an <%ae>%n%P%n%B',
      'main',
    ]);
    assert.match(commit, /^Driftless Bot <bot@example\.com>\n/);
    assert.ok(
      commit.includes(before.split('\n')[0]!.replace('commit ', '')),
      'parent is the old head',
    );
    assert.match(commit, new RegExp(`- ConfigMap/${ns}/ops-settings`));
    const history = await fixture.deps.state.listHistory('ops');
    assert.equal(history[0]?.trigger, 'write-back');
    assert.equal(history[0]?.revision, writeBack.result.commit);

    // The write-back commit's own webhook: fetched and synced, nothing changes.
    const loop = await runAll(
      { type: 'fetch', track: 'ops', trigger: 'webhook' },
      fixture.jobDeps([track]),
    );
    const sync = loop.find((r) => r.type === 'sync');
    assert.ok(sync?.type === 'sync');
    assert.equal(sync.result.revision, writeBack.result.commit);
    assert.deepEqual(
      sync.result.changeset
        .filter((e) => e.action !== 'unchanged' && e.action !== 'skipped')
        .map((e) => `${e.action} ${e.subject}`),
      [],
    );
    // The Secret under the same rule: changed in the cluster, refused, never in Git in plain text.
    await patchLive('secret', 'ops-token', ns, '{"stringData":{"token":"from-cluster-secret"}}');
    const secretRun = await runAll(
      { type: 'drift', track: 'ops', trigger: 'schedule' },
      fixture.jobDeps([track]),
    );
    assert.ok(secretRun[0]?.type === 'drift');
    assert.match(
      secretRun[0].result.writeBackRefused.map((r) => r.error).join('\n'),
      /Secret.* never written back to Git in plain text/,
    );
    assert.doesNotMatch(await show(repo, 'main:secret.yaml'), /from-cluster-secret/);
  });

  it('adds an object made with kubectl to Git (include: true), and the next sync adopts it', async () => {
    // Prepare: a track that includes new ops ConfigMaps of its namespace.
    const made = await fixture.newTrack(
      'ops-include',
      [
        'restrictNamespace: true',
        'adopt: true',
        'subPath: deploy',
        'rules: [{apiGroups: [""], resources: [configmaps], labels: {team: ops}, syncTo: git}]',
        'writeBack: {include: true}',
      ].join('\n'),
    );
    const { track, repo, ns } = made;
    await pushFiles(repo, { 'deploy/settings.yaml': SETTINGS });
    await runAll(
      { type: 'fetch', track: 'ops-include', trigger: 'webhook' },
      fixture.jobDeps([track]),
    );
    await kubectl('create', 'configmap', 'made-live', '-n', ns, '--from-literal=owner=ops');
    await kubectl('label', 'configmap', 'made-live', '-n', ns, 'team=ops');
    await kubectl('create', 'configmap', 'not-ops', '-n', ns, '--from-literal=x=1');

    // Act
    const results = await runAll(
      { type: 'drift', track: 'ops-include', trigger: 'schedule' },
      fixture.jobDeps([track]),
    );

    // Assess: written to deploy/<namespace>/configmap-made-live.yaml as a person wrote it.
    const writeBack = results.find((r) => r.type === 'writeBack');
    assert.ok(writeBack?.type === 'writeBack');
    assert.equal(writeBack.result.result, 'written-back', writeBack.result.error);
    assert.deepEqual(writeBack.result.writtenBack, [`ConfigMap/${ns}/made-live`]);
    const file = await show(repo, `main:deploy/${ns}/configmap-made-live.yaml`);
    assert.match(file, /^apiVersion: v1\nkind: ConfigMap\n/);
    assert.match(file, /owner: ops/);
    assert.match(file, /team: ops/);
    assert.doesNotMatch(file, /uid|resourceVersion|creationTimestamp|managedFields/);
    await assert.rejects(show(repo, `main:deploy/${ns}/configmap-not-ops.yaml`));

    // The commit's webhook: the sync adopts it (labelled for the track), changing no value.
    const loop = await runAll(
      { type: 'fetch', track: 'ops-include', trigger: 'webhook' },
      fixture.jobDeps([track]),
    );
    const sync = loop.find((r) => r.type === 'sync');
    assert.ok(sync?.type === 'sync');
    assert.equal(sync.result.result === 'failed', false, sync.result.error);
    const live = JSON.parse(await kubectl('get', 'configmap', 'made-live', '-n', ns, '-o', 'json'));
    assert.equal(live.metadata.labels['driftless.dev/track'], 'ops-include');
    assert.equal(live.data.owner, 'ops');
  });

  it('stops the write-back at Ctrl-C during `driftless drift`: nothing pushed or recorded, exit 130', async () => {
    // Prepare: a change in the cluster to write back; Ctrl-C comes as the write-back begins.
    const { track, repo, ns } = await syncedTrack('ops-stop');
    await patchLive('configmap', 'ops-settings', ns, '{"data":{"value":"tuned-live"}}');
    const headBefore = (await runGit(['--git-dir', repo.bareDir, 'rev-parse', 'main'])).trim();
    const historyBefore = await fixture.deps.state.listHistory('ops-stop');
    const signals = new StopSignals();
    const source = fixture.deps.source;
    const ctrlCAtPush: GitSource = {
      ...source,
      commit: (t, request, call) => {
        signals.emit('SIGINT', 'SIGINT');
        return source.commit!(t, request, call);
      },
    };
    const base = parseConfig(
      'tracks: [{name: x, repository: https://git.example.com/x.git}]',
      'driftless.yaml',
    );
    const context: LocalContext = {
      config: { ...base, tracks: [track] },
      artifacts: fixture.deps.artifacts,
      state: fixture.deps.state,
      source: async () => ctrlCAtPush,
      cluster: async () => fixture.deps.cluster,
      close: () => undefined,
    };
    let stdout = '';

    // Act
    const code = await runCli(['drift', '--track', 'ops-stop', '-o', 'json'], {
      stdout: { write: (chunk: string) => (stdout += chunk) },
      stderr: { write: () => true },
      env: {},
      signals,
      openLocalContext: async () => context,
    });

    // Assess: the drift check ran and reports what it found; the write-back stopped before it
    // sent anything, and says so.
    assert.equal(code, 130);
    const run = JSON.parse(stdout) as {
      drifted: { subject: string }[];
      commit: string | null;
      errors: { subject: string; error: string }[];
      error?: string;
    };
    assert.deepEqual(
      run.drifted.map((d) => d.subject),
      [`ConfigMap/${ns}/ops-settings`],
    );
    assert.deepEqual(run.errors, [{ subject: 'ops-stop', error: 'interrupted by SIGINT' }]);
    assert.equal(run.error, undefined);
    assert.equal(run.commit, null);
    assert.equal(
      (await runGit(['--git-dir', repo.bareDir, 'rev-parse', 'main'])).trim(),
      headBefore,
    );
    const history = await fixture.deps.state.listHistory('ops-stop');
    assert.equal(
      history.filter((entry) => entry.trigger === 'write-back').length,
      historyBefore.filter((entry) => entry.trigger === 'write-back').length,
    );
  });

  it('keeps a push made meanwhile, and lets Git win a field it changed itself', async () => {
    // Prepare
    const { track, repo, ns } = await syncedTrack('ops-race');
    await patchLive('configmap', 'ops-settings', ns, '{"data":{"value":"tuned-live"}}');
    // Someone pushes another file between Driftless' clone and its push.
    let raced = false;
    const source = fixture.deps.source;
    const racing: GitSource = {
      ...source,
      commit: (t, request) =>
        source.commit!(t, {
          ...request,
          edit: async (read) => {
            if (!raced) {
              raced = true;
              await pushFiles(repo, { 'notes.md': 'pushed by someone else\n' });
            }
            return request.edit(read);
          },
        }),
    };

    // Act
    const results = await runAll(
      { type: 'drift', track: 'ops-race', trigger: 'schedule' },
      fixture.jobDeps([track], racing),
    );

    // Assess: retried on the new head, both changes on the branch, nothing forced.
    const writeBack = results.find((r) => r.type === 'writeBack');
    assert.ok(writeBack?.type === 'writeBack');
    assert.equal(writeBack.result.result, 'written-back', writeBack.result.error);
    assert.equal(await show(repo, 'main:notes.md'), 'pushed by someone else\n');
    assert.match(await show(repo, 'main:settings.yaml'), /value: tuned-live/);
    const parents = await runGit(['--git-dir', repo.bareDir, 'log', '--format=%s', '-3', 'main']);
    assert.match(parents.split('\n')[0]!, /^driftless: write back/);
    assert.match(parents.split('\n')[1]!, /notes\.md/);

    // Git changes the same field (not yet synced) while the cluster has another value.
    await pushFiles(repo, {
      'settings.yaml': SETTINGS.replace('value: from-git', 'value: set-in-git'),
    });
    await patchLive('configmap', 'ops-settings', ns, '{"data":{"value":"tuned-again"}}');
    const conflict = await runAll(
      { type: 'drift', track: 'ops-race', trigger: 'schedule' },
      fixture.jobDeps([track]),
    );
    const second = conflict.find((r) => r.type === 'writeBack');
    assert.ok(second?.type === 'writeBack');
    assert.equal(second.result.commit, null);
    assert.match(
      second.result.conflicts.map((c) => `${c.path}: ${c.message}`).join('\n'),
      /\/data\/value: Git changed it .* Git wins/,
    );
    assert.match(await show(repo, 'main:settings.yaml'), /value: set-in-git/);
    // And Git's change reaches the cluster when its revision is synced: both directions meet.
    await runAll(
      { type: 'fetch', track: 'ops-race', trigger: 'webhook' },
      fixture.jobDeps([track]),
    );
    const live = JSON.parse(
      await kubectl('get', 'configmap', 'ops-settings', '-n', ns, '-o', 'json'),
    );
    assert.equal(live.data.value, 'set-in-git');
  });
});
