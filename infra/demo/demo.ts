/**
 * `npm run demo`: Driftless end to end on this machine, with embedded defaults.
 *
 * Starts the local test cluster and builds kustomize and helm (the first time),
 * makes a local Git repository from ./manifests/v1 plus a kustomize overlay
 * (./manifests/kustomize) and a Helm chart (./manifests/chart), each a track,
 * shows what the overlay renders to, syncs them with `driftless sync`, then
 * commits ./manifests/v2 (one ConfigMap changed, one removed) and syncs again,
 * showing the update and the prune. A fourth track holds a Secret encrypted
 * with SOPS for an age key made on the spot, and `${VARIABLES}` from
 * `substitute:` and a `substituteFrom` file: `render` shows them still
 * encrypted, the cluster gets the values, `diff` masks them. The cluster
 * keeps running afterwards: `npm run cluster:down` stops it. Every commit is
 * signed with an SSH key made on the spot, and the first track deploys only
 * commits signed by it (`verify:`). Last, a sync waiting for a Deployment is
 * stopped with Ctrl-C: it records what it did and gives the track back; one killed with
 * `kill -9` leaves its lease, which the next command on the same machine takes at once.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FsStore } from '../../src/store/fs-store.ts';
import { updateTrackState } from '../../src/sync/track-state.ts';
import { CLUSTER_DIR, up } from '../../test/harness/cluster-cli.ts';
import { pushFiles, runGit, startGitServer } from '../../test/harness/git-server.ts';
import { freePort } from '../../test/harness/processes.ts';
import { rendererBinaries, rendererEnvironment } from '../../test/harness/renderers.ts';
import { generateAgeKey, sopsEncrypt } from '../../test/harness/sops.ts';
import { REPO_ROOT } from '../../test/harness/testbin.ts';

const MANIFESTS = fileURLToPath(new URL('./manifests/', import.meta.url));
const DEMO_DIR = join(REPO_ROOT, '.driftless/demo');
const REPO = join(DEMO_DIR, 'repo');
const CONFIG = join(DEMO_DIR, 'driftless.yaml');
const KUBECONFIG = join(CLUSTER_DIR, 'kubeconfig');
const SIGNING_KEY = join(DEMO_DIR, 'signing-key');

function step(title: string): void {
  console.log(`\n\u001b[1m== ${title}\u001b[0m`);
}

function git(...args: string[]): string {
  return execFileSync(
    'git',
    [
      '-c',
      'user.name=Driftless Demo',
      '-c',
      'user.email=demo@driftless.dev',
      '-c',
      'init.defaultBranch=main',
      // Every demo commit is signed with an SSH key made on the spot; the demo track verifies it.
      '-c',
      'gpg.format=ssh',
      '-c',
      `user.signingkey=${SIGNING_KEY}`,
      '-c',
      'commit.gpgsign=true',
      ...args,
    ],
    { cwd: REPO, encoding: 'utf8' },
  ).trim();
}

/** Replaces the repository's deploy/ with one manifest version and commits it. */
function commitManifests(version: 'v1' | 'v2', message: string): string {
  rmSync(join(REPO, 'deploy'), { recursive: true, force: true });
  cpSync(join(MANIFESTS, version), join(REPO, 'deploy'), { recursive: true });
  // The overlay and the chart stay as they are across versions.
  cpSync(join(MANIFESTS, 'kustomize'), join(REPO, 'kustomize'), { recursive: true });
  cpSync(join(MANIFESTS, 'chart'), join(REPO, 'chart'), { recursive: true });
  cpSync(join(MANIFESTS, 'team'), join(REPO, 'team'), { recursive: true });
  git('add', '--all');
  git('commit', '--quiet', '-m', message);
  return git('rev-parse', 'HEAD');
}

