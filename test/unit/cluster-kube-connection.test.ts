/**
 * How the transport reaches a TLS API server: HTTP/2 when the server offers
 * it, HTTP/1.1 when it does not, a new connection after the server closes
 * one, and no idle connection keeping the process alive — against local Node
 * servers with a certificate from a test CA (openssl).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http2 from 'node:http2';
import https from 'node:https';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { APPLY_CONCURRENCY } from '../../src/apply/apply-objects.ts';
import type { ClusterEndpoint } from '../../src/cluster/cluster-endpoint.ts';
import { ClusterUnreachableError } from '../../src/cluster/errors.ts';
import { createKubeTransport } from '../../src/cluster/kube-http.ts';
import { generateServingCertificate } from '../harness/certificates.ts';
import { mapWithLimit } from '../../src/map-with-limit.ts';
import { REPO_ROOT } from '../harness/testbin.ts';

interface Seen {
  readonly httpVersion: string;
  readonly method: string | undefined;
  readonly url: string | undefined;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** What a server answers, per request. */
type Answer = (
  seen: Seen,
) => { status: number; headers?: Record<string, string> } | 'hang' | 'refuse' | 'cancel';

describe('kube transport over TLS: HTTP/2 where offered', () => {
  let dir: string;
  let tlsFiles: { ca: string; cert: string; key: string };
  let servers: { close(): void }[];
  let seen: Seen[];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-h2-'));
    const files = await generateServingCertificate(dir);
    tlsFiles = {
      ca: await readFile(files.caCert, 'utf8'),
      cert: await readFile(files.cert, 'utf8'),
      key: await readFile(files.key, 'utf8'),
    };
  });

  beforeEach(() => {
    for (const server of servers ?? []) server.close();
    servers = [];
    seen = [];
  });

  after(async () => {
    for (const server of servers) server.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** A server speaking HTTP/2 and HTTP/1.1 (`h2`), or HTTP/1.1 only. */
  async function serve(protocols: 'h2' | 'http/1.1', answer: Answer = () => ({ status: 200 })) {
    const handler = (
      req: http2.Http2ServerRequest | IncomingMessage,
      res: http2.Http2ServerResponse | ServerResponse,
    ): void => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const request = {
          httpVersion: req.httpVersion,
          method: req.method,
          url: req.url,
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        };
        const next = answer(request);
        if (next === 'refuse' && 'stream' in req) {
          req.stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
          return;
        }
        seen.push(request);
        if (next === 'cancel' && 'stream' in req) {
          // Reset after reading the request: the stream closes with no answer and no error.
          req.stream.close(http2.constants.NGHTTP2_CANCEL);
          return;
        }
        if (next === 'hang' || next === 'refuse' || next === 'cancel') return;
        res.writeHead(next.status, { 'content-type': 'application/json', ...next.headers });
        res.end(JSON.stringify({ kind: 'ConfigMap', seen: seen.length }));
      });
    };
    const options = { cert: tlsFiles.cert, key: tlsFiles.key };
    const server =
      protocols === 'h2'
        ? http2.createSecureServer(
            { ...options, allowHTTP1: true, maxSessionMemory: 1024 },
            handler,
          )
        : https.createServer(options, handler);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const sessions = new Set<http2.ServerHttp2Session>();
    server.on('session', (session: http2.ServerHttp2Session) => {
      sessions.add(session);
      session.on('close', () => sessions.delete(session));
    });
    const entry = {
      url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
      sessions,
      close: () => {
        for (const session of sessions) session.destroy();
        server.close();
        if ('closeAllConnections' in server) server.closeAllConnections();
      },
    };
    servers.push(entry);
    return entry;
  }

  function endpoint(server: string): ClusterEndpoint {
    return {
      server,
      ca: Buffer.from(tlsFiles.ca),
      insecureSkipTlsVerify: false,
      label: 'test',
      credentials: {
        current: async () => ({ headers: { Authorization: 'Bearer t' } }),
        invalidate: () => undefined,
      },
    };
  }

  /** A TCP proxy to `target` passing at most `bytesPerSecond` towards it. */
  async function slowProxy(target: URL, bytesPerSecond: number) {
    const proxy = net.createServer((client) => {
      const upstream = net.connect(Number(target.port), target.hostname);
      upstream.pipe(client);
      client.on('data', (chunk: Buffer) => {
        upstream.write(chunk);
        client.pause();
        setTimeout(() => client.resume(), (chunk.length / bytesPerSecond) * 1000);
      });
      client.on('error', () => undefined);
      upstream.on('error', () => undefined);
      client.on('close', () => upstream.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    servers.push({ close: () => proxy.close() });
    return { url: `https://127.0.0.1:${(proxy.address() as AddressInfo).port}` };
  }

  it('speaks HTTP/2 to a server offering it: method, path, query, headers (a list once per value) and body arrive', async () => {
    // Prepare
    const server = await serve('h2');
    const transport = createKubeTransport(endpoint(server.url));

    // Act
    const response = await transport({
      method: 'PATCH',
      path: '/api/v1/namespaces/a/configmaps/x',
      query: { fieldManager: 'driftless', force: 'true' },
      body: { kind: 'ConfigMap', data: { a: '1' } },
      contentType: 'application/apply-patch+yaml',
      headers: { 'Impersonate-User': 'jane', 'Impersonate-Group': ['dev', 'ops'] },
    });

    // Assess
    assert.equal(response.status, 200);
    assert.deepEqual(response.body, { kind: 'ConfigMap', seen: 1 });
    const [request] = seen;
    assert.equal(request?.httpVersion, '2.0');
    assert.equal(request?.method, 'PATCH');
    assert.equal(
      request?.url,
      '/api/v1/namespaces/a/configmaps/x?fieldManager=driftless&force=true',
    );
    assert.equal(request?.headers.authorization, 'Bearer t');
    assert.equal(request?.headers['content-type'], 'application/apply-patch+yaml');
    assert.equal(request?.headers['impersonate-user'], 'jane');
    // Node joins a repeated request header with ", " when it reads it.
    assert.equal(request?.headers['impersonate-group'], 'dev, ops');
    assert.deepEqual(JSON.parse(request?.body ?? ''), { kind: 'ConfigMap', data: { a: '1' } });
  });

  it('sends many requests at once over one HTTP/2 connection', async () => {
    // Prepare
    const server = await serve('h2');
    const transport = createKubeTransport(endpoint(server.url));
    const sessions = new Set<unknown>();
    server.sessions.forEach((session) => sessions.add(session));

    // Act
    const responses = await Promise.all(
      Array.from({ length: 40 }, (_, i) => transport({ method: 'GET', path: `/api/v1/x${i}` })),
    );
    for (const session of server.sessions) sessions.add(session);

    // Assess
    assert.deepEqual(
      responses.map((r) => r.status),
      Array.from({ length: 40 }, () => 200),
    );
    assert.equal(seen.length, 40);
    assert.equal(sessions.size, 1);
    assert.ok(seen.every((s) => s.httpVersion === '2.0'));
  });

  it('carries large applies, 128 in flight, over a slow link: every one is answered, none reset', async () => {
    // Prepare: 150 KB bodies through a proxy that passes ~20 MB/s towards the server, so ~19 MB
    // wait in the client's session while answers arrive (Node resets streams past its default
    // 10 MB: a third of these failed with it, though the server had handled every one).
    const server = await serve('h2');
    const proxy = await slowProxy(new URL(server.url), 20_000_000);
    const transport = createKubeTransport(endpoint(proxy.url));
    const body = { kind: 'ConfigMap', data: { blob: 'x'.repeat(150_000) } };

    // Act
    const answers = await mapWithLimit(
      Array.from({ length: 256 }, (_, i) => i),
      APPLY_CONCURRENCY,
      (i) =>
        transport({ method: 'PATCH', path: `/api/v1/namespaces/a/configmaps/c${i}`, body }).then(
          (response) => String(response.status),
          (error: unknown) => String(error),
        ),
    );

    // Assess
    assert.deepEqual(
      answers.filter((answer) => answer !== '200'),
      [],
    );
    assert.equal(seen.length, 256);
  });

  it('falls back to HTTP/1.1 when the server does not offer HTTP/2, and keeps working', async () => {
    // Prepare
    const server = await serve('http/1.1');
    const transport = createKubeTransport(endpoint(server.url));

    // Act
    const first = await transport({ method: 'GET', path: '/version' });
    const rest = await Promise.all(
      [1, 2, 3].map(() => transport({ method: 'GET', path: '/version' })),
    );

    // Assess
    assert.equal(first.status, 200);
    assert.deepEqual(
      rest.map((r) => r.status),
      [200, 200, 200],
    );
    assert.deepEqual(
      seen.map((s) => s.httpVersion),
      ['1.1', '1.1', '1.1', '1.1'],
    );
  });

  it('reads Retry-After over HTTP/2 and resends the throttled request', async () => {
    // Prepare
    let calls = 0;
    const server = await serve('h2', () =>
      ++calls === 1 ? { status: 429, headers: { 'retry-after': '3' } } : { status: 200 },
    );
    const waits: number[] = [];
    const transport = createKubeTransport(endpoint(server.url), {
      sleep: async (ms) => void waits.push(ms),
    });

    // Act
    const response = await transport({ method: 'GET', path: '/version' });

    // Assess
    assert.equal(response.status, 200);
    assert.deepEqual(waits, [3000]);
    assert.equal(seen.length, 2);
  });

  it('opens a new connection when the server has closed the last one', async () => {
    // Prepare
    const server = await serve('h2');
    const transport = createKubeTransport(endpoint(server.url));
    await transport({ method: 'GET', path: '/one' });
    for (const session of server.sessions) session.close();
    await new Promise((resolve) => setTimeout(resolve, 50));

    // Act
    const response = await transport({ method: 'GET', path: '/two' });

    // Assess
    assert.equal(response.status, 200);
    assert.deepEqual(
      seen.map((s) => s.url),
      ['/one', '/two'],
    );
  });

  it('resends, once, a request the server refused unprocessed (REFUSED_STREAM)', async () => {
    // Prepare: the first attempt of /refused is reset with REFUSED_STREAM, as by a server going away.
    let attempts = 0;
    const server = await serve('h2', ({ url }) =>
      url === '/refused' && attempts++ === 0 ? 'refuse' : { status: 200 },
    );
    const transport = createKubeTransport(endpoint(server.url));
    await transport({ method: 'GET', path: '/first' });

    // Act
    const response = await transport({ method: 'GET', path: '/refused' });

    // Assess
    assert.equal(response.status, 200);
    assert.equal(attempts, 2);
    assert.deepEqual(
      seen.map((s) => s.url),
      ['/first', '/refused'],
    );
  });

  it('fails a request whose stream the server resets without answering, and does not resend it', async () => {
    // Prepare: the server read the request, then reset its stream with CANCEL.
    const server = await serve('h2', ({ url }) => (url === '/reset' ? 'cancel' : { status: 200 }));
    const transport = createKubeTransport(endpoint(server.url));

    // Act
    const failure = await transport({ method: 'POST', path: '/reset', body: { a: 1 } }).catch(
      (error) => error,
    );

    // Assess: the server may have acted on it, so it is not sent again; later requests work.
    assert.ok(failure instanceof ClusterUnreachableError);
    assert.match(
      failure.message,
      /POST https:\/\/127\.0\.0\.1:\d+\/reset: HTTP\/2 stream closed without an answer \(code 8\)/,
    );
    assert.deepEqual(
      seen.map((s) => s.url),
      ['/reset'],
    );
    assert.equal((await transport({ method: 'GET', path: '/after' })).status, 200);
  });

  it('fails a request the server does not answer in time, naming the request', async () => {
    // Prepare
    const server = await serve('h2', () => 'hang');
    const transport = createKubeTransport(endpoint(server.url), { timeoutMs: 200 });

    // Act
    const failure = await transport({ method: 'GET', path: '/slow' }).catch((error) => error);

    // Assess
    assert.ok(failure instanceof ClusterUnreachableError);
    assert.match(failure.message, /GET https:\/\/127\.0\.0\.1:\d+\/slow: no answer within 200 ms/);
  });

  it('replaces a connection that went silent (no answer, no PING answer) instead of timing out every request on it', async () => {
    // Prepare: a TCP relay to the server that can make its open connections drop everything,
    // as a vanished route or load balancer would; connections opened later pass.
    const server = await serve('h2');
    const upstream = new URL(server.url);
    const open = new Set<{ silent: boolean }>();
    const relay = net.createServer((client) => {
      const state = { silent: false };
      open.add(state);
      const target = net.connect(Number(upstream.port), upstream.hostname);
      client.on('data', (chunk) => state.silent || target.write(chunk));
      target.on('data', (chunk) => state.silent || client.write(chunk));
      const end = () => {
        client.destroy();
        target.destroy();
      };
      client.on('error', end).on('close', end);
      target.on('error', end).on('close', end);
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    servers.push({ close: () => relay.close() });
    const relayUrl = `https://127.0.0.1:${(relay.address() as AddressInfo).port}`;
    const transport = createKubeTransport(endpoint(relayUrl), { timeoutMs: 300 });
    await transport({ method: 'GET', path: '/before' });
    for (const connection of open) connection.silent = true;

    // Act: one request times out on the silent connection, its PING goes unanswered too.
    const lost = await transport({ method: 'GET', path: '/lost' }).catch((error) => error);
    await new Promise((resolve) => setTimeout(resolve, 600));
    const after = await transport({ method: 'GET', path: '/after' });

    // Assess
    assert.ok(lost instanceof ClusterUnreachableError);
    assert.equal(after.status, 200);
    assert.deepEqual(
      seen.map((s) => s.url),
      ['/before', '/after'],
    );
  });

  it('refuses a server whose certificate the CA did not sign, as before', async () => {
    // Prepare
    const server = await serve('h2');
    const other = await mkdtemp(join(dir, 'other-'));
    const otherCa = await readFile((await generateServingCertificate(other)).caCert, 'utf8');
    const transport = createKubeTransport({ ...endpoint(server.url), ca: Buffer.from(otherCa) });

    // Act
    const failure = await transport({ method: 'GET', path: '/version' }).catch((error) => error);

    // Assess
    assert.ok(failure instanceof ClusterUnreachableError);
    assert.match(failure.message, /certificate/);
    assert.equal(seen.length, 0);
  });

  it('lets the process exit once its requests are answered (an idle connection holds nothing)', async () => {
    // Prepare: a process that sends one request and then has nothing left to do.
    const server = await serve('h2');
    const script = join(dir, 'one-request.mts');
    await writeFile(
      script,
      [
        `import { createKubeTransport } from ${JSON.stringify(join(REPO_ROOT, 'src/cluster/kube-http.ts'))};`,
        `const transport = createKubeTransport({ server: ${JSON.stringify(server.url)}, ca: ${JSON.stringify(tlsFiles.ca)},`,
        `  insecureSkipTlsVerify: false, label: 'test',`,
        `  credentials: { current: async () => ({ headers: {} }), invalidate: () => undefined } });`,
        `const response = await transport({ method: 'GET', path: '/version' });`,
        `console.log(response.status);`,
      ].join('\n'),
    );

    // Act: the server never closes the connection itself, so a held one would hang the child.
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', script], {
      cwd: REPO_ROOT,
      timeout: 15_000,
    });

    // Assess: it printed the answer and exited by itself.
    assert.equal(stdout.trim(), '200');
    assert.equal(seen[0]?.httpVersion, '2.0');
  });
});
