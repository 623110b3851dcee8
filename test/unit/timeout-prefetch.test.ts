/**
 * The discovery read the local context starts as it connects a cluster, ahead of the calls that
 * will need it, is not kept for long when nothing comes to wait for it: in `serve`, whose context
 * is closed only when it stops, a read of an API server that never answers would otherwise hold
 * its connection open until then. The real local context, reaching the cluster through
 * driftless.yaml and a kubeconfig; a loopback TCP server of the test's own that takes connections
 * and never finishes the TLS handshake stands in for the hung server. The timers are the test's
 * to move.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, describe, it, mock } from 'node:test';
import { openLocalContext, PREFETCH_UNCLAIMED_MS } from '../../src/sync/local-context.ts';
import {
  silentServer,
  writeHungClusterConfig,
  type SilentServer,
} from './fakes/hung-api-server.ts';

/** Whether `done()` holds once I/O has had `rounds` turns (no timer: the timers are mocked). */
async function afterIo(done: () => boolean, rounds = 200): Promise<boolean> {
  for (let round = 0; round < rounds && !done(); round++) {
    await new Promise((resolve) => setImmediate(resolve));
  }
  return done();
}

describe('a discovery read started ahead of need', () => {
  let dir: string;
  let config: string;
  let server: SilentServer;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-timeout-prefetch-'));
    server = await silentServer();
    config = await writeHungClusterConfig(
      dir,
      server.port,
      '{name: web, repository: https://git.example.com/web.git, namespace: apps}',
    );
  });

  afterEach(() => {
    mock.timers.reset();
  });

  after(async () => {
    server?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('is cancelled, closing its connection, when nothing waited for it in time', async () => {
    // Prepare: a context that stays open, as serve's does; a job connects the cluster and never
    // reads discovery (a pinned track, a Git fetch that failed).
    mock.timers.enable({ apis: ['setTimeout'] });
    const ctx = await openLocalContext(config, {});
    try {
      await ctx.cluster({ name: 'web', cluster: 'hung' });
      assert.ok(
        await afterIo(() => server.opened() === 1 && server.open() === 1),
        'the context connected to read discovery',
      );

      // Act and assess: kept until its time is up, then cancelled and its connection closed
      mock.timers.tick(PREFETCH_UNCLAIMED_MS - 1);
      assert.equal(await afterIo(() => server.open() === 0, 50), false, 'closed too early');
      mock.timers.tick(1);
      assert.ok(
        await afterIo(() => server.open() === 0),
        `${server.open()} connection(s) still open after ${PREFETCH_UNCLAIMED_MS} ms unclaimed`,
      );
    } finally {
      ctx.close();
    }
  });
});
