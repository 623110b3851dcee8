/**
 * `driftless status` of the track of a deleted GitTrack whose objects are still being collected
 * (published under `collecting`, off the tracks): shown as being collected, in the table, in
 * the detail of `--track` and in `-o json` (`collecting`, next to the `removedFromConfig` such a
 * track always had), never as a track removed from the config that `driftless delete` should
 * collect. The real fs store and use-cases over the in-memory cluster, taught a GitTrack's
 * finalizer; the CLI run in this process.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { parseConfig } from '../../src/config/index.ts';
import type { Config, GitTracksFromCluster } from '../../src/config/types.ts';
import type { GitSource } from '../../src/source/ports.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import { discoverGitTracks } from '../../src/sync/discover-git-tracks.ts';
import type { LocalContext } from '../../src/sync/local-context.ts';
import { knownTracks } from '../../src/sync/published-tracks.ts';
import { syncTrack } from '../../src/sync/sync-track.ts';
import { cliOver } from '../harness/run-cli.ts';
import { GitTrackCluster, gitTrack } from './fakes/gittrack-cluster.ts';

const REVISION = '1'.repeat(40);
const NOW = Date.parse('2026-01-01T12:00:00Z');

/** A Git source whose head is REVISION, holding one ConfigMap named after the track. */
const git: GitSource = {
  resolve: async () => ({ revision: REVISION, ref: 'refs/heads/main' }),
  readFiles: async (track) => [
    {
      path: 'settings.yaml',
      content: new TextEncoder().encode(
        `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${track.name}\ndata:\n  value: "v"\n`,
      ),
    },
  ],
};

describe('status of a track whose GitTrack was deleted and is being collected', () => {
  let dir: string;
  let store: FsStore;
  let cluster: GitTrackCluster;
  let config: Config;
  const parsed = parseConfig(
    [
      'tracksFrom:',
      '  - {cluster: default, gitTracks: true}',
      'tracks:',
      '  - {name: infra, repository: https://git.example.com/infra.git, namespace: apps}',
      '',
    ].join('\n'),
    'driftless.yaml',
  );
  const source = parsed.tracksFrom[0] as GitTracksFromCluster;

  const context = (): LocalContext => ({
    config,
    artifacts: store,
    state: store,
    published: store,
    source: async () => git,
    cluster: async () => cluster,
    close: () => undefined,
  });
  const driftless = cliOver(context);

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-gittrack-status-'));
  });

  beforeEach(async () => {
    // Prepare: infra and GitTrack apps/web synced; web deleted, its collection refused; and a
    // track `old` taken out of the config, its state kept.
    store = new FsStore({ path: await mkdtemp(join(dir, 'store-')) });
    cluster = new GitTrackCluster();
    const discover = () =>
      discoverGitTracks(source, {
        config: parsed,
        published: store,
        state: store,
        cluster,
        now: () => new Date(NOW),
      });
    await cluster.apply(gitTrack('web'), { fieldManager: 'kubectl', force: false });
    await discover();
    const synced = [...(await knownTracks(parsed, store))];
    const old = { ...parsed.tracks[0]!, name: 'old' };
    for (const track of [...synced, old]) {
      const result = await syncTrack(
        track,
        { trigger: 'schedule' },
        { source: git, cluster, artifacts: store, state: store },
      );
      assert.equal(result.result, 'applied', result.error);
    }
    cluster.deleteGitTrack('web');
    cluster.refuseDeletes = true;
    assert.equal((await discover()).errors.length, 1, 'the collection failed');
    // As the CLI opens it: the config's tracks, then those published.
    config = { ...parsed, tracks: await knownTracks(parsed, store) };
  });

  after(() => rm(dir, { recursive: true, force: true }));

  it('shows it as being collected in the table, not as removed from the config', async () => {
    // Act
    const text = await driftless('status');

    // Assess
    assert.equal(text.code, 0, text.stderr);
    const row = text.stdout.split('\n').find((line) => line.startsWith('web '));
    assert.ok(row, `a row for web in:\n${text.stdout}`);
    assert.match(row, /GitTrack apps\/web deleted: objects being removed; .*keep web/);
    assert.doesNotMatch(text.stdout, /web: removed from/);
    assert.match(text.stdout, /^old: removed from \.\/driftless\.yaml but still has state/m);
  });

  it('says so in JSON with `collecting`, keeping every field it had', async () => {
    // Act
    const list = await driftless('status', '-o', 'json');
    const one = await driftless('status', '--track', 'web', '-o', 'json');

    // Assess
    assert.equal(list.code, 0, list.stderr);
    const documents = JSON.parse(list.stdout) as Record<string, unknown>[];
    assert.deepEqual(
      documents.map((d) => [d['track'], d['removedFromConfig'], d['collecting']]),
      [
        ['infra', undefined, undefined],
        [
          'web',
          true,
          {
            source: source.id,
            gitTrack: 'apps/web',
            failures: 1,
            nextTryFrom: '2026-01-01T12:01:00.000Z',
          },
        ],
        ['old', true, undefined],
      ],
    );
    const web = documents[1]!;
    assert.equal(web['appliedRevision'], REVISION, 'the state as before');
    assert.deepEqual(JSON.parse(one.stdout), web, '--track gives the same document');
  });

  it('says so in the detail of --track', async () => {
    // Act
    const text = await driftless('status', '--track', 'web');

    // Assess
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^Track: {5}web$/m);
    assert.match(
      text.stdout,
      /^web: GitTrack apps\/web deleted: objects being removed; the collection failed \(its Ready condition says why\); a discovery of tracksFrom source "cluster-default" tries again from 2026-01-01T12:01:00\.000Z$/m,
    );
    assert.doesNotMatch(text.stdout, /removed from|driftless delete/);
  });

  it('refuses --objects, saying why', async () => {
    // Act
    const refused = await driftless('status', '--track', 'web', '--objects');

    // Assess
    assert.equal(refused.code, 2);
    assert.match(
      refused.stderr,
      /--objects: track "web" is being collected \(GitTrack apps\/web was deleted\), so its objects cannot be checked/,
    );
  });
});
