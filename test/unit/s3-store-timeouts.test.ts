/**
 * The store's S3 client gives up on a server that accepts connections and
 * never answers, instead of holding the function until its own timeout.
 * The server is a plain loopback socket that reads and says nothing.
 */
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { StoreUnavailableError } from '../../src/store/errors.ts';
import { S3Store } from '../../src/store/s3-store.ts';

describe('S3Store against a server that never answers', () => {
  let server: Server;
  let endpoint: string;
  const sockets = new Set<Socket>();

  before(async () => {
    server = createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.resume();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    assert.ok(address !== null && typeof address === 'object');
    endpoint = `http://127.0.0.1:${address.port}`;
  });

  after(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('fails the read as the store being unavailable once the connection stays silent', async () => {
    // Prepare
    const store = new S3Store({
      bucket: 'silent',
      endpoint,
      region: 'eu-west-1',
      timeouts: { connectionTimeout: 500, socketTimeout: 300 },
    });
    const credentials = { AWS_ACCESS_KEY_ID: 'x', AWS_SECRET_ACCESS_KEY: 'y' };
    const saved = Object.fromEntries(Object.keys(credentials).map((k) => [k, process.env[k]]));
    Object.assign(process.env, credentials);

    try {
      // Act
      const reading = store.read('web');

      // Assess
      await assert.rejects(reading, (error: unknown) => {
        assert.ok(error instanceof StoreUnavailableError, String(error));
        assert.match(error.message, /state\/web\.json/);
        return true;
      });
    } finally {
      store.close();
      for (const [key, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    }
  });
});
