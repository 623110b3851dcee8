/**
 * A small JSON-over-HTTPS client for the Kubernetes API.
 *
 * Why not client-node's typed APIs: they pass built-in kinds through typed
 * models that silently drop unknown fields, and we must send manifests exactly
 * as written (server-side apply decides what they mean).
 * One keep-alive agent per cluster (and client certificate) keeps TLS
 * handshakes off the hot path. The agent gets one TLS context made up front
 * rather than the CA, certificate and key themselves: given those, Node
 * builds a context for every connection and keys every request by a string
 * holding all three PEMs (a fifth of the client's CPU for 1,000 applies).
 */
import http from 'node:http';
import https from 'node:https';
import tls from 'node:tls';
import { urlToHttpOptions } from 'node:url';
import type { ClientCertificate, ClusterEndpoint } from './cluster-endpoint.ts';
import { ClusterUnreachableError } from './errors.ts';

export interface KubeRequest {
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  readonly path: string;
  readonly query?: Readonly<Record<string, string | undefined>>;
  readonly body?: unknown;
  readonly contentType?: string;
  readonly accept?: string;
  /** Extra headers (impersonation); a list sends the header once per value. */
  readonly headers?: Readonly<Record<string, string | readonly string[]>>;
}

export interface KubeResponse {
  readonly status: number;
  readonly body: unknown;
  /** The Retry-After header, in seconds, when the server sent one. */
  readonly retryAfterSeconds?: number;
}

/** Sends one request to the API server and parses the JSON answer. */
export type KubeTransport = (request: KubeRequest) => Promise<KubeResponse>;

export interface KubeHttpOptions {
  /** Parallel connections to the API server; requests beyond wait for a free one. */
  readonly maxSockets?: number;
  /** Per-request timeout. */
  readonly timeoutMs?: number;
  /** Waits before resending a request the server throttled (429); tests shorten it. */
  readonly sleep?: (ms: number) => Promise<void>;
}

/** Resends of one throttled request before its 429 is handed on (client-go allows 10). */
const THROTTLE_RETRIES = 10;
/** Longest wait for one Retry-After, and the wait when the server named none. */
const MAX_RETRY_AFTER_MS = 10_000;
const DEFAULT_RETRY_AFTER_MS = 1_000;

/** Builds a transport for one API server. */
export function createKubeTransport(
  endpoint: ClusterEndpoint,
  options: KubeHttpOptions = {},
): KubeTransport {
  const server = new URL(endpoint.server);
  const secure = server.protocol === 'https:';
  const agentOptions = { keepAlive: true, maxSockets: options.maxSockets ?? 32 };
  const timeoutMs = options.timeoutMs ?? 60_000;
  const plainAgent = secure ? undefined : new http.Agent(agentOptions);
  // Exec plugins may hand out a new client certificate; each gets its own agent.
  let tlsAgent: { certificate: ClientCertificate | undefined; agent: https.Agent } | undefined;
  const agentFor = (certificate: ClientCertificate | undefined): http.Agent => {
    if (plainAgent) return plainAgent;
    const cached = tlsAgent;
    if (cached && cached.certificate === certificate) return cached.agent;
    // Requests still running on the old certificate may take up to the timeout.
    if (cached) setTimeout(() => cached.agent.destroy(), timeoutMs).unref();
    const secureContext = tls.createSecureContext({
      ...(endpoint.ca ? { ca: endpoint.ca } : {}),
      ...(certificate ? { cert: certificate.cert, key: certificate.key } : {}),
    });
    const agent = new https.Agent({
      ...agentOptions,
      secureContext,
      rejectUnauthorized: !endpoint.insecureSkipTlsVerify,
      ...(endpoint.tlsServerName ? { servername: endpoint.tlsServerName } : {}),
    });
    tlsAgent = { certificate, agent };
    return agent;
  };
  const basePath = server.pathname.replace(/\/$/, '');
  // Host, port and protocol as Node reads them from the URL (brackets off IPv6 hosts).
  const target = urlToHttpOptions(server);

  const send = async (request: KubeRequest): Promise<KubeResponse> => {
    // A path string, not a URL object: parsing and serialising a URL per request showed in
    // the client's profile of 1,000 applies.
    const pathname = `${basePath}${request.path}`;
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(request.query ?? {})) {
      if (value !== undefined) query.set(key, value);
    }
    const search = query.size > 0 ? `?${query}` : '';
    const body = request.body === undefined ? undefined : Buffer.from(JSON.stringify(request.body));
    const credentials = await endpoint.credentials.current();
    const requestHeaders: http.OutgoingHttpHeaders = {
      ...(request.headers as http.OutgoingHttpHeaders | undefined),
      ...credentials.headers,
      accept: request.accept ?? 'application/json',
      ...(body
        ? {
            'content-type': request.contentType ?? 'application/json',
            'content-length': body.length,
          }
        : {}),
    };
    const agent = agentFor(credentials.clientCertificate);
    const sendRequest = secure ? https.request : http.request;
    return new Promise<KubeResponse>((resolve, reject) => {
      const req = sendRequest(
        {
          ...target,
          path: `${pathname}${search}`,
          method: request.method,
          agent,
          headers: requestHeaders,
          timeout: timeoutMs,
        },
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
            // Only throttling answers carry it; reading headers builds the whole header object.
            const throttled = res.statusCode === 429 || res.statusCode === 503;
            const retryAfter = throttled ? Number(res.headers['retry-after']) : Number.NaN;
            resolve({
              status: res.statusCode ?? 0,
              body: parsed,
              ...(Number.isFinite(retryAfter) ? { retryAfterSeconds: retryAfter } : {}),
            });
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      req.on('error', (error) =>
        reject(
          new ClusterUnreachableError(
            `${request.method} ${server.origin}${pathname}: ${error.message}`,
            {
              cause: error,
            },
          ),
        ),
      );
      req.end(body);
    });
  };

  const sleep =
    options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));

  return async (request) => {
    let response = await send(request);
    if (response.status === 401) {
      // Expired or rotated credentials: fetch fresh ones and try once more, as kubectl does.
      endpoint.credentials.invalidate();
      response = await send(request);
    }
    // API Priority and Fairness sheds load with 429 + Retry-After; client-go waits and resends.
    for (let retry = 0; response.status === 429 && retry < THROTTLE_RETRIES; retry++) {
      const seconds = response.retryAfterSeconds;
      await sleep(
        seconds === undefined
          ? DEFAULT_RETRY_AFTER_MS
          : Math.min(seconds * 1000, MAX_RETRY_AFTER_MS),
      );
      response = await send(request);
    }
    return response;
  };
}