/** How the demo runs the driftless CLI: from source, as a user would run `driftless`. */
function cliProcess(args: readonly string[], extraEnv: Record<string, string> = {}) {
  console.log(`$ driftless ${args.join(' ')}`);
  return {
    args: ['--import', 'tsx', join(REPO_ROOT, 'src/cli/run.ts'), ...args],
    options: {
      stdio: 'inherit' as const,
      cwd: DEMO_DIR,
      env: {
        ...process.env,
        ...rendererEnvironment(renderers),
        DEMO_AGE_KEY: ageKey.identity,
        ...extraEnv,
      },
    },
  };
}

/** Runs the CLI and returns its exit code. */
function driftless(...args: string[]): number {
  const run = cliProcess(args);
  return spawnSync(process.execPath, run.args, run.options).status ?? 1;
}

/**
 * The same, without blocking this process: for steps whose Git server runs
 * in this process and must answer the CLI meanwhile.
 */
async function driftlessAsync(
  extraEnv: Record<string, string>,
  ...args: string[]
): Promise<number> {
  const run = cliProcess(args, extraEnv);
  const child = spawn(process.execPath, run.args, run.options);
  return new Promise((resolve) => child.once('close', (code) => resolve(code ?? 1)));
}

function kubectl(...args: string[]): void {
  console.log(`$ kubectl ${args.join(' ')}`);
  spawnSync(join(CLUSTER_DIR, 'bin/kubectl'), ['--kubeconfig', KUBECONFIG, ...args], {
    stdio: 'inherit',
  });
}

/**
 * What a person does in the dashboard, through its JSON API: the overview,
 * then a rollback of `demo` to its previous revision as alice, recorded in
 * history with her name, then unpin. True when all of it worked.
 */
