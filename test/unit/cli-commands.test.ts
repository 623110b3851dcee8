import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, beforeEach, describe, it } from 'node:test';
import type { LocalContext } from '../../src/sync/local-context.ts';
import { cliOver } from '../harness/run-cli.ts';
import { InMemoryCluster } from './fakes/in-memory-cluster.ts';
import { objectKey } from '../../src/cluster/kube-object.ts';
import { parseConfig } from '../../src/config/index.ts';
import type { GitSource } from '../../src/source/ports.ts';
import { createStore } from '../../src/store/create-store.ts';
import type { ClosableStore } from '../../src/store/create-store.ts';
import { spawn } from 'node:child_process';
import { currentProcess, type ProcessIdentity } from '../../src/local-process.ts';
import { emptyTrackState, type TrackState } from '../../src/sync/track-state.ts';

const SHA = 'a'.repeat(40);
const TRACK_LABEL = 'driftless.dev/track';

const CONFIG = `
tracks:
  - name: web
    repository: https://git.example.com/org/web.git
    namespace: apps
    dependsOn: [infra]
  - name: infra
    repository: https://git.example.com/org/infra.git
    namespace: apps
`;

const FILES = `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: fast
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
`;

const WEB_FILES = `apiVersion: v1
kind: ConfigMap
metadata:
  name: web
data:
  greeting: hello
`;

/** A cluster in memory: server-side apply as a shallow merge, resourceVersion bumped on change. */
class FakeCluster extends InMemoryCluster {}

/**
 * A Git source whose every track is at {@link SHA}, with the files given per track: `<track>`
 * is deploy/all.yaml, `<track>/<file>` another file under deploy/.
 */
function fakeSource(files: Readonly<Record<string, string>>): GitSource {
  return {
    resolve: async () => ({ revision: SHA, ref: 'refs/heads/main' }),
    readFiles: async (track) => [
      { path: 'deploy/all.yaml', content: new TextEncoder().encode(files[track.name] ?? '') },
      ...Object.entries(files)
        .filter(([name]) => name.startsWith(`${track.name}/`))
        .map(([name, text]) => ({
          path: `deploy/${name.slice(track.name.length + 1)}`,
          content: new TextEncoder().encode(text),
        })),
    ],
  };
}

