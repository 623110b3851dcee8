/**
 * What `driftless drift` says about write-backs (two-way sync) that did not
 * go as planned, on the real test cluster and the test Git server (git
 * http-backend): a push the credentials may not make (receive-pack refused,
 * HTTP 403) and a branch that does not exist name the push, the repository
 * and the branch, in the output and in history; objects added to Git and a
 * Secret refused show in the text output even when no drift was found, and
 * a second check before the next sync takes Git's copy as already written;
 * an object kustomize built is refused as such.
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
import { executeJob } from '../../src/sync/execute-job.ts';
import type { Job } from '../../src/sync/jobs.ts';
import type { LocalContext } from '../../src/sync/local-context.ts';
import { runJob } from '../../src/sync/run-job.ts';
import { pushFiles, runGit, type GitRepository } from '../harness/git-server.ts';
import { rendererBinaries, rendererEnvironment } from '../harness/renderers.ts';
import { sharedKubeconfigPath } from '../harness/shared-cluster.ts';
import { controlPlaneBinaries } from '../harness/testbin.ts';
import { TrackFixture } from '../harness/track-fixture.ts';

const run = promisify(execFile);

/** runCli's SIGINT and SIGTERM: never raised here. */
class NoSignals extends EventEmitter implements SignalSource {
  exit(code: number): void {
    throw new Error(`the command quit at once with ${code}`);
  }
}

const SETTINGS = `apiVersion: v1
kind: ConfigMap
metadata:
  name: ops-settings
  labels: {team: ops}
data:
  value: from-git
`;

const RULES =
  'rules: [{apiGroups: [""], resources: [configmaps, secrets], labels: {team: ops}, syncTo: git}]';

