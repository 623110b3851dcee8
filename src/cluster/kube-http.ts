/**
 * A small JSON-over-HTTPS client for the Kubernetes API.
 *
 * Why not client-node's typed APIs: they pass built-in kinds through typed
 * models that silently drop unknown fields, and we must send manifests exactly
 * as written (server-side apply decides what they mean). client-node still does
 * what it is good at: reading kubeconfigs and producing credentials.
 * One keep-alive agent per cluster keeps TLS handshakes off the hot path.
 */
import http from 'node:http';
import https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { ClusterUnreachableError } from './errors.ts';

export interface KubeRequest {
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  readonly path: string;
  readonly query?: Readonly<Record<string, string | undefined>>;
  readonly body?: unknown;
  readonly contentType?: string;
  readonly accept?: string;
}

export interface KubeResponse {
  readonly status: number;
  readonly body: unknown;
}

/** Sends one request to the API server and parses the JSON answer. */
export type KubeTransport = (request: KubeRequest) => Promise<KubeResponse>;

/** Credentials change (exec plugins, EKS tokens): re-read them this often. */
const HEADER_TTL_MS = 60_000;

export interface KubeHttpOptions {
  /** Parallel connections to the API server; requests beyond wait for a free one. */
  readonly maxSockets?: number;
  /** Per-request timeout. */
  readonly timeoutMs?: number;
}

/** Builds a transport for the kubeconfig's current context. */
export async function createKubeTransport(
  kc: KubeConfig,
  options: KubeHttpOptions = {},
): Promise<KubeTransport> {
  const cluster = kc.getCurrentCluster();
  if (!cluster)
    throw new ClusterUnreachableError(
      `kubeconfig context "${kc.getCurrentContext()}" names no cluster`,
    );
  const server = new URL(cluster.server);
  const secure = server.protocol === 'https:';
  const tls: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(tls);
  const agentOptions = { keepAlive: true, maxSockets: options.maxSockets ?? 32 };
  const agent = secure
    ? new https.Agent({
        ...agentOptions,
        ca: tls.ca,
        cert: tls.cert,
        key: tls.key,
        pfx: tls.pfx,
        passphrase: tls.passphrase,
        rejectUnauthorized: tls.rejectUnauthorized,
        servername: tls.servername,
      })
    : new http.Agent(agentOptions);
  // applyToHTTPSOptions sets headers as an object (Authorization), never as a raw array.
  let headers = (tls.headers ?? {}) as http.OutgoingHttpHeaders;
  let headersAt = Date.now();
  const currentHeaders = async (): Promise<http.OutgoingHttpHeaders> => {
    if (Date.now() - headersAt > HEADER_TTL_MS) {
      const fresh: https.RequestOptions = {};
      await kc.applyToHTTPSOptions(fresh);
      headers = (fresh.headers ?? {}) as http.OutgoingHttpHeaders;
      headersAt = Date.now();
    }
    return headers;
  };
  const basePath = server.pathname.replace(/\/$/, '');
  const timeoutMs = options.timeoutMs ?? 60_000;

  return async (request) => {
    const url = new URL(`${basePath}${request.path}`, server);
    for (const [key, value] of Object.entries(request.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, value);
    }
    const body = request.body === undefined ? undefined : Buffer.from(JSON.stringify(request.body));
    const requestHeaders: http.OutgoingHttpHeaders = {
      ...(await currentHeaders()),
      accept: request.accept ?? 'application/json',
      ...(body
        ? {
            'content-type': request.contentType ?? 'application/json',
            'content-length': body.length,
          }
        : {}),
    };
    if (tls.auth)
      requestHeaders.authorization = `Basic ${Buffer.from(tls.auth).toString('base64')}`;
    const send = secure ? https.request : http.request;
    return new Promise<KubeResponse>((resolve, reject) => {
      const req = send(
        url,
        { method: request.method, agent, headers: requestHeaders, timeout: timeoutMs },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('error', reject);
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: unknown = text;
            try {
              parsed = text ? JSON.parse(text) : undefined;
            } catch {
              // Not JSON (a proxy's error page, say): hand the text over as it is.
            }
            resolve({ status: res.statusCode ?? 0, body: parsed });
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      req.on('error', (error) =>
        reject(
          new ClusterUnreachableError(
            `${request.method} ${url.origin}${url.pathname}: ${error.message}`,
            {
              cause: error,
            },
          ),
        ),
      );
      req.end(body);
    });
  };
}
