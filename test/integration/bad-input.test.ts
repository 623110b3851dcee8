/**
 * Bad input against the real parts: manifests in a Git repository on the test
 * Git server, and tampered artifacts and state in the filesystem store, each
 * met by the real jobs (runJob: fetch, then the sync it queues) on the real
 * test cluster.
 *
 * One shared setup: a track whose good revision (ConfigMaps `a` and `b`,
 * value `one`) is applied. Every case then offers something bad — and the
 * same revision would also change `a` to `two` and drop `b` — and checks two
 * things: the error names the file, field or object at fault, and nothing
 * already running moved (the cluster keeps the good revision's objects, `b`
 * was not pruned, the state keeps the good revision and its inventory).
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Track } from '../../src/config/types.ts';
import { messageOf } from '../../src/errors.ts';
import { CopyObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { bundleDigest, parseRevision, serializeBundle } from '../../src/render/index.ts';
import { ArtifactCorruptError } from '../../src/store/errors.ts';
import { S3Store } from '../../src/store/s3-store.ts';
import { executeJob } from '../../src/sync/execute-job.ts';
import type { Job } from '../../src/sync/jobs.ts';
import { runJob, summarizeJob, type JobDeps, type JobResult } from '../../src/sync/run-job.ts';
import { conditionOf, readTrackState, type TrackState } from '../../src/sync/track-state.ts';
import { pushFiles, runGit, type GitRepository } from '../harness/git-server.ts';
import { startMinio, type MinioServer } from '../harness/minio.ts';
import { rendererBinaries, rendererEnvironment } from '../harness/renderers.ts';
import { TrackFixture } from '../harness/track-fixture.ts';

const configMap = (name: string, value: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  value: "${value}"\n`;

/** ~10^9 nodes once its aliases are expanded. */
function billionLaughs(): string {
  const lines = ['apiVersion: v1', 'kind: ConfigMap', 'metadata: {name: lol}', 'data:'];
  lines.push('  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]');
  const names = 'abcdefghi';
  for (let i = 1; i < names.length; i++) {
    lines.push(
      `  ${names[i]}: &${names[i]} [${Array(9)
        .fill(`*${names[i - 1]}`)
        .join(',')}]`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/** A mapping nested `depth` levels deep under `data`. */
function nested(depth: number): string {
  return `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: deep}\ndata: ${'{k: '.repeat(depth)}v${'}'.repeat(depth)}\n`;
}

/** Commits exactly `files` and `links` (path -> symlink target) on main, and pushes. */
async function pushTree(
  repo: GitRepository,
  files: Readonly<Record<string, string | Uint8Array>>,
  links: Readonly<Record<string, string>>,
): Promise<string> {
  if (Object.keys(links).length === 0) return pushFiles(repo, files, { removeOthers: true });
  const work = await mkdtemp(join(tmpdir(), 'driftless-bad-input-push-'));
  try {
    await runGit(['clone', '--quiet', repo.url, work], { credentials: repo });
    await runGit(['rm', '-r', '--quiet', '--ignore-unmatch', '--', '.'], { cwd: work });
    for (const [path, content] of Object.entries(files)) {
      await mkdir(dirname(join(work, path)), { recursive: true });
      await writeFile(join(work, path), content);
    }
    for (const [path, target] of Object.entries(links)) {
      await mkdir(dirname(join(work, path)), { recursive: true });
      await symlink(target, join(work, path));
    }
    await runGit(['add', '--all'], { cwd: work });
    await runGit(['commit', '--quiet', '--message', 'bad input'], { cwd: work });
    await runGit(['push', '--quiet', 'origin', 'HEAD:refs/heads/main'], {
      cwd: work,
      credentials: repo,
    });
    return (await runGit(['rev-parse', 'HEAD'], { cwd: work })).trim();
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** One bad revision in Git, and what the fetch must say about it. */
interface ManifestCase {
  readonly name: string;
  /** Files besides the changed `a.yaml` (with `b.yaml` removed). */
  readonly files?: Readonly<Record<string, string | Uint8Array>>;
  readonly links?: Readonly<Record<string, string>>;
  /** Track fields that Git cannot set, given as the config loader would never give them. */
  readonly track?: (track: Track) => Track;
  /** What the error says: the file (and line), field or object at fault. */
  readonly error: RegExp;
  /** The condition that records it. */
  readonly condition: 'FilesParsed' | 'FilesFetched';
}

const CM_LIST_WITHOUT_KIND =
  'apiVersion: v1\nkind: List\nitems:\n  - apiVersion: v1\n    kind: ConfigMap\n    metadata: {name: ok}\n  - apiVersion: v1\n    metadata: {name: nokind}\n';

const MANIFEST_CASES: readonly ManifestCase[] = [
  {
    name: 'invalid YAML',
    files: { 'bad.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [unclosed\n' },
    error: /^bad\.yaml:5:1: /,
    condition: 'FilesParsed',
  },
  {
    name: 'a tab where YAML needs spaces',
    files: { 'tab.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: t\n' },
    error: /^tab\.yaml:4:\d+: /,
    condition: 'FilesParsed',
  },
  {
    name: 'missing kind',
    files: { 'nokind.yaml': 'apiVersion: v1\nmetadata:\n  name: x\n' },
    error: /^nokind\.yaml:1: kind is missing/,
    condition: 'FilesParsed',
  },
  {
    name: 'missing apiVersion',
    files: { 'noapi.yaml': 'kind: ConfigMap\nmetadata:\n  name: x\n' },
    error: /^noapi\.yaml:1: apiVersion is missing/,
    condition: 'FilesParsed',
  },
  {
    name: 'missing metadata.name',
    files: { 'noname.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels: {a: b}\n' },
    error: /^noname\.yaml:1: ConfigMap\/<unnamed>: metadata\.name is missing/,
    condition: 'FilesParsed',
  },
  {
    name: 'metadata.name that is not a string',
    files: { 'numname.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: 42\n' },
    error:
      /^numname\.yaml:1: ConfigMap\/<unnamed>: metadata\.name must be a non-empty string, not a number/,
    condition: 'FilesParsed',
  },
  {
    name: 'a malformed apiVersion',
    files: { 'api.yaml': 'apiVersion: a/b/c\nkind: ConfigMap\nmetadata: {name: x}\n' },
    error: /^api\.yaml:1: ConfigMap\/x: apiVersion "a\/b\/c" must be "version" or "group\/version"/,
    condition: 'FilesParsed',
  },
  {
    name: 'metadata.namespace that is a list',
    files: { 'ns.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: [a]}\n' },
    error: /^ns\.yaml:1: ConfigMap\/x: metadata\.namespace must be a string, not a sequence/,
    condition: 'FilesParsed',
  },
  {
    name: 'a document that is a list, not an object',
    files: { 'list.yaml': configMap('fine', 'x') + '---\n- just\n- a list\n' },
    error: /^list\.yaml:8: document must be a mapping \(a Kubernetes object\), not a sequence/,
    condition: 'FilesParsed',
  },
  {
    name: 'a List item without kind, at its own line',
    files: { 'items.yaml': CM_LIST_WITHOUT_KIND },
    error: /^items\.yaml:7: kind is missing/,
    condition: 'FilesParsed',
  },
  {
    name: 'duplicate objects in two files',
    files: { 'z-copy.yaml': configMap('a', 'three') },
    error: /^z-copy\.yaml:1: ConfigMap\/a: duplicate object, also defined at a\.yaml:1/,
    condition: 'FilesParsed',
  },
  {
    name: 'duplicate objects in one file',
    files: { 'twice.yaml': `${configMap('c', 'x')}---\n${configMap('c', 'y')}` },
    error: /^twice\.yaml:8: ConfigMap\/c: duplicate object, also defined at twice\.yaml:1/,
    condition: 'FilesParsed',
  },
  {
    name: 'a duplicate key in one object',
    files: {
      'key.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: k}\ndata: {x: 1, x: 2}\n',
    },
    error: /^key\.yaml:4:\d+: duplicated mapping key/,
    condition: 'FilesParsed',
  },
  {
    name: 'an oversized document',
    files: {
      'big.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata:\n  v: "${'x'.repeat(4 * 1024 * 1024)}"\n`,
    },
    error: /^big\.yaml: file is \d+ bytes, over the limit of 4194304 bytes per file/,
    condition: 'FilesParsed',
  },
  {
    name: 'a deeply nested document',
    files: { 'deep.yaml': nested(500) },
    error: /^deep\.yaml:4:\d+: nesting exceeded maxDepth \(100\)/,
    condition: 'FilesParsed',
  },
  {
    name: 'a YAML bomb (billion laughs)',
    files: { 'bomb.yaml': billionLaughs() },
    error: /^bomb\.yaml:\d+: YAML aliases expand beyond the limit/,
    condition: 'FilesParsed',
  },
  {
    name: 'a tag that would construct code',
    files: {
      'fn.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: f}\ndata:\n  f: !!js/function "function () {}"\n',
    },
    error: /^fn\.yaml:5:\d+: unknown scalar tag !<tag:yaml\.org,2002:js\/function>/,
    condition: 'FilesParsed',
  },
  {
    name: 'a binary file named .yaml',
    files: {
      'image.yaml': Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0xff, 0xfe]),
    },
    error: /^image\.yaml:1:1: file is not valid UTF-8/,
    condition: 'FilesParsed',
  },
  {
    name: 'a file of NUL bytes named .json',
    files: { 'zeros.json': new Uint8Array(64) },
    error: /^zeros\.json:1:1: null byte is not allowed in input/,
    condition: 'FilesParsed',
  },
  {
    name: 'truncated JSON',
    files: { 'cut.json': '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j"' },
    error: /^cut\.json:1:\d+: /,
    condition: 'FilesParsed',
  },
  {
    name: 'a symlink pointing outside the repository (absolute)',
    links: { 'passwd.yaml': '/etc/passwd' },
    error: /symlink "passwd\.yaml" points outside the repository \("\/etc\/passwd"\)/,
    condition: 'FilesFetched',
  },
  {
    name: 'a symlink climbing out with ..',
    links: { 'deploy/up.yaml': '../../../secret.yaml' },
    error:
      /symlink "deploy\/up\.yaml" points outside the repository \("\.\.\/\.\.\/\.\.\/secret\.yaml"\)/,
    condition: 'FilesFetched',
  },
  {
    name: 'a symlink loop',
    links: { 'loop-a.yaml': 'loop-b.yaml', 'loop-b.yaml': 'loop-a.yaml' },
    error: /symlink "loop-a\.yaml" is part of a loop/,
    condition: 'FilesFetched',
  },
  {
    name: 'a subPath with .. segments',
    track: (track) => ({ ...track, subPath: 'deploy/../../etc' }),
    error:
      /^track "main": subPath "deploy\/\.\.\/\.\.\/etc" must not contain "\.\." \(it would leave the repository\)/,
    condition: 'FilesFetched',
  },
  {
    name: 'a kustomization reaching outside with ..',
    files: {
      'kustomization.yaml': 'resources:\n  - a.yaml\n  - ../../outside\n',
    },
    error: /^kustomization\.yaml: resources: "\.\.\/\.\.\/outside" is outside the repository/,
    condition: 'FilesParsed',
  },
  {
    name: 'a kustomization reaching an absolute path',
    files: { 'kustomization.yaml': 'resources:\n  - /etc/kubernetes\n' },
    error: /^kustomization\.yaml: resources: "\/etc\/kubernetes" is outside the repository/,
    condition: 'FilesParsed',
  },
  {
    name: 'a kustomization base reaching outside through another kustomization',
    files: {
      'kustomization.yaml': 'resources:\n  - base\n',
      'base/kustomization.yaml': 'resources:\n  - ../../escape\n',
    },
    error: /^base\/kustomization\.yaml: resources: "\.\.\/\.\.\/escape" is outside the repository/,
    condition: 'FilesParsed',
  },
  {
    name: 'a kustomization with a remote resource not allowed',
    files: {
      'kustomization.yaml': 'resources:\n  - https://github.com/org/repo//deploy?ref=main\n',
    },
    error:
      /^kustomization\.yaml: resources: remote resource .* is refused; set kustomizeRemoteResources: true/,
    condition: 'FilesParsed',
  },
  {
    name: 'a helm chart outside the repository',
    files: { 'chart/Chart.yaml': 'apiVersion: v2\nname: c\nversion: 0.1.0\n' },
    track: (track) => ({ ...track, helm: { chart: '../chart', values: {}, valuesFiles: [] } }),
    error: /helm\.chart: "\.\.\/chart" is outside the repository/,
    condition: 'FilesParsed',
  },
  {
    name: 'a helm values file outside the repository',
    files: { 'chart/Chart.yaml': 'apiVersion: v2\nname: c\nversion: 0.1.0\n' },
    track: (track) => ({
      ...track,
      helm: { chart: 'chart', values: {}, valuesFiles: ['../../etc/values.yaml'] },
    }),
    error: /helm\.valuesFiles\[0\]: \.\.\/\.\.\/etc\/values\.yaml does not exist in the revision/,
    condition: 'FilesParsed',
  },
];

describe('bad input', () => {
  const fixture = new TrackFixture('bad');
  let track: Track;
  let repo: GitRepository;
  let ns: string;
  let good: string;
  let goodState: TrackState;
  const savedEnv: Record<string, string | undefined> = {};

  /** A fetch job, then the sync job it queued, if any. */
  async function fetchAndSync(
    deps: JobDeps & { queued: Job[] },
    name = track.name,
  ): Promise<{ fetch: JobResult; sync?: JobResult }> {
    const fetch = await runJob(
      { type: 'fetch', track: name, trigger: 'webhook' },
      deps,
      executeJob,
    );
    const next = deps.queued.shift();
    return { fetch, ...(next === undefined ? {} : { sync: await runJob(next, deps, executeJob) }) };
  }

  /** The good revision is still applied, whole: in the cluster and in the state. */
  async function assertNothingChanged(): Promise<void> {
    assert.equal(await fixture.configMapValue(ns, 'a'), 'one', 'a keeps the good value');
    assert.equal(await fixture.configMapValue(ns, 'b'), 'one', 'b was not pruned');
    const state = await readTrackState(fixture.deps.state, track.name);
    assert.equal(state.appliedRevision, good);
    assert.deepEqual(state.inventory, goodState.inventory);
    const history = await fixture.deps.state.listHistory(track.name);
    assert.ok(
      history.every((entry) => entry.result !== 'applied' || entry.revision === good),
      'no other revision was applied',
    );
  }

  before(async () => {
    // kustomize and helm cases must be refused before the tool runs: the real tools, to be sure.
    for (const [name, value] of Object.entries(rendererEnvironment(await rendererBinaries()))) {
      savedEnv[name] = process.env[name];
      process.env[name] = value;
    }
    await fixture.start();
    ({ track, repo, ns } = await fixture.newTrack('main'));
    good = await pushFiles(repo, {
      'a.yaml': configMap('a', 'one'),
      'b.yaml': configMap('b', 'one'),
    });
    const { sync } = await fetchAndSync(fixture.jobDeps([track]));
    assert.equal(sync?.type === 'sync' && sync.result.result, 'applied');
    goodState = await readTrackState(fixture.deps.state, track.name);
    assert.equal(goodState.appliedRevision, good);
  });

  after(async () => {
    await fixture.stop();
    for (const [name, value] of Object.entries(savedEnv)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  describe('manifests in Git', () => {
    for (const testCase of MANIFEST_CASES) {
      it(`refuses ${testCase.name}, naming it, and changes nothing`, async () => {
        // Prepare: the same revision would change a and drop b.
        await pushTree(
          repo,
          { 'a.yaml': configMap('a', 'two'), ...testCase.files },
          testCase.links ?? {},
        );
        const deps = fixture.jobDeps([testCase.track?.(track) ?? track]);

        // Act
        const { fetch, sync } = await fetchAndSync(deps);

        // Assess
        assert.equal(fetch.type, 'fetch');
        assert.equal(fetch.type === 'fetch' && fetch.result.outcome, 'failed');
        const error = fetch.type === 'fetch' ? (fetch.result.error ?? '') : '';
        assert.match(error, testCase.error);
        assert.equal(sync, undefined, 'no sync is queued');
        const state = await readTrackState(fixture.deps.state, track.name);
        const condition = conditionOf(state, testCase.condition);
        assert.equal(condition?.status, 'False');
        assert.match(condition?.message ?? '', testCase.error);
        assert.equal(state.desiredRevision, good, 'the bad revision is never desired');
        await assertNothingChanged();
      });
    }
  });

  describe('tampered artifacts and state in the store', () => {
    /** What a store case works on: the valid revision just fetched (its sync not run yet). */
    interface StoreContext {
      readonly revision: string;
      readonly artifactFile: string;
      readonly stateFile: string;
      readonly sync: Job;
    }

    /** Rewrites an artifact file's body, keeping its header line (the recorded digest). */
    async function rewriteBody(file: string, change: (body: string) => string): Promise<void> {
      const text = await readFile(file, 'utf8');
      const newline = text.indexOf('\n');
      await writeFile(file, text.slice(0, newline + 1) + change(text.slice(newline + 1)));
    }

    /** One kind of damage at rest; the sync that meets it must say so. */
    interface StoreCase {
      readonly name: string;
      tamper(context: StoreContext): Promise<void>;
      /** What the error names (a function: it may name the revision). */
      error(context: StoreContext): RegExp;
    }

    const STORE_CASES: readonly StoreCase[] = [
      {
        name: 'an artifact whose bytes no longer match its digest',
        tamper: ({ artifactFile }) =>
          rewriteBody(artifactFile, (body) => body.replace('"two"', '"owt"')),
        error: ({ revision }) =>
          new RegExp(
            `main@${revision}: stored artifact is corrupt: recorded digest sha256:[0-9a-f]{64} but content is sha256:`,
          ),
      },
      {
        name: 'a truncated artifact',
        tamper: ({ artifactFile }) =>
          rewriteBody(artifactFile, (body) => body.slice(0, body.length / 2)),
        error: ({ revision }) => new RegExp(`main@${revision}: stored artifact is corrupt`),
      },
      {
        name: 'an artifact whose recorded digest was replaced',
        tamper: async ({ artifactFile }) => {
          const text = await readFile(artifactFile, 'utf8');
          await writeFile(
            artifactFile,
            text.replace(/sha256:[0-9a-f]{64}/, `sha256:${'0'.repeat(64)}`),
          );
        },
        error: ({ revision }) =>
          new RegExp(`main@${revision}: stored artifact is corrupt: recorded digest sha256:0{64}`),
      },
      {
        name: 'an artifact of an unknown format version, re-digested to look intact',
        tamper: async ({ artifactFile }) => {
          const text = await readFile(artifactFile, 'utf8');
          const body = text
            .slice(text.indexOf('\n') + 1)
            .replace('driftless.dev/rendered-bundle/v1', 'driftless.dev/rendered-bundle/v2');
          const header = JSON.parse(text.slice(0, text.indexOf('\n'))) as Record<string, unknown>;
          const digest = bundleDigest(new TextEncoder().encode(body));
          const size = Buffer.byteLength(body);
          await writeFile(artifactFile, `${JSON.stringify({ ...header, digest, size })}\n${body}`);
        },
        error: () => /bundle has an unexpected shape: \/format: /,
      },
      {
        name: 'an artifact copied from another revision of the track',
        tamper: async ({ artifactFile }) => {
          await writeFile(artifactFile, await readFile(join(dirname(artifactFile), good)));
        },
        error: ({ revision }) =>
          new RegExp(
            `main@${revision}: stored artifact is corrupt: stored as the artifact of main@${good}, not of this track and revision`,
          ),
      },
      {
        name: 'an artifact copied from another track',
        tamper: async ({ artifactFile, revision }) => {
          // A valid bundle of another track's: its objects would replace a and b.
          const intruder = parseRevision([
            { path: 'x.yaml', content: new TextEncoder().encode(configMap('intruder', 'x')) },
          ]);
          await fixture.deps.artifacts.put('elsewhere', revision, serializeBundle(intruder));
          const copied = join(fixture.storeDir, 'artifacts', 'elsewhere', revision);
          await writeFile(artifactFile, await readFile(copied));
        },
        error: ({ revision }) =>
          new RegExp(
            `main@${revision}: stored artifact is corrupt: stored as the artifact of elsewhere@${revision}, not of this track and revision`,
          ),
      },
      {
        name: 'a missing artifact',
        tamper: ({ artifactFile }) => rm(artifactFile),
        error: ({ revision }) =>
          new RegExp(`main@${revision}: no artifact is stored for this revision`),
      },
      {
        name: 'a truncated state document',
        tamper: async ({ stateFile }) => {
          const text = await readFile(stateFile, 'utf8');
          await writeFile(stateFile, text.slice(0, text.length / 2));
        },
        error: () => /^main: state document .*state\/main\.json is not valid/,
      },
      {
        name: 'a state document of an unknown shape (another schema version)',
        tamper: async ({ stateFile }) => {
          const file = JSON.parse(await readFile(stateFile, 'utf8')) as { value: TrackState };
          const future = {
            ...file.value,
            schemaVersion: 2,
            conditions: { Ready: 'True' },
            inventory: 'v2',
          };
          await writeFile(stateFile, JSON.stringify({ ...file, value: future }));
        },
        error: () => /^main: state field conditions is a mapping, expected a list/,
      },
    ];

    for (const testCase of STORE_CASES) {
      it(`refuses ${testCase.name}, naming it, and changes nothing`, async () => {
        // Prepare: a valid revision (a -> two, b dropped) fetched and stored, its sync queued.
        await pushTree(repo, { 'a.yaml': configMap('a', 'two') }, {});
        const deps = fixture.jobDeps([track]);
        const fetch = await runJob(
          { type: 'fetch', track: track.name, trigger: 'webhook' },
          deps,
          executeJob,
        );
        assert.equal(fetch.type === 'fetch' && fetch.result.outcome, 'fetched');
        const revision = fetch.result.revision ?? '';
        const context: StoreContext = {
          revision,
          artifactFile: join(fixture.storeDir, 'artifacts', track.name, revision),
          stateFile: join(fixture.storeDir, 'state', `${track.name}.json`),
          sync: deps.queued.shift()!,
        };
        const stateBefore = await readFile(context.stateFile, 'utf8');
        await testCase.tamper(context);
        const damagedState = await readFile(context.stateFile, 'utf8');

        // Act: the queue runs the sync; a job that cannot run at all throws (and is retried).
        const error = await runJob(context.sync, deps, executeJob).then(
          (done) =>
            done.type === 'sync' && done.result.result === 'failed'
              ? (done.result.error ?? '')
              : `not refused: ${JSON.stringify(summarizeJob(done))}`,
          (thrown: unknown) => messageOf(thrown),
        );
        const stateAfterJob = await readFile(context.stateFile, 'utf8');
        await writeFile(context.stateFile, stateBefore);

        // Assess
        assert.match(error, testCase.error(context));
        if (damagedState !== stateBefore) {
          assert.equal(stateAfterJob, damagedState, 'a damaged state is left as found');
        }
        await assertNothingChanged();
        assert.equal(await fixture.configMapValue(ns, 'intruder'), undefined);
        assert.deepEqual(deps.queued, [], 'nothing else is queued');
      });
    }

    it('refuses a truncated history entry, naming it, and leaves it as found', async () => {
      // Prepare
      const dir = join(fixture.storeDir, 'history', track.name);
      const [name] = (await readdir(dir)).filter((entry) => entry.endsWith('.json')).sort();
      const file = join(dir, name!);
      const damaged = (await readFile(file, 'utf8')).slice(0, 20);
      await writeFile(file, damaged);

      // Act
      const listed = fixture.deps.state.listHistory(track.name);

      // Assess
      await assert.rejects(
        listed,
        new RegExp(`^StateCorruptError: main: history entry ${name!.replace(/\./g, '\\.')}: `),
      );
      assert.equal(await readFile(file, 'utf8'), damaged, 'the entry is not rewritten or dropped');
      await rm(file);
      await assertNothingChanged();
    });

    it("never prunes another track's objects when handed its state", async () => {
      // Prepare: a second track with its own object, and its state copied over main's.
      const other = await fixture.newTrack('other');
      await pushFiles(other.repo, { 'o.yaml': configMap('o', 'other') });
      const deps = fixture.jobDeps([track, other.track]);
      const applied = await fetchAndSync(deps, 'other');
      assert.equal(applied.sync?.type === 'sync' && applied.sync.result.result, 'applied');
      const mainState = join(fixture.storeDir, 'state', `${track.name}.json`);
      const saved = await readFile(mainState, 'utf8');
      await writeFile(mainState, await readFile(join(fixture.storeDir, 'state', 'other.json')));

      // Act: main syncs its good revision again, with other's inventory as its previous one.
      const done = await runJob(
        {
          type: 'sync',
          track: track.name,
          revision: good,
          resolvedAt: new Date().toISOString(),
          trigger: 'manual',
        },
        deps,
        executeJob,
      );

      // Assess: other's object stays (labelled for other), main's objects are its good ones.
      assert.equal(await fixture.configMapValue(other.ns, 'o'), 'other');
      const changeset = done.type === 'sync' ? done.result.changeset : [];
      const prune = changeset.find((entry) => entry.subject === `ConfigMap/${other.ns}/o`);
      assert.equal(prune?.action, 'skipped');
      assert.equal(prune?.reason, 'not labelled driftless.dev/track=main; left in place');
      await writeFile(mainState, saved);
      await assertNothingChanged();
    });
  });
});

describe('bad input: artifacts copied to another key of the S3 store (MinIO)', () => {
  let minio: MinioServer;
  let s3: S3Client;
  let store: S3Store;
  let bucket: string;
  const revision = (c: string): string => c.repeat(40);

  before(async () => {
    minio = await startMinio();
    s3 = minio.client();
    bucket = await minio.createBucket();
    store = new S3Store({ bucket, prefix: 'bad-input/', client: s3, kmsKeyId: minio.kmsKeyName });
  });

  after(() => minio?.stop());

  const COPIES = [
    { name: 'another track', from: ['other', revision('a')], to: ['main', revision('a')] },
    { name: 'another revision', from: ['main', revision('b')], to: ['main', revision('c')] },
  ] as const;

  for (const { name, from, to } of COPIES) {
    it(`refuses an artifact object copied from ${name}, and keeps the one it holds`, async () => {
      // Prepare: the target key holds nothing; a server-side copy keeps the object's metadata.
      await store.put(from[0], from[1], new TextEncoder().encode(`bundle of ${from.join('@')}`));
      await s3.send(
        new CopyObjectCommand({
          Bucket: bucket,
          CopySource: `${bucket}/bad-input/artifacts/${from[0]}/${from[1]}`,
          Key: `bad-input/artifacts/${to[0]}/${to[1]}`,
        }),
      );

      // Act
      const read = store.get(to[0], to[1]);

      // Assess
      await assert.rejects(
        read,
        (error: unknown) =>
          error instanceof ArtifactCorruptError &&
          error.message ===
            `${to.join('@')}: stored artifact is corrupt: stored as the artifact of ${from.join('@')}, not of this track and revision`,
      );
      assert.deepEqual(
        new TextDecoder().decode(await store.get(from[0], from[1])),
        `bundle of ${from.join('@')}`,
        'the original is still read',
      );
    });
  }
});