describe('write-back errors in `driftless drift`', () => {
  const fixture = new TrackFixture('wberr');
  let kubectl: (...args: string[]) => Promise<string>;

  before(async () => {
    // Renderers for the kustomize track, found as the product finds them.
    Object.assign(process.env, rendererEnvironment(await rendererBinaries()));
    await fixture.start();
    const { kubectl: binary } = await controlPlaneBinaries();
    kubectl = async (...args) =>
      (await run(binary, ['--kubeconfig', sharedKubeconfigPath(), ...args])).stdout;
  });
  after(() => fixture.stop());

  /** A fetch job and the jobs it queues (the sync), as a webhook starts them. */
  async function synced(track: Track): Promise<void> {
    const deps = fixture.jobDeps([track]);
    const job: Job = { type: 'fetch', track: track.name, trigger: 'webhook' };
    const results = [await runJob(job, deps, executeJob)];
    while (deps.queued.length > 0)
      results.push(await runJob(deps.queued.shift()!, deps, executeJob));
    const sync = results.find((r) => r.type === 'sync');
    assert.ok(sync?.type === 'sync' && sync.result.result !== 'failed', JSON.stringify(results));
  }

  /** `driftless drift --track <name> [args]` over the fixture: its exit code and output. */
  async function drift(track: Track, ...args: string[]): Promise<{ code: number; out: string }> {
    const base = parseConfig(
      'tracks: [{name: x, repository: https://git.example.com/x.git}]',
      'driftless.yaml',
    );
    const context: LocalContext = {
      config: { ...base, tracks: [track] },
      artifacts: fixture.deps.artifacts,
      state: fixture.deps.state,
      source: async () => fixture.deps.source,
      cluster: async () => fixture.deps.cluster,
      close: () => undefined,
    };
    let out = '';
    const code = await runCli(['drift', '--track', track.name, ...args], {
      stdout: { write: (chunk: string) => (out += chunk) },
      stderr: { write: () => true },
      env: {},
      signals: new NoSignals(),
      openLocalContext: async () => context,
    });
    return { code, out };
  }

  const head = async (repo: GitRepository, branch = 'main') =>
    (await runGit(['--git-dir', repo.bareDir, 'rev-parse', branch])).trim();

  /** A track over settings.yaml whose ConfigMap was changed in the cluster since. */
  async function changedInCluster(
    name: string,
    extra = '',
  ): Promise<{ track: Track; repo: GitRepository; ns: string }> {
    const made = await fixture.newTrack(name, [RULES, extra].filter(Boolean).join('\n'));
    await pushFiles(made.repo, { 'settings.yaml': SETTINGS });
    await synced(made.track);
    await kubectl(
      'patch',
      'configmap',
      'ops-settings',
      '-n',
      made.ns,
      '--type=merge',
      '-p',
      '{"data":{"value":"from-cluster"}}',
    );
    return made;
  }

  it('names the push, the repository and the branch when the credentials may not write (HTTP 403)', async () => {
    // Prepare: the server lets the credentials read, not push.
    const { track, repo } = await changedInCluster('read-only');
    await runGit(['--git-dir', repo.bareDir, 'config', 'http.receivepack', 'false']);
    const before = await head(repo);

    // Act
    const { code, out } = await drift(track);

    // Assess
    const refused = `pushing the write-back commit to branch "main" of ${repo.url} was refused (HTTP 403): the track's credentials need write access to the repository`;
    assert.equal(code, 3, out);
    assert.ok(out.includes(`\nread-only: ${refused}\n`), out);
    assert.ok(!out.includes(repo.password), 'no credentials in the output');
    assert.equal(await head(repo), before);
    const [entry] = await fixture.deps.state.listHistory('read-only');
    assert.equal(entry?.trigger, 'write-back');
    assert.equal(entry?.result, 'failed');
    assert.equal(entry?.error, refused);
  });

  it('names a write-back branch that does not exist', async () => {
    const { track, repo } = await changedInCluster('no-branch', 'writeBack: {branch: nosuch}');

    const { code, out } = await drift(track, '-o', 'json');

    const missing = `pushing the write-back commit to branch "nosuch" of ${repo.url} failed: the branch does not exist (write-back commits to an existing branch: create it, or set writeBack.branch)`;
    assert.equal(code, 3, out);
    assert.deepEqual(JSON.parse(out).errors, [{ subject: 'no-branch', error: missing }]);
    const [entry] = await fixture.deps.state.listHistory('no-branch');
    assert.equal(entry?.error, missing);
  });

  it('shows objects added to Git and a refused Secret when no drift is found, and adds nothing twice', async () => {
    // Prepare: people make a ConfigMap and a Secret the rule claims; Git has neither.
    const made = await fixture.newTrack(
      'include',
      [RULES, 'restrictNamespace: true', 'adopt: true', 'writeBack: {include: true}'].join('\n'),
    );
    const { track, repo, ns } = made;
    await pushFiles(repo, { 'settings.yaml': SETTINGS });
    await synced(track);
    const applied = await head(repo);
    await kubectl('create', 'configmap', 'made-live', '-n', ns, '--from-literal=owner=ops');
    await kubectl('label', 'configmap', 'made-live', '-n', ns, 'team=ops');
    await kubectl('create', 'secret', 'generic', 'made-secret', '-n', ns, '--from-literal=k=v');
    await kubectl('label', 'secret', 'made-secret', '-n', ns, 'team=ops');

    // Act
    const first = await drift(track);

    // Assess: the commit and the refusal, each said once; exit 3 for the refusal.
    const commit = await head(repo);
    assert.equal(first.code, 3, first.out);
    assert.equal(
      first.out,
      [
        `include: no drift at ${applied.slice(0, 12)}`,
        `written back to Git: ConfigMap/${ns}/made-live in ${commit.slice(0, 12)}`,
        `Secret/${ns}/made-secret: Secrets are never written to Git in plain text; not added`,
        '',
      ].join('\n'),
    );

    // A second check before the next sync finds the ConfigMap new to Git again: Git has it
    // from the first, which is no conflict.
    await kubectl('delete', 'secret', 'made-secret', '-n', ns);
    const second = await drift(track, '-o', 'json');
    assert.equal(second.code, 0, second.out);
    const report = JSON.parse(second.out) as { errors: unknown[]; commit: string | null };
    assert.deepEqual(report.errors, []);
    assert.equal(report.commit, null);
    assert.equal(await head(repo), commit);
  });

  it('refuses an object kustomize built, saying why', async () => {
    // Prepare: the overlay prefixes the base's ConfigMap's name.
    const made = await fixture.newTrack('kz', `${RULES}\nsubPath: kz/overlay`);
    const { track, repo, ns } = made;
    await pushFiles(repo, {
      'kz/base/settings.yaml': SETTINGS,
      'kz/base/kustomization.yaml': 'resources: [settings.yaml]\n',
      'kz/overlay/kustomization.yaml': 'namePrefix: pre-\nresources: [../base]\n',
    });
    await synced(track);
    const before = await head(repo);
    await kubectl(
      'patch',
      'configmap',
      'pre-ops-settings',
      '-n',
      ns,
      '--type=merge',
      '-p',
      '{"data":{"value":"from-cluster"}}',
    );

    // Act
    const { code, out } = await drift(track);

    // Assess
    assert.equal(code, 3, out);
    const lines = out.split('\n');
    assert.ok(
      lines.includes(
        `ConfigMap/${ns}/pre-ops-settings: kustomize builds it from kz/overlay/kustomization.yaml: objects rendered by kustomize or Helm cannot be written back to Git; change it in Git, or give it a syncTo: kubernetes rule`,
      ),
      out,
    );
    assert.doesNotMatch(out, /any more/);
    assert.equal(await head(repo), before);
  });
});