describe('driftless commands over fake ports', () => {
  let dir: string;
  let store: ClosableStore;
  let cluster: FakeCluster;
  let files: Record<string, string>;
  let config: string;

  const context = (): LocalContext => ({
    config: parseConfig(config, 'driftless.yaml'),
    artifacts: store.artifacts,
    state: store.state,
    source: async () => fakeSource(files),
    cluster: async () => cluster,
    close: () => undefined,
  });

  const driftless = cliOver(context);

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-cli-'));
    store = createStore({ type: 'fs', path: join(dir, 'store') });
    cluster = new FakeCluster();
    files = { infra: FILES, web: WEB_FILES };
    config = CONFIG;
  });

  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  describe('sync', () => {
    it('says on stderr which files of the revision were skipped as holding no object', async () => {
      // Prepare: a ConfigMap written with Kind: for kind: holds no object to the reader
      files['infra/typo.yaml'] = 'apiversion: v1\nKind: ConfigMap\nmetadata: {name: typo}\n';

      // Act
      const result = await driftless('sync', '--track', 'infra', '-o', 'json');

      // Assess
      assert.equal(result.code, 0, result.stderr);
      assert.match(
        result.stderr,
        /^infra: revision a{40} parsed and stored; 1 file skipped \(no Kubernetes object to apply\): deploy\/typo\.yaml$/m,
      );
    });

    it('prints one object in DESIGN.md shape for --track -o json and exits 0', async () => {
      // Prepare
      await driftless('sync', '--track', 'infra');

      // Act
      const result = await driftless('sync', '--track', 'web', '-o', 'json');

      // Assess
      assert.equal(result.code, 0, result.stderr);
      const document = JSON.parse(result.stdout);
      assert.deepEqual(Object.keys(document), [
        'track',
        'revision',
        'result',
        'changeset',
        'status',
      ]);
      assert.equal(document.track, 'web');
      assert.equal(document.revision, SHA);
      assert.equal(document.result, 'applied');
      assert.deepEqual(document.changeset, [{ subject: 'ConfigMap/apps/web', action: 'created' }]);
      assert.equal(document.status.track, 'web');
      assert.equal(document.status.appliedRevision, SHA);
    });

    it('syncs every track in dependsOn order and prints an array', async () => {
      // Act
      const result = await driftless('sync', '-o', 'json');

      // Assess
      assert.equal(result.code, 0, result.stderr);
      const documents = JSON.parse(result.stdout);
      assert.deepEqual(
        documents.map((d: { track: string; result: string }) => [d.track, d.result]),
        [
          ['infra', 'applied'],
          ['web', 'applied'],
        ],
      );
    });

    it('exits 3 and reports the reason when a track fails', async () => {
      // Prepare
      files = { infra: 'apiVersion: v1\nkind: ConfigMap\nmetadata: [not, a, map]\n' };

      // Act
      const result = await driftless('sync', '--track', 'infra', '-o', 'json');

      // Assess
      assert.equal(result.code, 3);
      const document = JSON.parse(result.stdout);
      assert.equal(document.result, 'failed');
      assert.equal(typeof document.error, 'string');
    });

    it('prints a table of the changeset with counts for people', async () => {
      // Act
      const result = await driftless('sync', '--track', 'infra');

      // Assess
      assert.equal(result.code, 0, result.stderr);
      assert.equal(
        result.stdout,
        [
          `infra: applied ${SHA.slice(0, 12)}`,
          'SUBJECT                  ACTION   ERROR',
          'ConfigMap/apps/settings  created',
          'Deployment/apps/web      created',
          '2 objects: 2 created',
          '',
        ].join('\n'),
      );
    });
  });

  describe('suspend, resume and delete', () => {
    it('suspends in stored state: sync refuses by name, status says so; resume syncs', async () => {
      // Act
      const suspended = await driftless('suspend', '--track', 'infra');
      const refused = await driftless('sync', '--track', 'infra');
      const status = JSON.parse(
        (await driftless('status', '--track', 'infra', '-o', 'json')).stdout,
      );
      const resumed = await driftless('resume', '--track', 'infra');

      // Assess
      assert.equal(suspended.code, 0, suspended.stderr);
      assert.equal(refused.code, 2);
      assert.match(
        refused.stderr,
        /track "infra" is suspended \(by "driftless suspend"; run "driftless resume"\)/,
      );
      assert.equal(status.suspended, true);
      assert.equal(resumed.code, 0, resumed.stderr);
      assert.match(resumed.stdout, /infra: resumed\ninfra: applied/);
      assert.equal(cluster.objects.size, 2);
    });

    it('lists a track removed from the config until "delete" collects it on the cluster it used', async () => {
      // Prepare: "old" applied a ConfigMap, then left the config.
      await cluster.apply(
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'old', namespace: 'apps', labels: { [TRACK_LABEL]: 'old' } },
        },
        { fieldManager: 'driftless', force: true },
      );
      await store.state.write(
        'old',
        {
          ...emptyTrackState(),
          appliedRevision: SHA,
          cluster: 'default',
          inventory: [{ subject: 'ConfigMap/apps/old', apiVersion: 'v1' }],
        },
        undefined,
      );

      // Act
      const text = await driftless('status');
      const json = JSON.parse((await driftless('status', '-o', 'json')).stdout);
      const deleted = await driftless('delete', '--track', 'old', '-o', 'json');
      const after = await driftless('status');

      // Assess
      assert.match(
        text.stdout,
        /old: removed from \.\/driftless\.yaml but still has state and objects/,
      );
      assert.deepEqual(
        json.map((d: { track: string; removedFromConfig?: boolean }) => [
          d.track,
          d.removedFromConfig,
        ]),
        [
          ['web', undefined],
          ['infra', undefined],
          ['old', true],
        ],
      );
      assert.equal(deleted.code, 0, deleted.stderr);
      const result = JSON.parse(deleted.stdout);
      assert.equal(result.result, 'deleted');
      assert.equal(result.policy, 'Delete');
      assert.deepEqual(result.changeset, [{ subject: 'ConfigMap/apps/old', action: 'deleted' }]);
      assert.equal(cluster.objects.size, 0);
      assert.doesNotMatch(after.stdout, /old/);
      assert.equal((await store.state.listHistory('old'))[0]?.result, 'deleted');
    });

    it('says a track with no state has nothing to delete, leaves its objects and records nothing', async () => {
      // Prepare: "infra" synced, then deleted leaving its objects: it has history but no state.
      await driftless('sync', '--track', 'infra');
      const orphaned = await driftless('delete', '--track', 'infra', '--policy', 'Orphan');
      assert.equal(orphaned.code, 0, orphaned.stderr);

      // Act: deleted again, as Delete, twice.
      const json = await driftless(
        'delete',
        '--track',
        'infra',
        '--policy',
        'Delete',
        '-o',
        'json',
      );
      const text = await driftless('delete', '--track', 'infra', '--policy', 'Delete');

      // Assess: nothing collected, nothing written, and both outputs say why.
      assert.equal(json.code, 0, json.stderr);
      const result = JSON.parse(json.stdout);
      assert.equal(result.result, 'deleted');
      assert.equal(result.unchanged, true);
      assert.deepEqual(result.changeset, []);
      assert.match(
        result.note,
        /^the track has no state \(no inventory\): nothing was collected; objects labelled for it, if any, stay in the cluster$/,
      );
      assert.equal(text.code, 0, text.stderr);
      assert.equal(
        text.stdout,
        [
          '  the track has no state (no inventory): nothing was collected; objects labelled for it, if any, stay in the cluster',
          'infra: nothing to delete; nothing was recorded in its history',
          '',
        ].join('\n'),
      );
      assert.equal(cluster.objects.size, 2);
      assert.deepEqual(await store.state.listTracks(), []);
      assert.deepEqual(
        (await store.state.listHistory('infra')).map((entry) => entry.result),
        ['deleted', 'applied'],
      );
    });

    it('names each object a delete could not delete once, before its error', async () => {
      // Prepare: "infra" synced; then its Deployments may not be read.
      await driftless('sync', '--track', 'infra');
      cluster.failingKinds.add('Deployment');

      // Act
      const text = await driftless('delete', '--track', 'infra');

      // Assess
      assert.equal(text.code, 3, text.stderr);
      const lines = text.stdout.split('\n');
      assert.deepEqual(lines.slice(0, 2), [
        '  deleted   ConfigMap/apps/settings',
        '  failed    Deployment/apps/web: Deployment: forbidden',
      ]);
      assert.match(lines[2] ?? '', /^infra: not deleted: /);
    });

    it('records nothing and changes no condition when suspend, resume or unpin find the track as asked', async () => {
      // Prepare
      await driftless('sync', '--track', 'infra');
      await driftless('suspend', '--track', 'infra');
      const version = async () => (await store.state.read<TrackState>('infra'))?.version;
      const suspendedAt = await version();

      // Act
      const again = await driftless('suspend', '--track', 'infra');
      const stillAt = await version();
      await driftless('resume', '--track', 'infra');
      const resumedTwice = await driftless('resume', '--track', 'infra');
      const unpinned = await driftless('unpin', '--track', 'infra');

      // Assess: the no-ops say so and write nothing; resume and unpin still sync, as documented.
      assert.equal(again.code, 0, again.stderr);
      assert.match(again.stdout, /^infra: already suspended; nothing changed/);
      assert.equal(stillAt, suspendedAt);
      assert.equal(resumedTwice.code, 0, resumedTwice.stderr);
      assert.match(
        resumedTwice.stdout,
        /^infra: was not suspended; nothing to resume\ninfra: unchanged/,
      );
      assert.equal(unpinned.code, 0, unpinned.stderr);
      assert.match(unpinned.stdout, /^infra: was not pinned\ninfra: unchanged/);
      const lifecycle = (await store.state.listHistory('infra'))
        .map((entry) => entry.result)
        .filter((result) => ['suspended', 'resumed', 'unpinned'].includes(result));
      assert.deepEqual(lifecycle, ['resumed', 'suspended']);
    });

    it('shows a suspended track as suspended in the list whatever the Ready reason', async () => {
      // Prepare: suspended, then rolled back (RolledBack) and unpinned (Unpinned).
      await driftless('sync', '--track', 'infra');
      await driftless('suspend', '--track', 'infra');
      const row = async () =>
        (await driftless('status')).stdout.split('\n').find((line) => line.startsWith('infra '));

      // Act
      const rolledBack = await driftless('rollback', '--track', 'infra', '--revision', SHA);
      const afterRollback = await row();
      await driftless('unpin', '--track', 'infra');
      const afterUnpin = await row();
      const detail = await driftless('status', '--track', 'infra');

      // Assess
      assert.equal(rolledBack.code, 0, rolledBack.stderr);
      assert.match(afterRollback ?? '', /True .* suspended; /);
      assert.match(afterUnpin ?? '', /Unknown .* suspended; unpinned from a{40}/);
      assert.match(detail.stdout, /Suspended: yes/);
    });

    it('shows the status and history of a track deleted and then removed from the config', async () => {
      // Prepare: "infra" synced and deleted; "old" left the config with its state.
      await driftless('sync', '--track', 'infra');
      await driftless('delete', '--track', 'infra');
      await store.state.write(
        'old',
        { ...emptyTrackState(), appliedRevision: SHA, cluster: 'default' },
        undefined,
      );
      await store.state.appendHistory('old', {
        revision: SHA,
        appliedAt: '2024-01-01T00:00:00.000Z',
        result: 'applied',
        trigger: 'manual',
      });
      config = `
tracks:
  - name: web
    repository: https://git.example.com/org/web.git
    namespace: apps
`;

      // Act
      const history = await driftless('history', '--track', 'infra', '-o', 'json');
      const historyText = await driftless('history', '--track', 'infra');
      const deleted = await driftless('status', '--track', 'infra');
      const deletedJson = await driftless('status', '--track', 'infra', '-o', 'json');
      const removed = await driftless('status', '--track', 'old');
      const removedJson = await driftless('status', '--track', 'old', '-o', 'json');
      const objects = await driftless('status', '--track', 'old', '--objects');
      const typo = await driftless('history', '--track', 'webb');
      const sync = await driftless('sync', '--track', 'infra');

      // Assess
      assert.equal(history.code, 0, history.stderr);
      assert.deepEqual(
        JSON.parse(history.stdout).map((entry: { result: string }) => entry.result),
        ['deleted', 'applied'],
      );
      assert.equal(historyText.code, 0, historyText.stderr);
      assert.match(historyText.stdout, /deleted +manual/);
      assert.equal(deleted.code, 0, deleted.stderr);
      assert.equal(
        deleted.stdout,
        'infra: not in ./driftless.yaml and has no state (deleted); its history stays: "driftless history --track infra"\n',
      );
      assert.equal(deletedJson.code, 0, deletedJson.stderr);
      const deletedDocument = JSON.parse(deletedJson.stdout);
      assert.equal(deletedDocument.track, 'infra');
      assert.equal(deletedDocument.removedFromConfig, true);
      assert.deepEqual(deletedDocument.inventory, []);
      assert.equal(removed.code, 0, removed.stderr);
      assert.match(removed.stdout, new RegExp(`Applied: +${SHA}`));
      assert.match(
        removed.stdout,
        /old: removed from \.\/driftless\.yaml but still has state and objects; "driftless delete --track old" collects it/,
      );
      assert.equal(removedJson.code, 0, removedJson.stderr);
      const removedDocument = JSON.parse(removedJson.stdout);
      assert.equal(removedDocument.appliedRevision, SHA);
      assert.equal(removedDocument.removedFromConfig, true);
      assert.equal(objects.code, 2);
      assert.match(objects.stderr, /--objects: track "old" is no longer in \.\/driftless\.yaml/);
      assert.equal(typo.code, 2);
      assert.match(typo.stderr, /has no track "webb"; did you mean "web"\?/);
      assert.equal(sync.code, 2);
      assert.match(sync.stderr, /has no track "infra"/);
    });

    it('refuses an unknown policy and a track that is neither configured nor stored', async () => {
      // Act
      const policy = await driftless('delete', '--track', 'web', '--policy', 'Purge');
      const unknown = await driftless('delete', '--track', 'nowhere');

      // Assess
      assert.equal(policy.code, 2);
      assert.match(policy.stderr, /--policy must be Delete, Orphan or MirrorPrune, not "Purge"/);
      assert.equal(unknown.code, 2);
      assert.match(unknown.stderr, /has no track "nowhere"/);
    });
  });

  describe('unlock', () => {
    const HOLDER = '3f2a9c1e-7b4d-4e5f-8a9b-0c1d2e3f4a5b';
    /** A sync that holds "infra" from a machine this one cannot look into. */
    const leaseElsewhere = async (process: ProcessIdentity) => {
      const since = new Date();
      await store.state.write(
        'infra',
        {
          ...emptyTrackState(),
          applyLease: {
            holder: HOLDER,
            job: 'sync',
            since: since.toISOString(),
            until: new Date(since.getTime() + 300_000).toISOString(),
            process,
          },
        },
        undefined,
      );
    };
    const BUILD_7 = {
      boot: 'another-machine',
      pidNamespace: 'pid:[1]',
      pid: 4242,
      host: 'build-7',
    };

    it('frees a track a process on another machine holds, by the id the busy error gives, and records it', async () => {
      // Prepare
      await leaseElsewhere(BUILD_7);

      // Act
      const refused = await driftless('sync', '--track', 'infra');
      const busy = JSON.parse(
        (await driftless('status', '--track', 'infra', '-o', 'json')).stdout,
      ).busy;
      const unlocked = await driftless('unlock', '--track', 'infra', '--lease', '3f2a9c1e');
      const synced = await driftless('sync', '--track', 'infra');

      // Assess
      assert.equal(refused.code, 3);
      assert.match(
        refused.stdout + refused.stderr,
        /another apply job runs until .* \(a sync since .*, pid 4242 on build-7; .* or at once with "driftless unlock --track infra --lease 3f2a9c1e"\)/,
      );
      assert.equal(busy.lease, '3f2a9c1e');
      assert.equal(unlocked.code, 0, unlocked.stderr);
      assert.match(
        unlocked.stdout,
        /^infra: unlocked lease 3f2a9c1e \(a sync since .*, pid 4242 on build-7\); the next sync/,
      );
      assert.equal(synced.code, 0, synced.stderr);
      const [applied, unlock] = await store.state.listHistory('infra');
      assert.equal(applied?.result, 'applied');
      assert.equal(unlock?.result, 'unlocked');
      assert.equal(unlock?.trigger, 'manual');
      assert.deepEqual(unlock?.lease, { ...busy });
    });

    it('refuses a lease id that is not the one holding the track, and keeps the lease', async () => {
      // Prepare
      await leaseElsewhere(BUILD_7);

      // Act
      const other = await driftless(
        'unlock',
        '--track',
        'infra',
        '--lease',
        '9d8c7b6a',
        '-o',
        'json',
      );
      const malformed = await driftless('unlock', '--track', 'infra', '--lease', '3f2a');
      const missing = await driftless('unlock', '--track', 'infra');

      // Assess
      assert.equal(other.code, 3);
      assert.doesNotMatch(other.stderr, /another job took it/);
      assert.match(
        other.stderr,
        /track "infra" is held by lease 3f2a9c1e \(a sync since .*, pid 4242 on build-7\), not 9d8c7b6a: check the id \(status shows it\); if that lease is stuck, unlock it by its id$/m,
      );
      assert.equal(malformed.code, 2);
      assert.match(
        malformed.stderr,
        /--lease must be the lease's id as status shows it \(8 hex digits/,
      );
      assert.equal(missing.code, 2);
      assert.match(missing.stderr, /--lease is required/);
      const state = (await store.state.read<TrackState>('infra'))?.value;
      assert.equal(state?.applyLease?.holder, HOLDER);
      assert.deepEqual(await store.state.listHistory('infra'), []);
    });

    const here = currentProcess();
    it(
      'refuses a lease whose process runs on this machine: stopping it gives the lease back',
      {
        skip: here === undefined && 'not Linux: no process is recorded, so none is seen running',
      },
      async () => {
        // Prepare: a live process here (a child that waits) holds the track.
        const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)']);
        try {
          await leaseElsewhere({ ...here!, pid: child.pid ?? 0 });

          // Act
          const refused = await driftless('unlock', '--track', 'infra', '--lease', '3f2a9c1e');

          // Assess
          assert.equal(refused.code, 3);
          assert.match(
            refused.stderr,
            new RegExp(
              `lease 3f2a9c1e is held by pid ${child.pid}, which runs on this machine; stop it`,
            ),
          );
          const state = (await store.state.read<TrackState>('infra'))?.value;
          assert.equal(state?.applyLease?.holder, HOLDER);
        } finally {
          child.kill('SIGKILL');
        }
      },
    );

    it('says a free track has nothing to unlock and writes nothing', async () => {
      // Act
      const free = await driftless(
        'unlock',
        '--track',
        'infra',
        '--lease',
        '3f2a9c1e',
        '-o',
        'json',
      );
      const unknown = await driftless('unlock', '--track', 'nowhere', '--lease', '3f2a9c1e');

      // Assess
      assert.equal(free.code, 0, free.stderr);
      assert.deepEqual(JSON.parse(free.stdout), { track: 'infra', result: 'free', lease: null });
      assert.deepEqual(await store.state.listTracks(), []);
      assert.equal(unknown.code, 2);
      assert.match(unknown.stderr, /has no track "nowhere"/);
    });
  });

  describe('status', () => {
    it('prints exactly the DESIGN.md keys and busy, track first', async () => {
      // Prepare
      await driftless('sync', '--track', 'infra');

      // Act
      const result = await driftless('status', '--track', 'infra', '-o', 'json');

      // Assess
      assert.equal(result.code, 0, result.stderr);
      const document = JSON.parse(result.stdout);
      assert.deepEqual(Object.keys(document), [
        'track',
        'desiredRevision',
        'appliedRevision',
        'pinned',
        'suspended',
        // Not in DESIGN.md: the apply job running on the track, null once the sync ended.
        'busy',
        'conditions',
        'objectsDiscovered',
        'objectsApplied',
        'objectsIgnored',
        'objectsInSync',
        'ignoredObjects',
        'inventory',
      ]);
      assert.equal(document.busy, null);
      assert.deepEqual(document.inventory, [
        { subject: 'ConfigMap/apps/settings', apiVersion: 'v1' },
        { subject: 'Deployment/apps/web', apiVersion: 'apps/v1' },
      ]);
      assert.ok(
        document.conditions.some(
          (c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True',
        ),
      );
    });

    it('prints an array with one object per track without --track', async () => {
      // Act
      const result = await driftless('status', '-o', 'json');

      // Assess
      const documents = JSON.parse(result.stdout);
      assert.deepEqual(
        documents.map((d: { track: string }) => d.track),
        ['web', 'infra'],
      );
      assert.equal(documents[0].appliedRevision, null);
    });
  });

  describe('-o json when the command fails before its result', () => {
    it('prints one JSON document naming the track and the error, and exits as the error says', async () => {
      // Act: a revision never stored, and a track never configured
      const notStored = await driftless(
        'rollback',
        '--track',
        'infra',
        '--revision',
        'abcd1234',
        '-o',
        'json',
      );
      const unknown = await driftless('history', '--track', 'nope', '-o', 'json');
      const text = await driftless('rollback', '--track', 'infra', '--revision', 'abcd1234');

      // Assess
      assert.equal(notStored.code, 3);
      const answer = JSON.parse(notStored.stdout) as { track: string; error: string };
      assert.equal(answer.track, 'infra');
      assert.match(answer.error, /abcd1234/);
      assert.match(notStored.stderr, /^driftless: /);
      assert.equal(unknown.code, 2);
      assert.match((JSON.parse(unknown.stdout) as { error: string }).error, /"nope"/);
      assert.equal(text.stdout, '', 'text output keeps errors on stderr only');
    });
  });

  describe('history', () => {
    it('prints entries newest first, passing extra fields such as error through', async () => {
      // Prepare
      await store.state.appendHistory('web', {
        revision: SHA,
        appliedAt: '2024-01-01T00:00:00.000Z',
        result: 'applied',
        trigger: 'webhook',
      });
      await store.state.appendHistory('web', {
        revision: 'b'.repeat(40),
        appliedAt: '2024-01-02T00:00:00.000Z',
        result: 'failed',
        trigger: 'manual',
        error: 'Deployment/apps/web: boom',
      });

      // Act
      const result = await driftless('history', '--track', 'web', '-o', 'json');

      // Assess
      assert.equal(result.code, 0, result.stderr);
      assert.deepEqual(JSON.parse(result.stdout), [
        {
          revision: 'b'.repeat(40),
          appliedAt: '2024-01-02T00:00:00.000Z',
          result: 'failed',
          trigger: 'manual',
          error: 'Deployment/apps/web: boom',
        },
        {
          revision: SHA,
          appliedAt: '2024-01-01T00:00:00.000Z',
          result: 'applied',
          trigger: 'webhook',
        },
      ]);
    });
  });

  describe('render', () => {
    it('prints the rendered manifests as multi-document YAML', async () => {
      // Act
      const result = await driftless('render', '--track', 'infra');

      // Assess
      assert.equal(result.code, 0, result.stderr);
      assert.equal(
        result.stdout,
        [
          '---',
          '# Source: deploy/all.yaml:1',
          'apiVersion: v1',
          'kind: ConfigMap',
          'metadata:',
          '  name: settings',
          '  namespace: apps',
          'data:',
          '  mode: fast',
          '---',
          '# Source: deploy/all.yaml:8',
          'apiVersion: apps/v1',
          'kind: Deployment',
          'metadata:',
          '  name: web',
          '  namespace: apps',
          'spec:',
          '  replicas: 2',
          '',
        ].join('\n'),
      );
      assert.match(result.stderr, new RegExp(`infra at ${SHA} \\(refs/heads/main\\)`));
    });

    it('prints what sync applies: objects the track leaves out are named on stderr', async () => {
      // Prepare
      config = `${CONFIG}    ignoreResources: [deployments.apps/v1]\n`;

      // Act
      const result = await driftless('render', '--track', 'infra');

      // Assess
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, /kind: ConfigMap/);
      assert.doesNotMatch(result.stdout, /kind: Deployment/);
      assert.match(
        result.stderr,
        /# ignored Deployment\/apps\/web: resource deployments\.apps\/v1 is ignored/,
      );
    });
  });

  describe('diff', () => {
    it('exits 0 and reports no differences right after a sync', async () => {
      // Prepare
      await driftless('sync', '--track', 'infra');

      // Act
      const result = await driftless('diff', '--track', 'infra', '-o', 'json');

      // Assess
      assert.equal(result.code, 0, result.stderr);
      assert.deepEqual(JSON.parse(result.stdout), { track: 'infra', revision: SHA, changes: [] });
    });

    it('names an object another track owns as an error, as sync would refuse it, and exits 3', async () => {
      // Prepare: the ConfigMap exists, labelled for another track
      cluster.objects.set(
        objectKey({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'apps', name: 'settings' }),
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'settings', namespace: 'apps', labels: { [TRACK_LABEL]: 'web' } },
          data: { mode: 'slow' },
        },
      );

      // Act
      const result = await driftless('diff', '--track', 'infra', '-o', 'json');

      // Assess
      assert.equal(result.code, 3, result.stderr);
      const { changes } = JSON.parse(result.stdout) as {
        changes: { subject: string; error?: string }[];
      };
      const settings = changes.find((c) => c.subject === 'ConfigMap/apps/settings');
      assert.match(settings?.error ?? '', /ownership conflict: owned by track "web"/);
    });

    it('lists updates with a diff, creations and prunes, and exits 1', async () => {
      // Prepare: the ConfigMap exists with other data, the Deployment does not,
      // and the inventory holds an owned ConfigMap that left Git.
      cluster.objects.set(
        objectKey({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'apps', name: 'settings' }),
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: {
            name: 'settings',
            namespace: 'apps',
            labels: { [TRACK_LABEL]: 'infra' },
            resourceVersion: '7',
          },
          data: { mode: 'slow' },
        },
      );
      cluster.objects.set(
        objectKey({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'apps', name: 'old' }),
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'old', namespace: 'apps', labels: { [TRACK_LABEL]: 'infra' } },
        },
      );
      await store.state.write(
        'infra',
        {
          ...emptyTrackState(),
          inventory: [
            { subject: 'ConfigMap/apps/old', apiVersion: 'v1' },
            { subject: 'ConfigMap/apps/settings', apiVersion: 'v1' },
          ],
        },
        undefined,
      );

      // Act
      const result = await driftless('diff', '--track', 'infra', '-o', 'json');

      // Assess
      assert.equal(result.code, 1, result.stderr);
      const document = JSON.parse(result.stdout);
      assert.equal(document.revision, SHA);
      assert.deepEqual(
        document.changes.map((c: { subject: string; action: string }) => [c.subject, c.action]),
        [
          ['ConfigMap/apps/settings', 'update'],
          ['Deployment/apps/web', 'create'],
          ['ConfigMap/apps/old', 'prune'],
        ],
      );
      assert.equal(
        document.changes[0].diff,
        [
          '--- live/ConfigMap/apps/settings',
          '+++ desired/ConfigMap/apps/settings',
          '@@ -1,6 +1,6 @@',
          ' apiVersion: v1',
          ' data:',
          '-  mode: slow',
          '+  mode: fast',
          ' kind: ConfigMap',
          ' metadata:',
          '   labels:',
          '',
        ].join('\n'),
      );
      assert.match(
        document.changes[1].diff,
        /^--- \/dev\/null\n\+\+\+ desired\/Deployment\/apps\/web\n/,
      );
      assert.match(
        document.changes[2].diff,
        /^--- live\/ConfigMap\/apps\/old\n\+\+\+ \/dev\/null\n/,
      );
      // A dry-run changes nothing.
      assert.equal(cluster.objects.size, 2);
    });
  });
});
