/**
 * `driftless diff` ends within the track's `timeout`, counted from its start, however long its Git
 * host or a secret's source keeps it waiting: the resolve of the track's reference and the reads
 * of its `substituteFrom` secrets and `decryption` keys count against the same deadline as the
 * cluster's dry-runs, and one that never answers ends the diff with the deadline's error, as a
 * failed command reports it. The real fs store and CLI; a Git source or secret reader that never
 * answers, the in-memory cluster fake. Each test's own timeout guards against a diff that hangs.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseConfig } from '../../src/config/index.ts';
import type { SecretRef } from '../../src/config/secret-ref.ts';
import type { GitSource } from '../../src/source/ports.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import type { LocalContext } from '../../src/sync/local-context.ts';
import { cliOver, type CliRun } from '../harness/run-cli.ts';
import { gitAt } from './fakes/git-sources.ts';
import { InMemoryCluster } from './fakes/in-memory-cluster.ts';

/** The shortest `timeout` a track may set. */
const gaveUp = `track "web": the diff did not finish within the track's timeout (1000 ms)`;

const track = (extra: string): string =>
  `tracks: [{name: web, repository: https://git.example.com/web.git, namespace: apps, timeout: 1s${extra}}]`;

/** A SOPS-encrypted Secret, as far as the render can tell: decrypting it needs the track's keys. */
const encryptedSecret = [
  'apiVersion: v1',
  'kind: Secret',
  'metadata: {name: db, namespace: apps}',
  'stringData:',
  '  password: ENC[AES256_GCM,data:ZGF0YQ1=,iv:aXY1=,tag:dGFn1=,type:str]',
  'sops:',
  '  mac: ENC[AES256_GCM,data:bWFj,iv:aXY=,tag:dGFn,type:str]',
  '  version: 3.13.3',
  '',
].join('\n');

/** A secret source that takes the read and never answers; what it was asked for. */
function silentSecrets(): { read: (ref: SecretRef) => Promise<string>; asked: SecretRef[] } {
  const asked: SecretRef[] = [];
  return {
    asked,
    read: (ref) => {
      asked.push(ref);
      return new Promise<string>(() => undefined);
    },
  };
}

describe('diff against a Git host or a secret source that stops answering', () => {
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-timeout-diff-resolve-'));
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** `diff --track web -o json` over a fresh store, the in-memory cluster and these fakes. */
  async function diff(
    config: string,
    source: GitSource,
    readSecret?: (ref: SecretRef) => Promise<string>,
  ): Promise<CliRun> {
    const store = new FsStore({ path: await mkdtemp(join(dir, 'store-')) });
    const driftless = cliOver((): LocalContext => ({
      config: parseConfig(config, 'driftless.yaml'),
      artifacts: store,
      state: store,
      ...(readSecret === undefined ? {} : { readSecret }),
      source: async () => source,
      cluster: async () => new InMemoryCluster(),
      close: () => undefined,
    }));
    return driftless('diff', '--track', 'web', '-o', 'json');
  }

  /** As diff reports a track it could not compare: exit code 3, the error in JSON and on stderr. */
  function assertGaveUp(run: CliRun): void {
    assert.equal(run.code, 3);
    assert.deepEqual(JSON.parse(run.stdout), { track: 'web', error: gaveUp });
    assert.equal(run.stderr, `driftless: ${gaveUp}\n`);
  }

  it(
    'ends at the timeout when resolving the reference never ends',
    { timeout: 10_000 },
    async () => {
      // Prepare: the ref advertisement is never answered.
      let handed: AbortSignal | undefined;
      const source: GitSource = {
        resolve: (_track, call) => {
          handed = call?.signal;
          return new Promise(() => undefined);
        },
        readFiles: gitAt([]).readFiles,
      };

      // Act
      const run = await diff(track(''), source);

      // Assess: the deadline's error; the resolve under way was told to stop.
      assertGaveUp(run);
      assert.equal(handed?.aborted, true, 'the resolve was handed a signal that aborted');
    },
  );

  it(
    'ends at the timeout when a substituteFrom secret is never read',
    { timeout: 10_000 },
    async () => {
      // Prepare: the revision resolves and renders; its variables' secret is never answered.
      const secrets = silentSecrets();

      // Act
      const run = await diff(
        track(', substituteFrom: [{secret: env:WEB_VARS}]'),
        gitAt(['settings']),
        secrets.read,
      );

      // Assess: the secret was asked for, and the diff ended at the deadline all the same.
      assert.equal(secrets.asked.length, 1, 'the substituteFrom secret was asked for');
      assertGaveUp(run);
    },
  );

  it('ends at the timeout when a decryption key is never read', { timeout: 10_000 }, async () => {
    // Prepare: the revision holds a SOPS file; the track's age key is never answered.
    const secrets = silentSecrets();
    const source: GitSource = {
      ...gitAt([]),
      readFiles: async () => [
        { path: 'db.yaml', content: new TextEncoder().encode(encryptedSecret) },
      ],
    };

    // Act
    const run = await diff(
      track(', decryption: {provider: sops, keys: [env:AGE_KEY]}'),
      source,
      secrets.read,
    );

    // Assess
    assert.equal(secrets.asked.length, 1, 'the decryption key was asked for');
    assertGaveUp(run);
  });
});
