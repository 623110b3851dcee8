/**
 * `driftless drift` over fake ports: argument rules, the JSON shape, exit
 * codes (0 nothing left, 1 drift left in place, 3 a check or correction
 * failed) and the text report. Detection itself is tested on the real cluster
 * (test/integration/drift.test.ts, reconcile-drift.test.ts); the fake cluster
 * here only stores objects, so the drift it can show is a missing object.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, beforeEach, describe, it } from 'node:test';
import type { LocalContext } from '../../src/sync/local-context.ts';
import {
  driftExitCode,
  driftJson,
  formatDriftRun,
  type DriftRun,
} from '../../src/cli/drift-command.ts';
import { cliOver } from '../harness/run-cli.ts';
import { InMemoryCluster } from './fakes/in-memory-cluster.ts';
import { Output } from '../../src/cli/output.ts';
import { objectKey } from '../../src/cluster/kube-object.ts';
import { parseConfig } from '../../src/config/index.ts';
import type { GitSource } from '../../src/source/ports.ts';
import { createStore, type ClosableStore } from '../../src/store/create-store.ts';

const SHA = 'a'.repeat(40);

const CONFIG = `
tracks:
  - name: infra
    repository: https://git.example.com/org/infra.git
    namespace: apps
  - name: watched
    repository: https://git.example.com/org/watched.git
    namespace: apps
    drift: detect
  - name: frozen
    repository: https://git.example.com/org/frozen.git
    namespace: apps
    suspend: true
`;

const configMaps = (...names: string[]): string =>
  names
    .map((name) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  k: v\n`)
    .join('---\n');

/** A cluster in memory that stores what is applied; `failing` kinds refuse every request. */
class FakeCluster extends InMemoryCluster {}

const fakeSource = (files: string): GitSource => ({
  resolve: async () => ({ revision: SHA, ref: 'refs/heads/main' }),
  readFiles: async () => [{ path: 'all.yaml', content: new TextEncoder().encode(files) }],
});

const key = (name: string): string =>
  objectKey({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'apps', name });

/** An Output that writes nowhere and never colours: for the formatting functions. */
const plainOutput = (): Output =>
  new Output({ stdout: { write: () => true }, stderr: { write: () => true }, env: {} });

