/**
 * `driftless sync`'s text report over fake ports: a failure names the track,
 * the revision and the reason, without repeating what the changeset's lines
 * already say. Other sync cases: cli-commands.test.ts; pinned tracks:
 * cli-rollback.test.ts.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, beforeEach, describe, it } from 'node:test';
import { cliOver } from '../harness/run-cli.ts';
import { Output } from '../../src/cli/output.ts';
import { formatSyncResult } from '../../src/cli/sync-command.ts';
import { parseConfig } from '../../src/config/index.ts';
import type { GitSource } from '../../src/source/ports.ts';
import { createStore, type ClosableStore } from '../../src/store/create-store.ts';
import type { LocalContext } from '../../src/sync/local-context.ts';
import { emptyTrackState } from '../../src/sync/track-state.ts';
import { InMemoryCluster } from './fakes/in-memory-cluster.ts';

const SHA = 'a'.repeat(40);

/** Waits for health briefly: the fake cluster never makes a Deployment available. */
const CONFIG = `
tracks:
  - name: web
    repository: https://git.example.com/org/web.git
    namespace: apps
    wait: true
    timeout: 1s
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

const source: GitSource = {
  resolve: async () => ({ revision: SHA, ref: 'refs/heads/main' }),
  readFiles: async () => [{ path: 'all.yaml', content: new TextEncoder().encode(FILES) }],
};

describe('driftless sync, text report of a failure', () => {
  let dir: string;
  let store: ClosableStore;
  let cluster: InMemoryCluster;

  const context = (): LocalContext => ({
    config: parseConfig(CONFIG, 'driftless.yaml'),
    artifacts: store.artifacts,
    state: store.state,
    source: async () => source,
    cluster: async () => cluster,
    close: () => undefined,
  });

  const driftless = cliOver(context);

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-cli-sync-'));
    store = createStore({ type: 'fs', path: join(dir, 'store') });
    cluster = new InMemoryCluster();
  });

  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('names the reason a health wait failed above the changeset', async () => {
    // Act
    const result = await driftless('sync', '--track', 'web');

    // Assess
    assert.equal(result.code, 3, result.stderr);
    const [first, ...rest] = result.stdout.split('\n');
    assert.match(
      first ?? '',
      /^web: failed at aaaaaaaaaaaa: not healthy within 1000 ms: Deployment\/apps\/web: /,
    );
    assert.equal(rest[0], 'SUBJECT                  ACTION   ERROR');
    assert.match(result.stdout, /2 objects: 2 created\n$/);
  });

  it('does not repeat an object error the changeset shows', async () => {
    // Prepare
    cluster.failingKinds.add('Deployment');

    // Act
    const result = await driftless('sync', '--track', 'web');

    // Assess
    assert.equal(result.code, 3, result.stderr);
    const lines = result.stdout.split('\n');
    assert.equal(lines[0], 'web: failed at aaaaaaaaaaaa');
    assert.equal(result.stdout.match(/forbidden/g)?.length, 1, result.stdout);
  });

  it('keeps what the error says beyond the failed objects, such as an interruption', () => {
    // Prepare: an object error holding "; " itself, as describeFailures joins the parts
    const denied = 'ConfigMap/apps/a: denied; ask the admin';
    const output = new Output({
      stdout: { write: () => true },
      stderr: { write: () => true },
      env: {},
    });

    // Act
    const text = formatSyncResult(
      {
        track: 'web',
        revision: SHA,
        result: 'failed',
        changeset: [
          { subject: 'ConfigMap/apps/a', action: 'failed', error: denied },
          { subject: 'ConfigMap/apps/b', action: 'failed' },
        ],
        state: emptyTrackState(),
        error: `interrupted: 1 of 3 objects not applied; ${denied}; ConfigMap/apps/b`,
      },
      output,
    );

    // Assess
    assert.equal(
      text.split('\n')[0],
      'web: failed at aaaaaaaaaaaa: interrupted: 1 of 3 objects not applied',
    );
  });
});
