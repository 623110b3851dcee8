/**
 * syncTrack end to end on real parts: the test Git server (basic auth), the
 * real test cluster and the filesystem store.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Track } from '../../src/config/types.ts';
import { syncTrack, type SyncDeps } from '../../src/sync/sync-track.ts';
import { conditionOf } from '../../src/sync/track-state.ts';
import { pushFiles, runGit, type GitRepository, type GitServer } from '../harness/git-server.ts';
import { TrackFixture } from '../harness/track-fixture.ts';

const configMap = (name: string, value: string, extra = ''): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n${extra}data:\n  value: "${value}"\n`;

/** `Name <email>` of the commit's author, as the git CLI reads it. */
async function gitAuthor(repo: GitRepository, sha: string): Promise<string> {
  return (
    await runGit(['--git-dir', repo.bareDir, 'show', '-s', '--format=%an <%ae>', sha])
  ).trim();
}

describe('syncTrack', () => {
  const fixture = new TrackFixture('sync');
  let git: GitServer;
  let deps: SyncDeps;
  let readFilesCalls = 0;
  const newTrack = (name: string, extra = ''): ReturnType<TrackFixture['newTrack']> =>
    fixture.newTrack(name, extra);
  const configMapValue = (ns: string, name: string): Promise<string | undefined> =>
    fixture.configMapValue(ns, name);

  before(async () => {
    // Count reads of Git files: a stored revision must not be read and rendered again.
    await fixture.start((real) => ({
      ...real,
      readFiles: (track, revision) => {
        readFilesCalls++;
        return real.readFiles(track, revision);
      },
    }));
    git = fixture.git;
    deps = fixture.deps;
  });

  after(() => fixture.stop());

  it('applies a revision, then finds it unchanged without rendering it again', async () => {
    // Prepare
    const { track, repo, ns } = await newTrack('basic');
    const sha = await pushFiles(repo, {
      'settings.yaml': configMap('settings', 'one'),
      'README.md': '# not a manifest',
    });

    // Act
    const first = await syncTrack(track, { trigger: 'manual' }, deps);
    const callsAfterFirst = readFilesCalls;
    const second = await syncTrack(track, { trigger: 'manual' }, deps);

    // Assess
    assert.equal(first.result, 'applied', first.error);
    assert.equal(first.revision, sha);
    assert.deepEqual(first.changeset, [{ subject: `ConfigMap/${ns}/settings`, action: 'created' }]);
    assert.equal(await configMapValue(ns, 'settings'), 'one');
    assert.equal(second.result, 'unchanged');
    assert.equal(
      readFilesCalls,
      callsAfterFirst,
      'the stored artifact is reused, not rendered again',
    );
    assert.equal(second.state.appliedRevision, sha);
    assert.equal(conditionOf(second.state, 'Ready')?.status, 'True');
    assert.deepEqual(second.state.inventory, [
      { subject: `ConfigMap/${ns}/settings`, apiVersion: 'v1' },
    ]);
    const history = await deps.state.listHistory(track.name);
    assert.deepEqual(
      history.map((h) => [h.revision, h.result, h.trigger]),
      [
        [sha, 'unchanged', 'manual'],
        [sha, 'applied', 'manual'],
      ],
    );
    assert.ok((history[1]?.['durationMs'] as number) >= 0, 'the sync says how long it took');
    // The commit, for the dashboard: as the git CLI wrote it.
    assert.deepEqual(
      [second.state.commits?.[sha]?.message, second.state.commits?.[sha]?.author],
      ['Update settings.yaml, README.md', await gitAuthor(repo, sha)],
    );
  });

  it('updates changed objects and prunes removed ones, keeping prune-disabled ones', async () => {
    // Prepare
    const { track, repo, ns } = await newTrack('prune');
    const keepAnnotation = '  annotations:\n    driftless.dev/prune: disabled\n';
    await pushFiles(repo, {
      'a.yaml': configMap('a', 'one'),
      'b.yaml': configMap('b', 'one'),
      'kept.yaml': configMap('kept', 'one', keepAnnotation),
    });
    await syncTrack(track, { trigger: 'manual' }, deps);
    await pushFiles(repo, { 'a.yaml': configMap('a', 'two'), 'b.yaml': null, 'kept.yaml': null });

    // Act
    const result = await syncTrack(track, { trigger: 'webhook' }, deps);

    // Assess
    assert.equal(result.result, 'applied', result.error);
    const actions = Object.fromEntries(result.changeset.map((e) => [e.subject, e.action]));
    assert.deepEqual(actions, {
      [`ConfigMap/${ns}/a`]: 'configured',
      [`ConfigMap/${ns}/b`]: 'deleted',
      [`ConfigMap/${ns}/kept`]: 'skipped',
    });
    assert.equal(await configMapValue(ns, 'a'), 'two');
    assert.equal(await configMapValue(ns, 'b'), undefined);
    assert.equal(await configMapValue(ns, 'kept'), 'one');
    assert.equal(conditionOf(result.state, 'ChildrenGarbageCollected')?.status, 'True');
  });

  it('fails a revision that does not parse, changes nothing and prunes nothing', async () => {
    // Prepare
    const { track, repo, ns } = await newTrack('broken');
    const good = await pushFiles(repo, {
      'a.yaml': configMap('a', 'one'),
      'b.yaml': configMap('b', 'one'),
    });
    await syncTrack(track, { trigger: 'manual' }, deps);
    await pushFiles(repo, {
      'a.yaml': configMap('a', 'two'),
      'b.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [unclosed\n',
    });

    // Act
    const result = await syncTrack(track, { trigger: 'webhook' }, deps);

    // Assess
    assert.equal(result.result, 'failed');
    assert.match(result.error ?? '', /b\.yaml:\d+/);
    assert.deepEqual(result.changeset, []);
    assert.equal(await configMapValue(ns, 'a'), 'one');
    assert.equal(await configMapValue(ns, 'b'), 'one');
    assert.equal(result.state.appliedRevision, good);
    const parsed = conditionOf(result.state, 'FilesParsed');
    assert.equal(parsed?.status, 'False');
    assert.match(parsed?.message ?? '', /b\.yaml/);
    assert.equal(conditionOf(result.state, 'Ready')?.status, 'False');
  });

  it('fails an object with a field the server does not know, naming it, and prunes nothing', async () => {
    // Prepare
    const { track, repo, ns } = await newTrack('typo');
    await pushFiles(repo, { 'a.yaml': configMap('a', 'one'), 'b.yaml': configMap('b', 'one') });
    await syncTrack(track, { trigger: 'manual' }, deps);
    // A typo in Git. Server-side apply refuses fields its schema lacks (a client that went
    // through typed models, as client-node's does, would drop them silently instead).
    await pushFiles(repo, {
      'a.yaml': `# the app's settings\n${configMap('a', 'two').replace('metadata:', 'metadata:\n  name: a\nmetadta:')}`,
      'b.yaml': null,
    });

    // Act
    const result = await syncTrack(track, { trigger: 'webhook' }, deps);

    // Assess
    assert.equal(result.result, 'failed');
    const failed = result.changeset.find((e) => e.subject === `ConfigMap/${ns}/a`);
    assert.equal(failed?.action, 'failed');
    assert.match(
      failed?.error ?? '',
      // The file and line it was written at, after the subject.
      new RegExp(`^ConfigMap/${ns}/a \\(a\\.yaml:2\\): .*\\.metadta: field not declared in schema`),
    );
    assert.equal(await configMapValue(ns, 'a'), 'one');
    assert.equal(await configMapValue(ns, 'b'), 'one', 'nothing is pruned after a failed apply');
  });

  it('refuses an empty revision unless allowEmpty is set', async () => {
    // Prepare
    const { track, repo, ns } = await newTrack('empty');
    await pushFiles(repo, { 'a.yaml': configMap('a', 'one') });
    await syncTrack(track, { trigger: 'manual' }, deps);
    await pushFiles(repo, { 'a.yaml': null, 'README.md': 'nothing here' });

    // Act
    const refused = await syncTrack(track, { trigger: 'manual' }, deps);
    const allowed = await syncTrack({ ...track, allowEmpty: true }, { trigger: 'manual' }, deps);

    // Assess
    assert.equal(refused.result, 'failed');
    assert.match(refused.error ?? '', /renders no objects.*allowEmpty/);
    assert.equal(allowed.result, 'applied', allowed.error);
    assert.deepEqual(allowed.changeset, [{ subject: `ConfigMap/${ns}/a`, action: 'deleted' }]);
  });

  it('ignores objects outside the restricted namespace and of ignored resource types', async () => {
    // Prepare
    const { track, repo, ns } = await newTrack(
      'filters',
      'restrictNamespace: true\nignoreResources: [secrets/v1]',
    );
    await pushFiles(repo, {
      'a.yaml': configMap('a', 'one'),
      'other.yaml': configMap('elsewhere', 'one').replace(
        'metadata:\n',
        'metadata:\n  namespace: kube-public\n',
      ),
      'secret.yaml': 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  k: v\n',
    });

    // Act
    const result = await syncTrack(track, { trigger: 'manual' }, deps);

    // Assess
    assert.equal(result.result, 'applied', result.error);
    assert.deepEqual(
      result.changeset.map((e) => e.subject),
      [`ConfigMap/${ns}/a`],
    );
    assert.equal(result.state.objectsDiscovered, 3);
    assert.equal(result.state.objectsIgnored, 2);
    assert.match(result.state.ignoredObjects[`Secret/${ns}/s`] ?? '', /secrets\/v1 is ignored/);
    assert.match(result.state.ignoredObjects['ConfigMap/kube-public/elsewhere'] ?? '', /outside/);

    // Act: a revision of which the filters leave nothing
    await pushFiles(repo, { 'a.yaml': null });
    const refused = await syncTrack(track, { trigger: 'manual' }, deps);

    // Assess: refused naming what was left out and why, not as a revision of no objects
    assert.equal(refused.result, 'failed');
    assert.match(
      refused.error ?? '',
      /has 2 objects, and the track's filters leave out every one \(ConfigMap\/kube-public\/elsewhere: .*outside.*allowEmpty/,
    );
    assert.equal(await configMapValue(ns, 'a'), 'one', 'nothing is pruned');
  });

  it('leaves alone, and does not prune, what a filter turned on later leaves out', async () => {
    // Prepare: applied without filters, among them a Namespace outside the track's namespace.
    const { track, repo, ns } = await newTrack('filters-later');
    const outside = `${ns}-x`;
    await pushFiles(repo, {
      'a.yaml': configMap('a', 'one'),
      'outside.yaml': `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${outside}\n---\n${configMap('b', 'one', `  namespace: ${outside}\n`)}`,
      'secret.yaml': 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  k: v\n',
    });
    assert.equal((await syncTrack(track, { trigger: 'manual' }, deps)).result, 'applied');
    const filtered: Track = {
      ...track,
      restrictNamespace: true,
      ignoreResources: [{ group: '', version: 'v1', resource: 'secrets' }],
    };
    const secretExists = () =>
      fixture.core.readNamespacedSecret({ name: 's', namespace: ns }).then(
        () => true,
        () => false,
      );

    // Act
    const result = await syncTrack(filtered, { trigger: 'manual' }, deps);

    // Assess: ignored, listed, and still there; the objects it applies are as they were
    assert.equal(result.result, 'unchanged', result.error);
    assert.deepEqual(
      result.changeset.filter((entry) => entry.action === 'deleted'),
      [],
    );
    assert.deepEqual(Object.keys(result.state.ignoredObjects).sort(), [
      `ConfigMap/${outside}/b`,
      `Namespace/${outside}`,
      `Secret/${ns}/s`,
    ]);
    assert.equal(await configMapValue(outside, 'b'), 'one');
    assert.equal(await secretExists(), true);

    // Act: once they leave Git, they are pruned (still in the inventory)
    await pushFiles(repo, { 'outside.yaml': null, 'secret.yaml': null });
    const left = await syncTrack(filtered, { trigger: 'manual' }, deps);

    // Assess
    assert.equal(left.result, 'applied', left.error);
    assert.deepEqual(
      left.changeset
        .filter((entry) => entry.action === 'deleted')
        .map((entry) => entry.subject)
        .sort(),
      [`ConfigMap/${outside}/b`, `Namespace/${outside}`, `Secret/${ns}/s`],
    );
    assert.equal(await secretExists(), false);
  });

  it('renders a stored commit again once the track renders it otherwise, under a revision of its own', async () => {
    // Prepare: one commit, two folders; the track renders app/ first
    const { track, repo, ns } = await newTrack('respec');
    const commit = await pushFiles(repo, {
      'app/a.yaml': configMap('a', 'one'),
      'other/b.yaml': configMap('b', 'one'),
    });
    const first = await syncTrack({ ...track, subPath: 'app' }, { trigger: 'manual' }, deps);
    const readsBefore = readFilesCalls;

    // Act: the same commit with another subPath, then the first one again
    const moved = await syncTrack({ ...track, subPath: 'other' }, { trigger: 'manual' }, deps);
    const readsAfterMove = readFilesCalls;
    const again = await syncTrack({ ...track, subPath: 'other' }, { trigger: 'manual' }, deps);
    const back = await syncTrack({ ...track, subPath: 'app' }, { trigger: 'manual' }, deps);

    // Assess
    assert.equal(first.revision, commit);
    assert.equal(moved.result, 'applied', moved.error);
    assert.ok(readsAfterMove > readsBefore, 'the commit is read and rendered again');
    assert.match(moved.revision ?? '', new RegExp(`^${commit}\\+[0-9a-f]{12}$`));
    assert.deepEqual(moved.changeset.map((entry) => [entry.subject, entry.action]).sort(), [
      [`ConfigMap/${ns}/a`, 'deleted'],
      [`ConfigMap/${ns}/b`, 'created'],
    ]);
    assert.equal(again.result, 'unchanged', again.error);
    assert.equal(again.revision, moved.revision);
    assert.equal(back.revision, commit, 'rendered as before, it is the commit stored before');
    assert.equal(await configMapValue(ns, 'a'), 'one');
    assert.equal(await configMapValue(ns, 'b'), undefined);
  });

  it('follows a force-pushed branch', async () => {
    // Prepare
    const { track, repo, ns } = await newTrack('moved');
    await pushFiles(repo, { 'a.yaml': configMap('a', 'one') });
    await syncTrack(track, { trigger: 'manual' }, deps);
    const moved = await pushFiles(
      repo,
      { 'a.yaml': configMap('a', 'rewritten') },
      { branch: 'rewrite' },
    );
    await import('../harness/git-server.ts').then(({ runGit }) =>
      runGit(['push', '--force', repo.authUrl, `${moved}:refs/heads/main`], { cwd: repo.bareDir }),
    );

    // Act
    const result = await syncTrack(track, { trigger: 'webhook' }, deps);

    // Assess
    assert.equal(result.revision, moved);
    assert.equal(await configMapValue(ns, 'a'), 'rewritten');
  });

  it('fails to fetch with wrong credentials and changes nothing', async () => {
    // Prepare
    const { track, repo, ns } = await newTrack('noauth');
    await pushFiles(repo, { 'a.yaml': configMap('a', 'one') });
    const noAuth: Track = { ...track, auth: undefined };

    // Act
    const result = await syncTrack(noAuth, { trigger: 'manual' }, deps);

    // Assess
    assert.equal(result.result, 'failed');
    assert.equal(conditionOf(result.state, 'FilesFetched')?.status, 'False');
    assert.doesNotMatch(result.error ?? '', new RegExp(git.password));
    assert.equal(await configMapValue(ns, 'a'), undefined);
  });

  it('syncs a track only after the tracks it depends on are ready', async () => {
    // Prepare
    const base = await newTrack('base');
    const app = await newTrack('app');
    const dependent: Track = { ...app.track, dependsOn: ['base'] };
    await pushFiles(base.repo, { 'a.yaml': configMap('a', 'base') });
    await pushFiles(app.repo, { 'a.yaml': configMap('a', 'app') });

    // Act
    const early = await syncTrack(dependent, { trigger: 'manual' }, deps);
    const valueAfterEarly = await configMapValue(app.ns, 'a');
    await syncTrack(base.track, { trigger: 'manual' }, deps);
    const later = await syncTrack(dependent, { trigger: 'manual' }, deps);

    // Assess
    assert.equal(early.result, 'failed');
    assert.match(early.error ?? '', /dependency "base" is not Ready/);
    assert.equal(valueAfterEarly, undefined);
    assert.equal(await configMapValue(app.ns, 'a'), 'app');
    assert.equal(later.result, 'applied', later.error);
  });
});
