/**
 * The driftless command end to end, as a user runs it: a child process with a
 * driftless.yaml on disk, the test Git server (basic auth from an env:
 * secret), the real test cluster and the filesystem store.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import {
  pushFiles,
  startGitServer,
  type GitRepository,
  type GitServer,
} from '../harness/git-server.ts';
import {
  createTestNamespace,
  sharedKubeConfig,
  sharedKubeconfigPath,
} from '../harness/shared-cluster.ts';
import { rendererBinaries, rendererEnvironment } from '../harness/renderers.ts';
import { startFaultProxy } from '../harness/fault-proxy.ts';
import { CLI, TSX, runDriftless, type CliRun } from '../harness/driftless-cli.ts';

const configMap = (name: string, value: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  value: "${value}"\n`;

describe('driftless CLI against a real cluster and Git server', () => {
  let git: GitServer;
  let repo: GitRepository;
  let dir: string;
  let ns: string;
  let core: CoreV1Api;
  let env: NodeJS.ProcessEnv;

  const driftless = (...args: string[]): Promise<CliRun> => runDriftless(args, { cwd: dir, env });

  /**
   * Writes `name` in the test folder: the test cluster, and one track a line
   * group (each gets the test namespace and the Git server's basic auth).
   */
  const writeConfig = async (
    name: string,
    tracks: readonly { readonly name: string; readonly url: string; readonly extra?: string[] }[],
  ): Promise<string> => {
    const file = join(dir, name);
    const lines = [
      'clusters:',
      '  - name: test',
      `    kubeconfig: ${sharedKubeconfigPath()}`,
      'tracks:',
      ...tracks.flatMap((track) => [
        `  - name: ${track.name}`,
        `    repository: ${track.url}`,
        `    namespace: ${ns}`,
        '    auth: {type: basic, secret: env:TEST_GIT_CREDENTIALS}',
        ...(track.extra ?? []).map((line) => `    ${line}`),
      ]),
      '',
    ];
    await writeFile(file, lines.join('\n'));
    return file;
  };

  before(async () => {
    const kc = sharedKubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    ns = await createTestNamespace(kc, 'cli');
    git = await startGitServer();
    repo = await git.createRepository('cli');
    dir = await mkdtemp(join(tmpdir(), 'driftless-cli-e2e-'));
    env = {
      ...process.env,
      ...rendererEnvironment(await rendererBinaries()),
      NO_COLOR: '1',
      TEST_GIT_CREDENTIALS: `${git.username}:${git.password}`,
    };
    await writeConfig('driftless.yaml', [{ name: 'app', url: repo.url }]);
  });

  after(async () => {
    await core.deleteNamespace({ name: ns }).catch(() => undefined);
    await git?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('syncs, then finds no differences, shows status and history', async () => {
    // Prepare
    const sha = await pushFiles(repo, {
      'a.yaml': configMap('a', 'one'),
      'b.yaml': configMap('b', 'one'),
    });

    // Act
    const sync = await driftless('sync', '--track', 'app', '-o', 'json');
    const diff = await driftless('diff', '--track', 'app', '-o', 'json');
    const status = await driftless('status', '-o', 'json');
    const history = await driftless('history', '--track', 'app', '-o', 'json');

    // Assess
    assert.equal(sync.code, 0, sync.stderr);
    const synced = JSON.parse(sync.stdout);
    assert.equal(synced.result, 'applied');
    assert.equal(synced.revision, sha);
    assert.deepEqual(synced.changeset, [
      { subject: `ConfigMap/${ns}/a`, action: 'created' },
      { subject: `ConfigMap/${ns}/b`, action: 'created' },
    ]);
    assert.equal(diff.code, 0, diff.stderr);
    assert.deepEqual(JSON.parse(diff.stdout), { track: 'app', revision: sha, changes: [] });
    assert.equal(status.code, 0, status.stderr);
    const [state] = JSON.parse(status.stdout);
    assert.equal(state.track, 'app');
    assert.equal(state.appliedRevision, sha);
    assert.equal(history.code, 0, history.stderr);
    assert.deepEqual(
      JSON.parse(history.stdout).map((h: { revision: string; result: string; trigger: string }) => [
        h.revision,
        h.result,
        h.trigger,
      ]),
      [[sha, 'applied', 'manual']],
    );
  });

  it('deleting twice records one deletion; history and status still read a track deleted and then removed from the config', async () => {
    // Prepare: a track synced, then deleted leaving its ConfigMap (Orphan).
    const repository = await git.createRepository('cli-gone');
    const sha = await pushFiles(repository, { 'gone.yaml': configMap('gone', 'one') });
    const config = await writeConfig('gone.yaml', [{ name: 'gone', url: repository.url }]);
    const synced = await driftless('sync', '-c', config, '--track', 'gone');
    const orphaned = await driftless(
      'delete',
      '-c',
      config,
      '--track',
      'gone',
      '--policy',
      'Orphan',
    );
    assert.equal(synced.code, 0, synced.stderr);
    assert.equal(orphaned.code, 0, orphaned.stderr);

    // Act: deleted again; then, as the docs say, removed from the config.
    const again = await driftless('delete', '-c', config, '--track', 'gone', '-o', 'json');
    const removed = await writeConfig('gone-removed.yaml', [{ name: 'app', url: repo.url }]);
    const history = await driftless('history', '-c', removed, '--track', 'gone', '-o', 'json');
    const status = await driftless('status', '-c', removed, '--track', 'gone');
    const sync = await driftless('sync', '-c', removed, '--track', 'gone');

    // Assess
    assert.equal(again.code, 0, again.stderr);
    const result = JSON.parse(again.stdout);
    assert.equal(result.unchanged, true);
    assert.match(result.note, /^the track has no state \(no inventory\): nothing was collected/);
    assert.equal(
      (await core.readNamespacedConfigMap({ name: 'gone', namespace: ns })).data?.value,
      'one',
    );
    assert.equal(history.code, 0, history.stderr);
    assert.deepEqual(
      JSON.parse(history.stdout).map((h: { revision: string; result: string }) => [
        h.revision,
        h.result,
      ]),
      [
        [sha, 'deleted'],
        [sha, 'applied'],
      ],
    );
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /^gone: not in .*gone-removed\.yaml and has no state \(deleted\)/);
    assert.equal(sync.code, 2);
    assert.match(sync.stderr, /has no track "gone"/);
  });

  it('diffs a hand edit and a file removed from Git, exiting 1, and changes nothing', async () => {
    // Prepare
    await core.patchNamespacedConfigMap({
      name: 'a',
      namespace: ns,
      body: [{ op: 'replace', path: '/data/value', value: 'edited' }],
    });
    const sha = await pushFiles(repo, { 'b.yaml': null, 'c.yaml': configMap('c', 'new') });

    // Act
    const diff = await driftless('diff', '--track', 'app', '-o', 'json');
    const text = await driftless('diff', '--track', 'app');

    // Assess
    assert.equal(diff.code, 1, diff.stderr);
    const document = JSON.parse(diff.stdout);
    assert.equal(document.revision, sha);
    assert.deepEqual(
      document.changes.map((c: { subject: string; action: string }) => [c.subject, c.action]),
      [
        [`ConfigMap/${ns}/a`, 'update'],
        [`ConfigMap/${ns}/c`, 'create'],
        [`ConfigMap/${ns}/b`, 'prune'],
      ],
    );
    assert.match(document.changes[0].diff, /^- {2}value: edited\n\+ {2}value: one$/m);
    assert.equal(text.code, 1);
    assert.match(text.stdout, /1 to create, 1 to update, 1 to prune/);
    const live = await core.readNamespacedConfigMap({ name: 'a', namespace: ns });
    assert.equal(live.data?.value, 'edited', 'diff must not change the cluster');
    await core.readNamespacedConfigMap({ name: 'b', namespace: ns });
  });

  it('syncs 40 objects with no warning from Node on the terminal', async () => {
    // Prepare: more requests in flight than Node's default of 10 listeners per signal
    const many = await git.createRepository('cli-many');
    const names = Array.from({ length: 40 }, (_, i) => `many-${i}`);
    await pushFiles(
      many,
      Object.fromEntries(names.map((name) => [`${name}.yaml`, configMap(name, 'one')])),
    );
    const config = await writeConfig('many.yaml', [{ name: 'many', url: many.url }]);

    // Act
    const sync = await driftless('sync', '-c', config, '--track', 'many');

    // Assess
    assert.equal(sync.code, 0, sync.stderr);
    assert.match(sync.stdout, /40 objects: 40 created/);
    assert.doesNotMatch(sync.stderr, /Warning|\(node:\d+\)/);
  });

  it('renders the current revision as YAML', async () => {
    // Act
    const result = await driftless('render', '--track', 'app');

    // Assess
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^---\n# Source: a\.yaml:1\napiVersion: v1\nkind: ConfigMap\n/);
    assert.match(result.stdout, /name: c\n/);
    assert.doesNotMatch(result.stdout, /name: b\n/);
  });

  it('renders, syncs and diffs a kustomize overlay and a Helm chart like plain manifests', async () => {
    // Prepare: a repository of its own, a config with one track per renderer.
    const rendered = await git.createRepository('cli-renderers');
    await pushFiles(rendered, {
      'base/kustomization.yaml': 'resources: [settings.yaml]\n',
      'base/settings.yaml': configMap('settings', 'base'),
      'overlay/kustomization.yaml': [
        'resources: [../base]',
        'namePrefix: prod-',
        'patches:',
        '  - target: {kind: ConfigMap}',
        '    patch: |-',
        '      - {op: replace, path: /data/value, value: prod}',
        '',
      ].join('\n'),
      'chart/Chart.yaml': 'apiVersion: v2\nname: greeter\nversion: 0.1.0\n',
      'chart/templates/_name.tpl':
        '{{- define "greeter.name" -}}{{ .Release.Name }}-greeting{{- end }}\n',
      'chart/templates/greeting.yaml': [
        'apiVersion: v1',
        'kind: ConfigMap',
        'metadata: {name: {{ include "greeter.name" . }}}',
        'data: {value: {{ .Values.greeting | quote }}}',
        '',
      ].join('\n'),
      'chart/values.yaml': 'greeting: hello\n',
    });
    const config = await writeConfig('renderers.yaml', [
      { name: 'cli-overlay', url: rendered.url, extra: ['subPath: overlay'] },
      {
        name: 'cli-chart',
        url: rendered.url,
        extra: ['helm: {chart: chart, values: {greeting: bonjour}}'],
      },
    ]);

    // Act
    const overlay = await driftless('render', '-c', config, '--track', 'cli-overlay');
    const chart = await driftless('render', '-c', config, '--track', 'cli-chart');
    const sync = await driftless('sync', '-c', config);
    const diff = await driftless('diff', '-c', config, '--track', 'cli-chart');

    // Assess
    assert.equal(overlay.code, 0, overlay.stderr);
    assert.match(overlay.stdout, /# Source: overlay\/kustomization\.yaml:\d+\n/);
    assert.match(overlay.stdout, /name: prod-settings\n/);
    assert.match(overlay.stdout, /value: prod\n/);
    assert.equal(chart.code, 0, chart.stderr);
    assert.match(chart.stdout, /# Source: chart\/templates\/greeting\.yaml:1\n/);
    assert.match(chart.stdout, /name: cli-chart-greeting\n/);
    assert.equal(sync.code, 0, sync.stderr + sync.stdout);
    const prod = await core.readNamespacedConfigMap({ name: 'prod-settings', namespace: ns });
    assert.equal(prod.data?.value, 'prod');
    const greeting = await core.readNamespacedConfigMap({
      name: 'cli-chart-greeting',
      namespace: ns,
    });
    assert.equal(greeting.data?.value, 'bonjour');
    assert.equal(diff.code, 0, diff.stdout + diff.stderr);
  });
  /**
   * A track of its own repository holding one Deployment `name`, which never becomes
   * available on this cluster (no nodes), waiting 10 minutes for its health.
   */
  const slowTrack = async (name: string) => {
    const repository = await git.createRepository(`cli-${name}`);
    const sha = await pushFiles(repository, {
      [`${name}.yaml`]: [
        'apiVersion: apps/v1',
        'kind: Deployment',
        `metadata: {name: ${name}}`,
        'spec:',
        `  selector: {matchLabels: {app: ${name}}}`,
        '  template:',
        `    metadata: {labels: {app: ${name}}}`,
        `    spec: {containers: [{name: ${name}, image: registry.invalid/${name}:1}]}`,
        '',
      ].join('\n'),
    });
    const config = await writeConfig(`${name}.yaml`, [
      { name, url: repository.url, extra: ['wait: true', 'timeout: 10m'] },
    ]);
    return { sha, config };
  };

  /** Starts `driftless sync -o json` of the slow track `name`; returns once it applied its Deployment. */
  const syncUntilApplied = async (name: string, config: string) => {
    const apps = sharedKubeConfig().makeApiClient(AppsV1Api);
    const child = spawn(
      process.execPath,
      ['--import', TSX, CLI, 'sync', '-c', config, '--track', name, '-o', 'json'],
      { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const output = { stdout: '', stderr: '' };
    child.stdout.setEncoding('utf8').on('data', (text: string) => (output.stdout += text));
    child.stderr.setEncoding('utf8').on('data', (text: string) => (output.stderr += text));
    const closed = once(child, 'close') as Promise<[number | null, NodeJS.Signals | null]>;
    for (let attempt = 0; ; attempt++) {
      const found = await apps
        .readNamespacedDeployment({ name, namespace: ns })
        .catch(() => undefined);
      if (found !== undefined) break;
      assert.ok(attempt < 600, `the sync never applied the Deployment: ${output.stderr}`);
      await sleep(100);
    }
    return { child, output, closed };
  };

  it('stops cleanly at Ctrl-C: exit 130, the outcome recorded, the track free at once', async () => {
    // Prepare
    const { sha, config } = await slowTrack('web');
    const { child, output, closed } = await syncUntilApplied('web', config);

    // Act: Ctrl-C while the sync waits for the Deployment.
    child.kill('SIGINT');
    const [code] = await closed;
    const check = await driftless('drift', '-c', config, '--track', 'web', '--detect-only');
    const status = await driftless('status', '-c', config, '-o', 'json');
    const history = await driftless('history', '-c', config, '--track', 'web', '-o', 'json');

    // Assess: the signal's exit code and the result so far.
    assert.equal(code, 130, output.stderr);
    assert.match(output.stderr, /driftless: SIGINT: stopping/);
    const result = JSON.parse(output.stdout);
    assert.equal(result.result, 'applied');
    assert.deepEqual(result.changeset, [{ subject: `Deployment/${ns}/web`, action: 'created' }]);
    // The lease was given back: a drift check of the track runs at once.
    assert.equal(check.code, 0, check.stdout + check.stderr);
    assert.doesNotMatch(check.stdout + check.stderr, /another apply job runs/);
    const [state] = JSON.parse(status.stdout);
    const healthy = state.conditions.find((c: { type: string }) => c.type === 'Healthy');
    assert.equal(healthy.reason, 'HealthCheckCanceled');
    assert.match(healthy.message, /cancelled: interrupted by SIGINT$/);
    assert.deepEqual(
      JSON.parse(history.stdout).map((h: { revision: string; result: string }) => [
        h.revision,
        h.result,
      ]),
      [[sha, 'applied']],
    );
  });
  it('frees the track of a sync killed with kill -9 for the next command on this machine', async () => {
    // Prepare
    const { config } = await slowTrack('api');
    const { child, closed } = await syncUntilApplied('api', config);

    // Act: SIGKILL while the sync waits for the Deployment: it gives nothing back.
    child.kill('SIGKILL');
    const [, signal] = await closed;
    const status = await driftless('status', '-c', config, '--track', 'api', '-o', 'json');
    const check = await driftless('drift', '-c', config, '--track', 'api', '--detect-only');

    // Assess: not busy, though the lease was never given back and lapses only in 21 minutes.
    assert.equal(signal, 'SIGKILL');
    assert.equal(JSON.parse(status.stdout).busy, null, status.stdout);
    assert.equal(check.code, 0, check.stdout + check.stderr);
    assert.doesNotMatch(check.stdout + check.stderr, /another apply job runs/);
  });
  it('stops at Ctrl-C while the Git host hangs, recording nothing', async () => {
    // Prepare: the track's Git host accepts requests and never answers them.
    const repository = await git.createRepository('cli-hang');
    await pushFiles(repository, { 'a.yaml': configMap('hang-a', 'one') });
    const proxy = await startFaultProxy(git.url);
    proxy.setFault('hang');
    try {
      const url = repository.url.replace(git.url, proxy.url);
      const config = await writeConfig('hang.yaml', [{ name: 'hang', url }]);
      const child = spawn(
        process.execPath,
        ['--import', TSX, CLI, 'sync', '-c', config, '--track', 'hang'],
        { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
      child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
      const closed = once(child, 'close') as Promise<[number | null]>;

      // Act: Ctrl-C once the Git request hangs (the default idle timeout is 60 s).
      for (let attempt = 0; proxy.injected === 0; attempt++) {
        assert.ok(attempt < 600, `the sync never asked the Git host: ${stderr}`);
        await sleep(100);
      }
      child.kill('SIGINT');
      const [code] = await closed;
      const status = await driftless('status', '-c', config, '--track', 'hang', '-o', 'json');
      const history = await driftless('history', '-c', config, '--track', 'hang', '-o', 'json');

      // Assess: stopped, not failed: nothing in status or history.
      assert.equal(code, 130, stderr);
      assert.match(stdout, /hang: failed: interrupted by SIGINT/);
      assert.deepEqual(JSON.parse(status.stdout).conditions, [], status.stdout);
      assert.deepEqual(JSON.parse(history.stdout), []);
    } finally {
      await proxy.stop();
    }
  });
});