async function dashboardStep(url: string, userAndPassword: string): Promise<boolean> {
  const deadline = Date.now() + 60_000;
  const get = async (path: string): Promise<unknown> => (await fetch(`${url}${path}`)).json();
  while (Date.now() < deadline) {
    if ((await fetch(`${url}/healthz`).catch(() => undefined))?.ok) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  console.log(`open ${url}/ in a browser (read access is open; actions need alice)`);
  const rows = (await get('/api/overview')) as {
    status: { track: string; appliedRevision: string | null };
    ready: string;
    appliedCommit: { message: string } | null;
  }[];
  for (const row of rows) {
    console.log(
      `  ${row.status.track.padEnd(14)} ready=${row.ready.padEnd(7)} ${row.status.appliedRevision?.slice(0, 12) ?? '-'} ${row.appliedCommit?.message.split('\n')[0] ?? ''}`,
    );
  }
  const act = async (action: string, body: object = {}) => {
    const response = await fetch(`${url}/api/tracks/demo/${action}`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Authorization: `Basic ${Buffer.from(userAndPassword).toString('base64')}`,
      },
      body: JSON.stringify(body),
    });
    console.log(`POST /api/tracks/demo/${action} -> ${response.status} ${await response.text()}`);
    return response.status === 202;
  };
  const anonymous = await fetch(`${url}/api/tracks/demo/sync`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: '{}',
  });
  console.log(`an action without signing in -> ${anonymous.status}`);
  if (!(await act('rollback', { previous: true }))) return false;
  while (Date.now() < deadline) {
    const detail = (await get('/api/tracks/demo')) as {
      history: { result: string; trigger: string; by?: string; revision: string }[];
    };
    const entry = detail.history.find((h) => h.trigger === 'rollback' && h.by === 'alice');
    if (entry) {
      console.log(`history: ${entry.result} ${entry.revision.slice(0, 12)} by ${entry.by}`);
      return (await act('unpin')) && anonymous.status === 401;
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  console.log('the rollback did not show in history within a minute');
  return false;
}

step('Local cluster, kustomize and helm (built from Go modules the first time: several minutes)');
await up();
const renderers = await rendererBinaries();
const ageKey = await generateAgeKey();

step('A local Git repository with manifests/v1');
rmSync(DEMO_DIR, { recursive: true, force: true });
mkdirSync(REPO, { recursive: true });
execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'demo', '-f', SIGNING_KEY]);
git('init', '--quiet');
// Secrets in Git: one encrypted with SOPS for the demo's age key, one filled from substituteFrom.
mkdirSync(join(REPO, 'secrets'), { recursive: true });
writeFileSync(
  join(REPO, 'secrets/db.enc.yaml'),
  await sopsEncrypt(
    'apiVersion: v1\nkind: Secret\nmetadata:\n  name: demo-db\nstringData:\n  password: correct-horse-battery\n',
    { format: 'yaml', age: [ageKey.recipient], encryptedRegex: '^(data|stringData)$' },
  ),
);
writeFileSync(
  join(REPO, 'secrets/app.yaml'),
  [
    'apiVersion: v1',
    'kind: ConfigMap',
    'metadata: {name: demo-cluster}',
    'data: {cluster: "${CLUSTER}", region: "${REGION:=local-1}"}',
    '---',
    'apiVersion: v1',
    'kind: Secret',
    'metadata: {name: demo-api-token}',
    'stringData: {token: "${API_TOKEN}"}',
    '',
  ].join('\n'),
);
writeFileSync(join(DEMO_DIR, 'vars.env'), 'API_TOKEN=token-from-substitutefrom\n');
const first = commitManifests('v1', 'Deploy web, settings and feature flags');
console.log(`repository ${REPO} at ${first}`);
writeFileSync(
  CONFIG,
  [
    '# Written by the demo: one track following the local repository.',
    'store: {type: fs, path: store}',
    'clusters:',
    `  - {name: local, kubeconfig: ${KUBECONFIG}}`,
    'tracks:',
    '  - name: demo',
    `    repository: ${REPO}`,
    '    subPath: deploy',
    '    # Only commits signed by the demo key are deployed.',
    `    verify: {keys: [file:${SIGNING_KEY}.pub]}`,
    '  # A kustomize overlay: built with the real kustomize because a kustomization.yaml is there.',
    '  - name: demo-api',
    `    repository: ${REPO}`,
    '    subPath: kustomize/overlays/prod',
    '    dependsOn: [demo]',
    '  # A Helm chart in the repository, rendered with the real helm for this cluster.',
    '  - name: demo-greeter',
    `    repository: ${REPO}`,
    '    namespace: demo',
    '    dependsOn: [demo]',
    '    helm: {chart: chart, values: {greeting: hello from Driftless}}',
    '  # A Secret encrypted with SOPS (decrypted in the apply step only) and ${VARIABLES}.',
    '  - name: demo-secrets',
    `    repository: ${REPO}`,
    '    subPath: secrets',
    '    namespace: demo',
    '    dependsOn: [demo]',
    '    decryption: {provider: sops, keys: [env:DEMO_AGE_KEY]}',
    '    substitute: {CLUSTER: local}',
    '    substituteFrom: [{secret: file:vars.env}]',
    '# More tracks, added at run time: Faros GitTracks in the cluster (here in a local repository).',
    'tracksFrom:',
    '  - {cluster: local, gitTracks: true, allowLocalRepositories: true}',
    '',
  ].join('\n'),
);
console.log(`config ${CONFIG}`);

step('What the overlay renders to (kustomize build, as sync will apply it)');
let failed = driftless('render', '--track', 'demo-api') !== 0;

step('First sync: everything is created (plain manifests, the overlay, the chart)');
failed = driftless('sync') !== 0 || failed;
kubectl('get', 'deployments,services,configmaps', '-n', 'demo', '-L', 'driftless.dev/track');

step('Secrets: Git and the artifact hold ciphertexts and ${API_TOKEN}; the cluster the values');
failed = driftless('render', '--track', 'demo-secrets') !== 0 || failed;
kubectl('get', 'secret', 'demo-db', '-n', 'demo', '-o', 'jsonpath={.data.password}{"\\n"}');
kubectl('get', 'configmap', 'demo-cluster', '-n', 'demo', '-o', 'jsonpath={.data}{"\\n"}');
console.log('A hand edit of the Secret, then diff: values masked, the change still visible');
kubectl(
  'patch',
  'secret',
  'demo-db',
  '-n',
  'demo',
  '--type=merge',
  '-p',
  '{"stringData":{"password":"changed-by-hand"}}',
);
driftless('diff', '--track', 'demo-secrets');