describe('driftless drift', () => {
  let dir: string;
  let store: ClosableStore;
  let cluster: FakeCluster;
  let clusterError: Error | undefined;

  const context = (): LocalContext => ({
    config: parseConfig(CONFIG, 'driftless.yaml'),
    artifacts: store.artifacts,
    state: store.state,
    source: async () => fakeSource(configMaps('a', 'b')),
    cluster: async () => {
      if (clusterError) throw clusterError;
      return cluster;
    },
    close: () => undefined,
  });

  const driftless = cliOver(context);

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-cli-drift-'));
    store = createStore({ type: 'fs', path: join(dir, 'store') });
    cluster = new FakeCluster();
    clusterError = undefined;
  });

  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  describe('argument rules', () => {
    for (const [args, expected] of [
      [['drift', '--revision', 'abc'], /drift: unknown flag --revision/],
      [['drift', '--previous'], /drift: unknown flag --previous/],
      [['drift', '--detect-only=yes'], /drift: --detect-only takes no value/],
      [['drift', '-o', 'yaml'], /drift: -o\/--output must be text or json/],
    ] as const) {
      it(`refuses "${args.join(' ')}" with exit code 2`, async () => {
        // Act
        const result = await driftless(...args);

        // Assess
        assert.equal(result.code, 2);
        assert.match(result.stderr, expected);
        assert.equal(result.stdout, '');
      });
    }

    it('refuses a suspended track unless only asked to look', async () => {
      // Act
      const refused = await driftless('drift', '--track', 'frozen');
      const looked = await driftless('drift', '--track', 'frozen', '--detect-only', '-o', 'json');

      // Assess
      assert.equal(refused.code, 2);
      assert.match(refused.stderr, /track "frozen" is suspended.*nothing was checked/);
      assert.equal(looked.code, 0, looked.stderr);
      assert.equal(JSON.parse(looked.stdout).revision, null);
    });

    it('names the tracks when --track names none of them', async () => {
      // Act
      const result = await driftless('drift', '--track', 'infr');

      // Assess
      assert.equal(result.code, 2);
      assert.match(result.stderr, /no track "infr"; did you mean "infra"\?/);
    });
  });

  it('prints the DESIGN.md shape and exits 0 when nothing drifted', async () => {
    // Prepare
    await driftless('sync', '--track', 'infra');

    // Act
    const result = await driftless('drift', '--track', 'infra', '-o', 'json');

    // Assess
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(JSON.parse(result.stdout), {
      track: 'infra',
      revision: SHA,
      drifted: [],
      missing: [],
      corrected: false,
      writtenBack: [],
      commit: null,
      errors: [],
    });
  });

  it('reports a deleted object with --detect-only, exits 1 and changes nothing', async () => {
    // Prepare
    await driftless('sync', '--track', 'infra');
    cluster.objects.delete(key('b'));

    // Act
    const result = await driftless('drift', '--track', 'infra', '--detect-only', '-o', 'json');

    // Assess
    assert.equal(result.code, 1, result.stderr);
    const document = JSON.parse(result.stdout);
    assert.deepEqual(document.missing, ['ConfigMap/apps/b']);
    assert.equal(document.corrected, false);
    assert.equal(cluster.objects.has(key('b')), false);
  });

  it('recreates a deleted object, reports it corrected and exits 0', async () => {
    // Prepare
    await driftless('sync', '--track', 'infra');
    cluster.objects.delete(key('b'));

    // Act
    const result = await driftless('drift', '--track', 'infra');

    // Assess
    assert.equal(result.code, 0, result.stderr);
    assert.equal(cluster.objects.has(key('b')), true);
    assert.equal(
      result.stdout,
      [
        `infra: drift at ${SHA.slice(0, 12)}: 1 missing`,
        'MISSING',
        'ConfigMap/apps/b',
        'corrected: 1 object: 1 created',
        '',
      ].join('\n'),
    );
  });

  it('leaves drift of a "drift: detect" track in place and exits 1', async () => {
    // Prepare
    await driftless('sync', '--track', 'watched');
    cluster.objects.delete(key('a'));

    // Act
    const result = await driftless('drift', '--track', 'watched');

    // Assess
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stdout, /left in place \(drift: detect\)/);
    assert.equal(cluster.objects.has(key('a')), false);
  });

  it('exits 3 with the errors when objects cannot be checked', async () => {
    // Prepare
    await driftless('sync', '--track', 'infra');
    cluster.failingKinds.add('ConfigMap');

    // Act
    const result = await driftless('drift', '--track', 'infra', '-o', 'json');

    // Assess
    assert.equal(result.code, 3, result.stderr);
    const document = JSON.parse(result.stdout);
    assert.equal(document.errors.length, 2);
    assert.match(document.errors[0].error, /^ConfigMap\/apps\/[ab]: /);
  });

  it('checks every track into an array, going on past a track that cannot be checked', async () => {
    // Prepare
    await driftless('sync', '--track', 'infra');
    clusterError = new Error('cluster unreachable');

    // Act
    const result = await driftless('drift', '-o', 'json');

    // Assess
    assert.equal(result.code, 3);
    const documents = JSON.parse(result.stdout);
    assert.deepEqual(
      documents.map((d: { track: string; error?: string }) => [d.track, d.error]),
      [
        ['infra', 'cluster unreachable'],
        ['watched', 'cluster unreachable'],
      ],
    );
    assert.match(
      result.stderr,
      /frozen: suspended \(suspend: true in \.\/driftless\.yaml\); skipped/,
    );
  });

  it('reports a track that never applied anything as nothing to check', async () => {
    // Act
    const result = await driftless('drift', '--track', 'infra');

    // Assess
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, 'infra: never applied; no drift to check\n');
  });
});

