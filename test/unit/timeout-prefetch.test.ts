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
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, describe, it, mock } from 'node:test';
import { openLocalContext, PREFETCH_UNCLAIMED_MS } from '../../src/sync/local-context.ts';
import { generateServingCertificate } from '../harness/certificates.ts';

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
  let server: net.Server;
  const sockets = new Set<net.Socket>();
  let opened = 0;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-timeout-prefetch-'));
    server = net.createServer((socket) => {
      opened++;
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      // Read what the client sends (its ClientHello), so its closing is seen.
      socket.resume();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    // Any CA will do: the handshake never gets as far as the certificate.
    const { caCert } = await generateServingCertificate(dir);
    await writeFile(
      join(dir, 'kubeconfig'),
      [
        'apiVersion: v1',
        'kind: Config',
        `clusters: [{name: hung, cluster: {server: "https://127.0.0.1:${port}", certificate-authority: ${caCert}}}]`,
        'users: [{name: admin, user: {token: not-a-secret}}]',
        'contexts: [{name: hung, context: {cluster: hung, user: admin}}]',
        'current-context: hung',
        '',
      ].join('\n'),
    );
    config = join(dir, 'driftless.yaml');
    await writeFile(
      config,
      [
        `store: {type: fs, path: ${join(dir, 'store')}}`,
        `clusters: [{name: hung, kubeconfig: ${join(dir, 'kubeconfig')}}]`,
        'tracks: [{name: web, repository: https://git.example.com/web.git, namespace: apps}]',
        '',
      ].join('\n'),
    );
  });

  afterEach(() => {
    mock.timers.reset();
  });

  after(async () => {
    for (const socket of sockets) socket.destroy();
    server?.close();
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
        await afterIo(() => opened === 1 && sockets.size === 1),
        'the context connected to read discovery',
      );

      // Act and assess: kept until its time is up, then cancelled and its connection closed
      mock.timers.tick(PREFETCH_UNCLAIMED_MS - 1);
      assert.equal(await afterIo(() => sockets.size === 0, 50), false, 'closed too early');
      mock.timers.tick(1);
      assert.ok(
        await afterIo(() => sockets.size === 0),
        `${sockets.size} connection(s) still open after ${PREFETCH_UNCLAIMED_MS} ms unclaimed`,
      );
    } finally {
      ctx.close();
    }
  });
});