step('Second sync of the same commit: nothing to do but the hand edit');
failed = driftless('sync') !== 0 || failed;

step('Commit manifests/v2: settings changed, feature-flags removed');
commitManifests('v2', 'Change the greeting, drop feature flags');
failed = driftless('sync') !== 0 || failed;
driftless('status', '--track', 'demo');
driftless('history', '--track', 'demo');

step('Hand edits: a label added with kubectl is drift too, and drift correction removes it');
kubectl('label', 'configmap', 'settings', '-n', 'demo', 'edited-by=hand');
driftless('status', '--track', 'demo', '--objects');
failed = driftless('drift', '--track', 'demo') !== 0 || failed;
kubectl('get', 'configmap', 'settings', '-n', 'demo', '--show-labels');

step('Suspend and resume: stored state, no config change (in AWS: the rollback function)');
failed = driftless('suspend', '--track', 'demo') !== 0 || failed;
console.log('A suspended track refuses a sync by name (exit 2):');
failed = driftless('sync', '--track', 'demo') !== 2 || failed;
failed = driftless('resume', '--track', 'demo') !== 0 || failed;

step('A track added with kubectl, no config change: a Faros GitTrack (tracksFrom)');
kubectl('apply', '-f', join(REPO_ROOT, 'infra/crds/gittrack.yaml'));
kubectl('wait', '--for=condition=Established', 'crd/gittracks.faros.pusher.com');
const gitTrackFile = join(DEMO_DIR, 'gittrack.yaml');
writeFileSync(
  gitTrackFile,
  [
    'apiVersion: faros.pusher.com/v1alpha1',
    'kind: GitTrack',
    'metadata: {name: demo-team, namespace: demo}',
    `spec: {repository: ${REPO}, reference: main, subPath: team}`,
    '',
  ].join('\n'),
);
kubectl('apply', '-f', gitTrackFile);
console.log('sync reads the GitTracks first, syncs their tracks too, and writes each .status:');
failed = driftless('sync') !== 0 || failed;
kubectl('get', 'gittracks', '-n', 'demo');
kubectl('get', 'configmap', 'team-settings', '-n', 'demo');

step('Deleting the GitTrack collects its objects first (finalizer driftless.dev/gc)');
kubectl('delete', 'gittrack', 'demo-team', '-n', 'demo', '--wait=false');
failed = driftless('sync') !== 0 || failed;
kubectl('get', 'gittracks,configmaps', '-n', 'demo');