describe('drift reports', () => {
  const run = (extra: Partial<DriftRun> = {}): DriftRun => ({
    track: 'web',
    revision: SHA,
    drifted: [],
    missing: [],
    errors: [],
    corrected: false,
    changeset: [],
    writeBack: [],
    writeBackRefused: [],
    writtenBack: [],
    commit: null,
    writeBackErrors: [],
    ...extra,
  });
  const drifted = {
    subject: 'Deployment/apps/web',
    ref: { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'apps', name: 'web' },
    patch: [
      {
        op: 'replace' as const,
        path: '/spec/template/spec/containers/0/image',
        value: 'nginx:1.27',
      },
      { op: 'add' as const, path: '/metadata/labels/tier', value: 'x'.repeat(80) },
      { op: 'remove' as const, path: '/metadata/annotations/note' },
    ],
    changedBy: ['kubectl-edit', 'kubectl-set'],
  };

  it('lists each patch operation with its value in Git and who changed the object', () => {
    // Act
    const text = formatDriftRun(
      run({ drifted: [drifted], leftInPlace: '--detect-only' }),
      plainOutput(),
    );

    // Assess
    assert.equal(
      text,
      [
        `web: drift at ${SHA.slice(0, 12)}: 1 drifted`,
        'DRIFTED              OP       PATH                                    VALUE IN GIT                                                  CHANGED BY',
        `Deployment/apps/web  replace  /spec/template/spec/containers/0/image  "nginx:1.27"                                                  kubectl-edit, kubectl-set`,
        `                     add      /metadata/labels/tier                   "${'x'.repeat(58)}…`,
        '                     remove   /metadata/annotations/note',
        'left in place (--detect-only)',
      ].join('\n'),
    );
  });

  it('says when Git already holds every change written back, with no commit, and exits 0', () => {
    // Prepare: a write-back whose result was unchanged: its subjects listed, no commit.
    const settled = run({
      drifted: [{ ...drifted, subject: 'ConfigMap/apps/ops', patch: [drifted.patch[0]!] }],
      writtenBack: ['ConfigMap/apps/ops'],
    });

    // Act
    const text = formatDriftRun(settled, plainOutput());

    // Assess
    assert.equal(text.split('\n').at(-1), 'already in Git: 1 object; nothing to commit');
    assert.doesNotMatch(text, /written back/);
    assert.equal(driftExitCode([settled]), 0);
  });

  it('shows a refused correction and counts it among the errors', () => {
    // Prepare
    const failed = run({
      drifted: [drifted],
      changeset: [
        { subject: 'Deployment/apps/web', action: 'failed', error: 'Deployment/apps/web: denied' },
      ],
    });

    // Act
    const text = formatDriftRun(failed, plainOutput());
    const document = driftJson(failed);

    // Assess
    assert.match(text, /correction failed:\nSUBJECT +ACTION +ERROR\nDeployment\/apps\/web +failed/);
    assert.deepEqual(document.errors, [
      { subject: 'Deployment/apps/web', error: 'Deployment/apps/web: denied' },
    ]);
    assert.equal(driftExitCode([failed]), 3);
  });

  it('keeps the DESIGN.md keys first, patch operations whole', () => {
    // Act
    const document = driftJson(run({ drifted: [drifted], missing: ['ConfigMap/apps/gone'] }));

    // Assess
    assert.deepEqual(Object.keys(document), [
      'track',
      'revision',
      'drifted',
      'missing',
      'corrected',
      'writtenBack',
      'commit',
      'errors',
    ]);
    assert.deepEqual(document.drifted, [
      { subject: drifted.subject, patch: drifted.patch, changedBy: drifted.changedBy },
    ]);
  });

  for (const [name, runs, code] of [
    ['nothing found', [run()], 0],
    ['drift corrected', [run({ missing: ['ConfigMap/apps/a'], corrected: true })], 0],
    ['drift left in place', [run({ missing: ['ConfigMap/apps/a'] })], 1],
    [
      'a failure beside drift left in place',
      [run({ missing: ['ConfigMap/apps/a'] }), run({ error: 'unreachable' })],
      3,
    ],
    ['an object not checked', [run({ errors: [{ subject: 'x', error: 'x: forbidden' }] })], 3],
  ] as const) {
    it(`exits ${code} for ${name}`, () => {
      // Act, Assess
      assert.equal(driftExitCode(runs), code);
    });
  }
});
