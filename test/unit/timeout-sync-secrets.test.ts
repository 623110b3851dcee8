/**
 * A sync ends within the track's `timeout` when a secret's source stops answering: reading the
 * track's `substituteFrom` secrets and `decryption` keys for the apply counts against the sync's
 * deadline, as its cluster requests do, and the sync fails with the deadline's error — recorded
 * as a sync that ran out of time, not as a revision that cannot be used (FilesParsed stays as
 * the fetch left it). The real fs store and CLI; a secret reader that never answers, the
 * in-memory cluster fake. Each test's own timeout guards against a sync that hangs.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseConfig } from '../../src/config/index.ts';
import type { SecretRef } from '../../src/config/secret-ref.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import type { LocalContext } from '../../src/sync/local-context.ts';
import { readTrackState } from '../../src/sync/track-state.ts';
import { cliOver } from '../harness/run-cli.ts';
import { gitAt } from './fakes/git-sources.ts';
import { InMemoryCluster } from './fakes/in-memory-cluster.ts';

const gaveUp = `track "web": the sync did not finish within the track's timeout (1000 ms)`;

describe('sync against a secret source that stops answering', () => {
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-timeout-sync-secrets-'));
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it(
    'fails at the timeout when a substituteFrom secret is never read',
    { timeout: 10_000 },
    async () => {
      // Prepare: the revision resolves and renders; its variables' secret is never answered.
      const asked: SecretRef[] = [];
      const readSecret = (ref: SecretRef): Promise<string> => {
        asked.push(ref);
        return new Promise<string>(() => undefined);
      };
      const store = new FsStore({ path: await mkdtemp(join(dir, 'store-')) });
      const cluster = new InMemoryCluster();
      const driftless = cliOver((): LocalContext => ({
        config: parseConfig(
          `tracks: [{name: web, repository: https://git.example.com/web.git, namespace: apps, timeout: 1s, substituteFrom: [{secret: env:WEB_VARS}]}]`,
          'driftless.yaml',
        ),
        artifacts: store,
        state: store,
        readSecret,
        source: async () => gitAt(['settings']),
        cluster: async () => cluster,
        close: () => undefined,
      }));

      // Act
      const run = await driftless('sync', '--track', 'web', '-o', 'json');

      // Assess: the secret was asked for; the sync failed at its deadline, nothing applied, and
      // the revision itself is not blamed.
      assert.equal(asked.length, 1, 'the substituteFrom secret was asked for');
      assert.equal(run.code, 3, run.stdout);
      const result = JSON.parse(run.stdout) as { result: string; error?: string };
      assert.equal(result.result, 'failed');
      assert.equal(result.error, gaveUp);
      const state = await readTrackState(store, 'web');
      assert.equal(state.appliedRevision, null);
      const filesParsed = state.conditions.find((c) => c.type === 'FilesParsed');
      assert.notEqual(filesParsed?.status, 'False', JSON.stringify(state.conditions));
    },
  );
  it(
    'ends a drift check at the timeout when a substituteFrom secret is never read',
    { timeout: 10_000 },
    async () => {
      // Prepare: the track syncs with its secret answered; then the secret's source goes silent.
      let answering = true;
      const asked: SecretRef[] = [];
      const readSecret = (ref: SecretRef): Promise<string> => {
        asked.push(ref);
        return answering
          ? Promise.resolve('{"LEVEL": "info"}')
          : new Promise<string>(() => undefined);
      };
      const store = new FsStore({ path: await mkdtemp(join(dir, 'store-')) });
      const cluster = new InMemoryCluster();
      const driftless = cliOver((): LocalContext => ({
        config: parseConfig(
          `tracks: [{name: web, repository: https://git.example.com/web.git, namespace: apps, timeout: 1s, substituteFrom: [{secret: env:WEB_VARS}]}]`,
          'driftless.yaml',
        ),
        artifacts: store,
        state: store,
        readSecret,
        source: async () => gitAt(['settings']),
        cluster: async () => cluster,
        close: () => undefined,
      }));
      const synced = await driftless('sync', '--track', 'web', '-o', 'json');
      assert.equal(synced.code, 0, synced.stdout + synced.stderr);
      answering = false;

      // Act
      const run = await driftless('drift', '--track', 'web', '-o', 'json');

      // Assess: the secret was asked for again, and the check ended at its deadline, saying so;
      // the track is free again (its lease given back).
      assert.equal(asked.length, 2, 'the substituteFrom secret was asked for by the check');
      assert.equal(run.code, 3, run.stdout + run.stderr);
      assert.match(
        run.stdout + run.stderr,
        /did not finish within the track's timeout \(1000 ms\)/,
      );
      assert.equal((await readTrackState(store, 'web')).applyLease, null);
    },
  );
});
