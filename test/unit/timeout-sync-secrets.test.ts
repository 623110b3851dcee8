/**
 * A sync, drift check or `status --objects` ends within the track's `timeout` when a secret's source stops
 * answering: reading the track's `substituteFrom` secrets and `decryption` keys counts against
 * the job's deadline, as its cluster requests do, and the job fails with the deadline's error —
 * recorded as a job that ran out of time, not as a revision that cannot be used (FilesParsed
 * stays as the fetch left it), its lease given back. The real fs store and CLI; a secret reader
 * that answers until told to stop, the in-memory cluster fake. Each test's own timeout guards
 * against a job that hangs.
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
import { cliOver, type CliRun } from '../harness/run-cli.ts';
import { gitAt } from './fakes/git-sources.ts';
import { InMemoryCluster } from './fakes/in-memory-cluster.ts';

const CONFIG = `tracks: [{name: web, repository: https://git.example.com/web.git, namespace: apps, timeout: 1s, substituteFrom: [{secret: env:WEB_VARS}]}]`;

describe('sync and drift against a secret source that stops answering', () => {
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-timeout-sync-secrets-'));
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** The CLI over a fresh store; its secret source answers while `answering` says so. */
  async function track() {
    const secrets = { answering: true, asked: [] as SecretRef[] };
    const readSecret = (ref: SecretRef): Promise<string> => {
      secrets.asked.push(ref);
      return secrets.answering
        ? Promise.resolve('{"LEVEL": "info"}')
        : new Promise<string>(() => undefined);
    };
    const store = new FsStore({ path: await mkdtemp(join(dir, 'store-')) });
    const cluster = new InMemoryCluster();
    const driftless = cliOver((): LocalContext => ({
      config: parseConfig(CONFIG, 'driftless.yaml'),
      artifacts: store,
      state: store,
      readSecret,
      source: async () => gitAt(['settings']),
      cluster: async () => cluster,
      close: () => undefined,
    }));
    return { secrets, store, driftless };
  }

  /** The job's deadline, worded as the CLI reports it. */
  const gaveUp = (job: string): string =>
    `track "web": the ${job} did not finish within the track's timeout (1000 ms)`;

  function assertGaveUp(run: CliRun, job: string): void {
    assert.equal(run.code, 3, run.stdout + run.stderr);
    // Its text as printed: in JSON (quotes escaped) or on stderr.
    assert.match(
      run.stdout + run.stderr,
      new RegExp(`the ${job} did not finish within the track's timeout \\(1000 ms\\)`),
    );
  }

  it(
    'fails a sync at the timeout when a substituteFrom secret is never read',
    { timeout: 10_000 },
    async () => {
      // Prepare: the revision resolves and renders; its variables' secret is never answered.
      const { secrets, store, driftless } = await track();
      secrets.answering = false;

      // Act
      const run = await driftless('sync', '--track', 'web', '-o', 'json');

      // Assess: the secret was asked for; the sync failed at its deadline, nothing applied, and
      // the revision itself is not blamed.
      assert.equal(secrets.asked.length, 1, 'the substituteFrom secret was asked for');
      assertGaveUp(run, 'sync');
      const result = JSON.parse(run.stdout) as { result: string; error?: string };
      assert.equal(result.result, 'failed');
      assert.equal(result.error, gaveUp('sync'));
      const state = await readTrackState(store, 'web');
      assert.equal(state.appliedRevision, null);
      const filesParsed = state.conditions.find((c) => c.type === 'FilesParsed');
      assert.notEqual(filesParsed?.status, 'False', JSON.stringify(state.conditions));
    },
  );

  it(
    'ends status --objects at the timeout when a substituteFrom secret is never read',
    { timeout: 10_000 },
    async () => {
      // Prepare: the track syncs with its secret answered; then the secret's source goes silent.
      const { secrets, driftless } = await track();
      const synced = await driftless('sync', '--track', 'web', '-o', 'json');
      assert.equal(synced.code, 0, synced.stdout + synced.stderr);
      secrets.answering = false;

      // Act
      const run = await driftless('status', '--track', 'web', '--objects', '-o', 'json');

      // Assess: the secret was asked for again, and the reading ended at its deadline, saying so
      assert.equal(secrets.asked.length, 2, 'the substituteFrom secret was asked for by it');
      assertGaveUp(run, 'status check');
    },
  );

  it(
    'ends a drift check at the timeout when a substituteFrom secret is never read',
    { timeout: 10_000 },
    async () => {
      // Prepare: the track syncs with its secret answered; then the secret's source goes silent.
      const { secrets, store, driftless } = await track();
      const synced = await driftless('sync', '--track', 'web', '-o', 'json');
      assert.equal(synced.code, 0, synced.stdout + synced.stderr);
      secrets.answering = false;

      // Act
      const run = await driftless('drift', '--track', 'web', '-o', 'json');

      // Assess: the check asked for the secret again and ended at its deadline, saying so; the
      // track is free again (its lease given back).
      assert.equal(secrets.asked.length, 2, 'the substituteFrom secret was asked for by the check');
      assertGaveUp(run, 'drift check');
      assert.equal((await readTrackState(store, 'web')).applyLease, null);
    },
  );
});
