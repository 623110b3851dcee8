/**
 * The transport's answers to throttling (429 + Retry-After) and expired
 * credentials (401), against a small local HTTP server scripted per test.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { ClusterEndpoint } from '../../src/cluster/cluster-endpoint.ts';
import { createKubeTransport } from '../../src/cluster/kube-http.ts';

interface Scripted {
  readonly status: number;
  readonly headers?: Record<string, string>;
}

describe('kube transport: throttling and expired credentials', () => {
  let server: Server;
  let url: string;
  let script: Scripted[];
  let seen: { authorization: string | undefined; url: string | undefined }[];

  before(async () => {
    server = createServer((req, res) => {
      seen.push({ authorization: req.headers.authorization, url: req.url });
      const next = script.shift() ?? { status: 200 };
      res.writeHead(next.status, { 'content-type': 'application/json', ...next.headers });
      res.end(JSON.stringify({ kind: next.status === 200 ? 'ConfigMap' : 'Status' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  beforeEach(() => {
    script = [];
    seen = [];
  });

  function endpoint(tokens: string[], server = url): ClusterEndpoint & { invalidations: number } {
    let current = 0;
    const result = {
      server,
      insecureSkipTlsVerify: false,
      label: 'test',
      invalidations: 0,
      credentials: {
        current: async () => ({ headers: { authorization: `Bearer ${tokens[current]}` } }),
        invalidate: () => {
          result.invalidations += 1;
          current = Math.min(current + 1, tokens.length - 1);
        },
      },
    };
    return result;
  }

  it('waits as long as Retry-After says (at most 10 s, 1 s when unsaid) and resends a throttled request', async () => {
    // Prepare
    script = [
      { status: 429, headers: { 'retry-after': '2' } },
      { status: 429 },
      { status: 429, headers: { 'retry-after': '60' } },
    ];
    const waits: number[] = [];
    const transport = createKubeTransport(endpoint(['t']), {
      sleep: async (ms) => void waits.push(ms),
    });

    // Act
    const response = await transport({ method: 'GET', path: '/api/v1/namespaces/a/configmaps/x' });

    // Assess
    assert.equal(response.status, 200);
    assert.deepEqual(waits, [2000, 1000, 10_000]);
    assert.equal(seen.length, 4);
  });

  it('hands on the 429 after ten resends', async () => {
    // Prepare
    script = Array.from({ length: 20 }, () => ({ status: 429, headers: { 'retry-after': '0' } }));
    const transport = createKubeTransport(endpoint(['t']), { sleep: async () => undefined });

    // Act
    const response = await transport({ method: 'GET', path: '/version' });

    // Assess
    assert.equal(response.status, 429);
    assert.equal(seen.length, 11);
  });

  it('after a 401 asks for fresh credentials and resends once', async () => {
    // Prepare
    script = [{ status: 401 }];
    const target = endpoint(['old', 'new']);
    const transport = createKubeTransport(target);

    // Act
    const response = await transport({ method: 'GET', path: '/version' });

    // Assess
    assert.equal(response.status, 200);
    assert.equal(target.invalidations, 1);
    assert.deepEqual(
      seen.map((s) => s.authorization),
      ['Bearer old', 'Bearer new'],
    );
  });
  it('sends the path prefix of the server URL and the query, encoded, without undefined parameters', async () => {
    // Prepare
    const transport = createKubeTransport(endpoint(['t'], `${url}/k8s/clusters/c-1/`));

    // Act
    const response = await transport({
      method: 'GET',
      path: '/api/v1/namespaces/apps/configmaps',
      query: {
        labelSelector: 'driftless.dev/track=web,tier in (a b)',
        limit: '500',
        dryRun: undefined,
      },
    });

    // Assess
    assert.equal(response.status, 200);
    assert.equal(
      seen[0]?.url,
      '/k8s/clusters/c-1/api/v1/namespaces/apps/configmaps?labelSelector=driftless.dev%2Ftrack%3Dweb%2Ctier+in+%28a+b%29&limit=500',
    );
    assert.equal(response.retryAfterSeconds, undefined);
  });
});
