/**
 * A small JSON-over-HTTPS client for the Kubernetes API.
 *
 * Why not client-node's typed APIs: they pass built-in kinds through typed
 * models that silently drop unknown fields, and we must send manifests exactly
 * as written (server-side apply decides what they mean).
 * One connection per cluster (and client certificate), HTTP/2 where the
 * server offers it (kube-connection.ts), keeps TLS handshakes off the hot
 * path. It gets one TLS context made up front rather than the CA, certificate
 * and key themselves: given those, Node's HTTPS agent builds a context for
 * every connection and keys every request by a string holding all three PEMs
 * (a fifth of the client's CPU for 1,000 applies).
 */
import tls from 'node:tls';
import { urlToHttpOptions } from 'node:url';
import type { ClientCertificate, ClusterEndpoint } from './cluster-endpoint.ts';
import { messageOf } from '../errors.ts';
import { ClusterUnreachableError } from './errors.ts';
import {
  plainConnection,
  tlsConnection,
  type KubeConnection,
  type WireResponse,
} from './kube-connection.ts';
import { untilAborted } from './until-aborted.ts';

export interface KubeRequest {
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  readonly path: string;
  readonly query?: Readonly<Record<string, string | undefined>>;
  readonly body?: unknown;
  readonly contentType?: string;
  readonly accept?: string;
  /** Extra headers (impersonation); a list sends the header once per value. */
  readonly headers?: Readonly<Record<string, string | readonly string[]>>;
  /**
   * Ends the request when aborted — its credentials, its connection, the request itself and
   * any wait before a resend — rejecting with the signal's reason (a track's deadline).
   */
  readonly signal?: AbortSignal;
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
  // Host and port as Node reads them from the URL (brackets off IPv6 hosts).
  const { hostname, port } = urlToHttpOptions(server);
  const target = {
    host: hostname ?? 'localhost',
    port: Number(port ?? (server.protocol === 'https:' ? 443 : 80)),
    timeoutMs: options.timeoutMs ?? 60_000,
    maxSockets: options.maxSockets ?? 32,
  };
  const plain = server.protocol === 'https:' ? undefined : plainConnection(target);
  // Exec plugins may hand out a new client certificate; each gets its own connection.
  let tlsFor:
    { certificate: ClientCertificate | undefined; connection: KubeConnection } | undefined;
  const connectionFor = (certificate: ClientCertificate | undefined): KubeConnection => {
    if (plain) return plain;
    const cached = tlsFor;
    if (cached && cached.certificate === certificate) return cached.connection;
    // Requests still running on the old certificate finish before its connection closes.
    cached?.connection.close();
    const connection = tlsConnection(target, {
      secureContext: tls.createSecureContext({
        ...(endpoint.ca ? { ca: endpoint.ca } : {}),
        ...(certificate ? { cert: certificate.cert, key: certificate.key } : {}),
      }),
      rejectUnauthorized: !endpoint.insecureSkipTlsVerify,
      servername: endpoint.tlsServerName,
    });
    tlsFor = { certificate, connection };
    return connection;
  };
  const basePath = server.pathname.replace(/\/$/, '');

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
    const { signal } = request;
    const credentials = await untilAborted(endpoint.credentials.current(), signal);
    const headers: Record<string, string | number | readonly string[]> = {};
    // HTTP/2 takes lower-case names only; HTTP/1.1 does not mind.
    for (const [name, value] of Object.entries({ ...request.headers, ...credentials.headers })) {
      headers[name.toLowerCase()] = value;
    }
    headers.accept = request.accept ?? 'application/json';
    if (body) {
      headers['content-type'] = request.contentType ?? 'application/json';
      headers['content-length'] = body.length;
    }
    let answer: WireResponse;
    try {
      answer = await connectionFor(credentials.clientCertificate).send({
        method: request.method,
        path: `${pathname}${search}`,
        headers,
        body,
        signal,
      });
    } catch (error) {
      // Given up at the caller's deadline: its reason says so (and names the track) better than
      // the cancelled connection would.
      if (signal?.aborted) throw signal.reason as Error;
      // Named by its context and kubeconfig: a TLS or key error says nothing of which one.
      throw new ClusterUnreachableError(
        `${endpoint.label}: ${request.method} ${server.origin}${pathname}: ${messageOf(error)}`,
        { cause: error },
      );
    }
    let parsed: unknown = answer.text;
    try {
      parsed = answer.text ? JSON.parse(answer.text) : undefined;
    } catch {
      // Not JSON (a proxy's error page, say): hand the text over as it is.
    }
    const throttled = answer.status === 429 || answer.status === 503;
    const retryAfter = throttled ? Number(answer.retryAfter) : Number.NaN;
    return {
      status: answer.status,
      body: parsed,
      ...(Number.isFinite(retryAfter) ? { retryAfterSeconds: retryAfter } : {}),
    };
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
      await untilAborted(
        sleep(
          seconds === undefined
            ? DEFAULT_RETRY_AFTER_MS
            : Math.min(seconds * 1000, MAX_RETRY_AFTER_MS),
        ),
        request.signal,
      );
      response = await send(request);
    }
    return response;
  };
}