step('Notifications: driftless serve tells a signed webhook receiver what happened');
// The same events go to Slack, Teams, commit statuses, SNS or EventBridge (docs/configuration.md).
const hookKey = 'demo-hook-key';
const heard: string[] = [];
const receiver = createServer((request, response) => {
  let body = '';
  request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
  request.on('end', () => {
    const expected = `sha256=${createHmac('sha256', hookKey).update(body).digest('hex')}`;
    const signed = request.headers['x-driftless-signature'] === expected;
    const event = JSON.parse(body) as { track: string; event: string; revision: string | null };
    heard.push(event.event);
    console.log(
      `receiver got: ${event.track} ${event.event} ${event.revision?.slice(0, 12) ?? ''} (signature ${signed ? 'ok' : 'WRONG'})`,
    );
    response.writeHead(204).end();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
writeFileSync(
  CONFIG,
  `${readFileSync(CONFIG, 'utf8')}notifications:
  - {name: demo-events, type: webhook, url: env:DEMO_HOOK_URL, secret: env:DEMO_HOOK_KEY, tracks: [demo], events: [fetched, applied, failed]}
`,
);
const revision = commitManifests('v1', 'Back to v1');
console.log(`committed ${revision.slice(0, 12)}; serve polls every track when it starts`);
const servePort = await freePort();
const serve = cliProcess(['serve', '--port', String(servePort)], {
  DEMO_HOOK_URL: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/events`,
  DEMO_HOOK_KEY: hookKey,
});
// Its JSON log lines would drown the receiver's; the receiver shows what serve did.
const serving = spawn(process.execPath, serve.args, { ...serve.options, stdio: 'ignore' });
const deadline = Date.now() + 120_000;
while (!heard.includes('applied') && !heard.includes('failed') && Date.now() < deadline) {
  await new Promise((resolve) => setTimeout(resolve, 200));
}
failed = !heard.includes('applied') || failed;
serving.kill('SIGTERM');
await new Promise((resolve) => serving.once('close', resolve));
receiver.close();

step('Dashboard: driftless serve shows every track at / and rolls back for a signed-in user');
// The same API and UI as the dashboard function in AWS (docs/dashboard.md).
writeFileSync(
  CONFIG,
  `${readFileSync(CONFIG, 'utf8')}dashboard:
  readAccess: open
  users: [{name: alice, password: env:DEMO_DASHBOARD_PASSWORD}]
`,
);
const dashboardPort = await freePort();
const dashboardUrl = `http://127.0.0.1:${dashboardPort}`;
const dashboardServe = cliProcess(['serve', '--port', String(dashboardPort)], {
  DEMO_DASHBOARD_PASSWORD: 'demo-password',
});
const dashboard = spawn(process.execPath, dashboardServe.args, {
  ...dashboardServe.options,
  stdio: 'ignore',
});
try {
  failed = !(await dashboardStep(dashboardUrl, 'alice:demo-password')) || failed;
} finally {
  dashboard.kill('SIGTERM');
  await new Promise((resolve) => dashboard.once('close', resolve));
}

step('Two-way sync: a change made with kubectl is committed back to Git (syncTo: git)');
// Write-back pushes to a remote repository: a Git server over HTTP for this step.
const gitServer = await startGitServer();
try {
  const opsRepo = await gitServer.createRepository('ops');
  await pushFiles(opsRepo, {
    'ops.yaml': [
      '# The ops team tunes these in the cluster; Driftless commits their changes here.',
      'apiVersion: v1',
      'kind: ConfigMap',
      'metadata: {name: ops-settings, namespace: demo}',
      'data:',
      '  level: info # the default',
      '',
    ].join('\n'),
  });
  writeFileSync(
    CONFIG,
    readFileSync(CONFIG, 'utf8').replace(
      'tracksFrom:',
      [
        '  # Two-way: the cluster drives the ConfigMaps of this track (syncTo: git, as gitops-controller).',
        '  - name: demo-ops',
        `    repository: ${opsRepo.url}`,
        '    auth: {type: basic, secret: env:DEMO_GIT_CREDENTIALS}',
        '    rules: [{apiGroups: [""], resources: [configmaps], syncTo: git}]',
        '    writeBack: {author: {name: Driftless Demo, email: demo@driftless.local}}',
        'tracksFrom:',
      ].join('\n'),
    ),
  );
  const credentials = { DEMO_GIT_CREDENTIALS: `${opsRepo.username}:${opsRepo.password}` };
  failed = (await driftlessAsync(credentials, 'sync', '--track', 'demo-ops')) !== 0 || failed;
  kubectl(
    'patch',
    'configmap',
    'ops-settings',
    '-n',
    'demo',
    '--type=merge',
    '-p',
    '{"data":{"level":"debug"}}',
  );
  failed = (await driftlessAsync(credentials, 'drift', '--track', 'demo-ops')) !== 0 || failed;
  console.log('$ git show main:ops.yaml   # the change, in its own file, the comments kept');
  process.stdout.write(await runGit(['--git-dir', opsRepo.bareDir, 'show', 'main:ops.yaml']));
  console.log(
    await runGit(['--git-dir', opsRepo.bareDir, 'log', '-1', '--format=%an: %s', 'main']),
  );
} finally {
  await gitServer.stop();
}

step('Ctrl-C during a sync: what it did is recorded, and the track is free at once');
// A Deployment that never becomes available here (the test cluster has no nodes), on a track
// that waits 10 minutes for health; a config and store of their own, outside the steps above.
mkdirSync(join(REPO, 'waiting'), { recursive: true });
writeFileSync(
  join(REPO, 'waiting/slow.yaml'),
  [
    'apiVersion: apps/v1',
    'kind: Deployment',
    'metadata: {name: slow, namespace: demo}',
    'spec:',
    '  selector: {matchLabels: {app: slow}}',
    '  template:',
    '    metadata: {labels: {app: slow}}',
    '    spec: {containers: [{name: slow, image: registry.invalid/slow:1}]}',
    '',
  ].join('\n'),
);
git('add', '--all');
git('commit', '--quiet', '-m', 'A Deployment that takes its time');
writeFileSync(
  join(DEMO_DIR, 'interrupt.yaml'),
  [
    'store: {type: fs, path: store-interrupt}',
    'clusters:',
    `  - {name: local, kubeconfig: ${KUBECONFIG}}`,
    'tracks:',
    '  - name: demo-slow',
    `    repository: ${REPO}`,
    '    subPath: waiting',
    '    wait: true',
    '    timeout: 10m',
    '',
  ].join('\n'),
);
{
  const run = cliProcess(['sync', '-c', 'interrupt.yaml', '--track', 'demo-slow']);
  const child = spawn(process.execPath, run.args, run.options);
  const closed = new Promise<number | null>((resolve) => child.once('close', resolve));
  // Ctrl-C once the Deployment is applied, while the sync waits for it to become available.
  for (let waited = 0; waited < 60_000; waited += 200) {
    const found = spawnSync(join(CLUSTER_DIR, 'bin/kubectl'), [
      ...['--kubeconfig', KUBECONFIG, 'get', 'deployment', 'slow', '-n', 'demo'],
    ]);
    if (found.status === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  console.log('(Ctrl-C)');
  child.kill('SIGINT');
  const code = await closed;
  console.log(`exit code ${code}`);
  failed = code !== 130 || failed;
}
driftless('status', '-c', 'interrupt.yaml', '--track', 'demo-slow');
// The lease was given back: another command on the track runs at once, not 10 minutes later.
failed =
  driftless('drift', '-c', 'interrupt.yaml', '--track', 'demo-slow', '--detect-only') !== 0 ||
  failed;

step('kill -9 during a sync: the next command on this machine takes the track at once');
{
  const run = cliProcess(['sync', '-c', 'interrupt.yaml', '--track', 'demo-slow']);
  const child = spawn(process.execPath, run.args, run.options);
  const closed = new Promise<NodeJS.Signals | null>((resolve) =>
    child.once('close', (_code, signal) => resolve(signal)),
  );
  // `status -o json` says which job holds the track, and which process runs it.
  const busyOf = (): unknown => {
    const status = spawnSync(
      process.execPath,
      [
        ...run.args.slice(0, 3),
        'status',
        '-c',
        'interrupt.yaml',
        '--track',
        'demo-slow',
        '-o',
        'json',
      ],
      { cwd: DEMO_DIR, env: run.options.env, encoding: 'utf8' },
    );
    return status.status === 0 ? (JSON.parse(status.stdout) as { busy: unknown }).busy : null;
  };
  let busy: unknown = null;
  for (let waited = 0; busy === null && waited < 60_000; waited += 300) {
    await new Promise((resolve) => setTimeout(resolve, 300));
    busy = busyOf();
  }
  console.log(`busy: ${JSON.stringify(busy)}`);
  console.log(`$ kill -9 ${child.pid}`);
  child.kill('SIGKILL');
  console.log(`ended by ${await closed}`);
  failed = busy === null || failed;
}
// The killed sync never gave its lease back; this machine sees its process is gone.
driftless('status', '-c', 'interrupt.yaml');
failed =
  driftless('drift', '-c', 'interrupt.yaml', '--track', 'demo-slow', '--detect-only') !== 0 ||
  failed;

step('A sync on a machine that died holds the track until it lapses, or until driftless unlock');
{
  // As a colleague's laptop would have left it in a shared store: its sync took the lease, and
  // the laptop died. This machine cannot look into that one's process table, so the lease stands.
  const store = new FsStore({ path: join(DEMO_DIR, 'store-interrupt') });
  await updateTrackState(store, 'demo-slow', (state) => {
    const since = new Date();
    state.applyLease = {
      holder: '3f2a9c1e-7b4d-4e5f-8a9b-0c1d2e3f4a5b',
      job: 'sync',
      since: since.toISOString(),
      until: new Date(since.getTime() + 5 * 60_000).toISOString(),
      process: { boot: 'a laptop', pidNamespace: 'pid:[1]', pid: 4242, host: 'alice-laptop' },
    };
  });
  const refused = driftless(
    'drift',
    '-c',
    'interrupt.yaml',
    '--track',
    'demo-slow',
    '--detect-only',
  );
  console.log(`exit code ${refused}`);
  failed =
    refused !== 3 ||
    driftless('unlock', '-c', 'interrupt.yaml', '--track', 'demo-slow', '--lease', '3f2a9c1e') !==
      0 ||
    driftless('drift', '-c', 'interrupt.yaml', '--track', 'demo-slow', '--detect-only') !== 0 ||
    failed;
  driftless('history', '-c', 'interrupt.yaml', '--track', 'demo-slow');
}

step('A Namespace that leaves Git while it holds what others put there: left in place, named');
// Deleting a Namespace deletes everything in it: prune keeps it until only the track's is left.
mkdirSync(join(REPO, 'team'), { recursive: true });
const teamIndex =
  'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: team-index, namespace: demo}\ndata: {teams: web}\n';
writeFileSync(
  join(REPO, 'team/namespace.yaml'),
  'apiVersion: v1\nkind: Namespace\nmetadata: {name: demo-team}\n',
);
writeFileSync(
  join(REPO, 'team/settings.yaml'),
  `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: team-settings, namespace: demo-team}\ndata: {owner: web}\n---\n${teamIndex}`,
);
git('add', '--all');
git('commit', '--quiet', '-m', 'A namespace for the web team');
writeFileSync(
  join(DEMO_DIR, 'team.yaml'),
  [
    'store: {type: fs, path: store-team}',
    'clusters:',
    `  - {name: local, kubeconfig: ${KUBECONFIG}}`,
    'tracks:',
    '  - name: demo-team',
    `    repository: ${REPO}`,
    '    subPath: team',
    '',
  ].join('\n'),
);
failed = driftless('sync', '-c', 'team.yaml') !== 0 || failed;
console.log('Someone else keeps a ConfigMap of theirs in the namespace:');
kubectl('create', 'configmap', 'their-data', '-n', 'demo-team', '--from-literal=keep=me');
rmSync(join(REPO, 'team/namespace.yaml'));
writeFileSync(join(REPO, 'team/settings.yaml'), teamIndex);
git('add', '--all');
git('commit', '--quiet', '-m', 'The web team leaves');
failed = driftless('sync', '-c', 'team.yaml') !== 0 || failed;
kubectl('get', 'configmaps', '-n', 'demo-team');
console.log('Once their ConfigMap is gone, the next sync prunes the namespace:');
kubectl('delete', 'configmap', 'their-data', '-n', 'demo-team');
failed = driftless('sync', '-c', 'team.yaml') !== 0 || failed;

step('Done');
console.log(
  'The cluster keeps running: kubectl --kubeconfig .driftless/testcluster/kubeconfig get all -n demo',
);
console.log('Stop it with: npm run cluster:down');
process.exitCode = failed ? 1 : 0;
