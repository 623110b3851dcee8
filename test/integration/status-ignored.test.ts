/**
 * `driftless status --track --objects` lists every object of the track's revision: those it
 * applies, as the real test cluster has them, and those its filters leave out, as ignored with
 * why — in text and in `-o json` (an added `ignored` list; `objects` stays as it was).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { parseConfig } from '../../src/config/index.ts';
import type { Track } from '../../src/config/types.ts';
import type { LocalContext } from '../../src/sync/local-context.ts';
import { syncTrack } from '../../src/sync/sync-track.ts';
import { pushFiles } from '../harness/git-server.ts';
import { cliOver, type CliRun } from '../harness/run-cli.ts';
import { TrackFixture } from '../harness/track-fixture.ts';

const configMap = (name: string, namespace?: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n${namespace ? `  namespace: ${namespace}\n` : ''}data:\n  value: "v"\n`;

const JOB = [
  'apiVersion: batch/v1',
  'kind: Job',
  'metadata: {name: migrate}',
  'spec:',
  '  template:',
  '    spec:',
  '      restartPolicy: Never',
  '      containers: [{name: migrate, image: registry.example/migrate:1.0}]',
].join('\n');

describe('status --objects with objects the track ignores', () => {
  const fixture = new TrackFixture('status-ignored');

  before(() => fixture.start());
  after(() => fixture.stop());

  /** Runs the CLI on `track` over the fixture's store, Git source and cluster. */
  function driftless(track: Track, ...args: string[]): Promise<CliRun> {
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
    return cliOver(() => context)(...args);
  }

  it('lists the ignored objects with why, after those applied, in text and JSON', async () => {
    // Prepare: a Job its ignoreResources leaves out, a ConfigMap outside its namespace. Rows
    // come in the revision's order (the order sync applies in: ConfigMaps before Jobs).
    const { track, repo, ns } = await fixture.newTrack(
      'web',
      'restrictNamespace: true\nignoreResources: [jobs.batch/v1]',
    );
    await pushFiles(repo, {
      'a-settings.yaml': configMap('settings'),
      'b-migrate.yaml': JOB,
      'c-elsewhere.yaml': configMap('elsewhere', 'other'),
    });
    const synced = await syncTrack(track, { trigger: 'manual' }, fixture.deps);
    assert.equal(synced.result, 'applied', synced.error);

    // Act
    const text = await driftless(track, 'status', '--track', track.name, '--objects');
    const json = await driftless(track, 'status', '--track', track.name, '--objects', '-o', 'json');

    // Assess
    assert.equal(text.code, 0, text.stderr);
    const table = text.stdout.slice(text.stdout.indexOf('OBJECT '));
    const rows = table
      .split('\n')
      .slice(1)
      .filter(Boolean)
      .map((line) => line.split(/\s{2,}/));
    assert.deepEqual(
      rows.map((row) => row.slice(0, 3)),
      [
        [`ConfigMap/${ns}/settings`, 'v1', 'InSync'],
        ['ConfigMap/other/elsewhere', 'v1', 'Ignored'],
        [`Job/${ns}/migrate`, 'batch/v1', 'Ignored'],
      ],
    );
    assert.deepEqual(rows[1]?.slice(3), [
      '-',
      `namespace other is outside the track's namespace ${ns}`,
    ]);
    assert.deepEqual(rows[2]?.slice(3), ['-', 'resource jobs.batch/v1 is ignored']);

    assert.equal(json.code, 0, json.stderr);
    const document = JSON.parse(json.stdout) as Record<string, unknown>;
    const plain = JSON.parse(
      (await driftless(track, 'status', '--track', track.name, '-o', 'json')).stdout,
    ) as Record<string, unknown>;
    // Only added: every field of the status document, then `objects` as before, then `ignored`.
    assert.deepEqual(Object.keys(document), [...Object.keys(plain), 'objects', 'ignored']);
    assert.deepEqual(
      (document['objects'] as Record<string, unknown>[]).map((o) => [
        Object.keys(o),
        o['subject'],
        o['sync'],
      ]),
      [
        [
          ['subject', 'apiVersion', 'sync', 'health', 'message'],
          `ConfigMap/${ns}/settings`,
          'InSync',
        ],
      ],
    );
    assert.deepEqual(document['ignored'], [
      {
        subject: 'ConfigMap/other/elsewhere',
        apiVersion: 'v1',
        reason: `namespace other is outside the track's namespace ${ns}`,
      },
      {
        subject: `Job/${ns}/migrate`,
        apiVersion: 'batch/v1',
        reason: 'resource jobs.batch/v1 is ignored',
      },
    ]);
    assert.equal(document['objectsIgnored'], 2);
  });
});
