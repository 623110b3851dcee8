/**
 * How requests travel to one API server over TLS: HTTP/2 on one connection
 * when the server offers it in the handshake (ALPN), as kubectl and client-go
 * do, and HTTP/1.1 keep-alive connections when it does not (a proxy in front
 * that only speaks HTTP/1.1, say).
 *
 * Why HTTP/2: 500 server-side applies, 32 in flight, over HTTP/1.1 open 32
 * TLS connections (32 handshakes on each side) and cost this client ~0.45 ms
 * of CPU per request; over one HTTP/2 connection ~0.3 ms, and the API server
 * — the bottleneck of a large apply — answers them ~20% sooner
 * (`npm run bench -- cli-process`, "first sync").
 */
import http from 'node:http';
import type http2 from 'node:http2';
import https from 'node:https';
import tls from 'node:tls';
import { isIP } from 'node:net';
import { whenAborted } from '../errors.ts';
import { SharedWork } from './shared-work.ts';

/** One request as it goes on the wire; the path carries the query. */
export interface WireRequest {
  readonly method: string;
  readonly path: string;
  /** Lower-case names; a list sends the header once per value. */
  readonly headers: Readonly<Record<string, string | number | readonly string[]>>;
  readonly body: Buffer | undefined;
  /**
   * Ends the request when aborted (a track's deadline, sync/track-cluster.ts): the stream or
   * connection is cancelled and the request rejects with the signal's reason. The idle timeout
   * still applies before it.
   */
  readonly signal?: AbortSignal | undefined;
}

export interface WireResponse {
  readonly status: number;
  readonly text: string;
  /** The Retry-After header of a throttling answer (429, 503). */
  readonly retryAfter: string | undefined;
}

/** Sends requests to one API server with one set of client credentials. */
export interface KubeConnection {
  send(request: WireRequest): Promise<WireResponse>;
  /** Lets requests in flight finish, then closes; later requests open anew. */
  close(): void;
}

/** Where and how to reach the server. */
export interface ConnectionTarget {
  readonly host: string;
  readonly port: number;
  readonly timeoutMs: number;
  /** HTTP/1.1 connections at most (HTTP/2 needs one). */
  readonly maxSockets: number;
}

export interface TlsSettings {
  readonly secureContext: tls.SecureContext;
  readonly rejectUnauthorized: boolean;
  /** The name the certificate is checked against, when not the host's. */
  readonly servername: string | undefined;
}

/**
 * Bytes the server may send before we acknowledge them, per stream and per
 * connection. HTTP/2's default (64 KiB) would stall a LIST of a few thousand
 * objects on a round trip every 64 KiB; client-go raises it likewise.
 */
const RECEIVE_WINDOW = 16 * 1024 * 1024;

/**
 * The memory (MB) Node lets one HTTP/2 session hold before it resets the streams whose answers
 * arrive (ENHANCE_YOUR_CALM, INTERNAL_ERROR). Request bodies queued for a slow link count
 * against it: at Node's default, 10 MB, 128 applies in flight (APPLY_CONCURRENCY) of ~80 KB
 * objects were reset — applied by the server, reported failed. The API server takes bodies up to
 * 3 MB, 128 of which are 384 MB; the bodies are in memory already, so this is a threshold only.
 */
const SESSION_MEMORY_MB = 512;

/**
 * How long a connection may leave a PING unanswered once a request on it
 * timed out. One connection carries every request, so one that silently died
 * (a dropped route, a load balancer forgetting it) must be replaced rather
 * than time out each request in turn; client-go checks the same way.
 */
const PING_TIMEOUT_MS = 15_000;

/** HTTP/2 error codes (RFC 9113, section 7), as the stream reset carries them. */
const REFUSED_STREAM = 0x7;
const CANCEL = 0x8;

// Loaded with the first TLS connection: node:http2 adds ~3 ms to a function's module init.
let http2Module: Promise<typeof http2> | undefined;
const loadHttp2 = (): Promise<typeof http2> => (http2Module ??= import('node:http2'));

/** Plain HTTP (a local `kubectl proxy`): HTTP/1.1 keep-alive connections. */
export function plainConnection(target: ConnectionTarget): KubeConnection {
  const agent = new http.Agent({ keepAlive: true, maxSockets: target.maxSockets });
  return {
    send: (request) => sendHttp1(http.request, agent, target, request),
    close: () => agent.destroy(),
  };
}

/**
 * TLS: the first request opens a connection offering HTTP/2 and HTTP/1.1; the
 * server's choice holds for the connection's life. A connection the server
 * closes (GOAWAY, idle timeout, restart) is opened again on the next request.
 */
export function tlsConnection(target: ConnectionTarget, settings: TlsSettings): KubeConnection {
  let session: http2.ClientHttp2Session | undefined;
  // Shared by the requests waiting for it: the last one to give up (its deadline) closes it.
  let opening: SharedWork<http2.ClientHttp2Session | undefined> | undefined;
  let fallback: https.Agent | undefined;
  // Requests in flight on each session: an idle one must not keep the process alive.
  const inFlight = new WeakMap<http2.ClientHttp2Session, number>();

  const open = async (cancel: AbortSignal): Promise<http2.ClientHttp2Session | undefined> => {
    const socket = await connectTls(target, settings, cancel);
    if (socket.alpnProtocol !== 'h2') {
      socket.destroy();
      fallback = new https.Agent({
        keepAlive: true,
        maxSockets: target.maxSockets,
        secureContext: settings.secureContext,
        rejectUnauthorized: settings.rejectUnauthorized,
        ...(settings.servername ? { servername: settings.servername } : {}),
      });
      return undefined;
    }
    const { connect } = await loadHttp2();
    const opened = connect(`https://${hostForUrl(target.host)}:${target.port}`, {
      createConnection: () => socket,
      settings: { initialWindowSize: RECEIVE_WINDOW },
      maxSessionMemory: SESSION_MEMORY_MB,
    });
    opened.once('connect', () => opened.setLocalWindowSize(RECEIVE_WINDOW));
    // A session's failure reaches each request through its stream; nothing else listens.
    opened.on('error', () => undefined);
    const forget = (): void => {
      if (session === opened) session = undefined;
    };
    opened.once('close', forget);
    opened.once('goaway', forget);
    opened.unref();
    session = opened;
    return opened;
  };

  const current = (
    signal: AbortSignal | undefined,
  ): Promise<http2.ClientHttp2Session | undefined> => {
    if (session && !session.closed && !session.destroyed) return Promise.resolve(session);
    if (fallback) return Promise.resolve(undefined);
    if (opening === undefined) {
      const done = (): void => {
        if (opening === next) opening = undefined;
      };
      // Forgotten as it is cancelled too: a request in between would join a closed socket.
      const next = new SharedWork(open, done);
      next.result.then(done, done);
      opening = next;
    }
    // A server that takes the connection and never finishes the handshake holds the opening
    // until its idle timeout: the request stops waiting for it at its deadline.
    return opening.wait(signal);
  };

  const hold = (on: http2.ClientHttp2Session): (() => void) => {
    const count = inFlight.get(on) ?? 0;
    if (count === 0) on.ref();
    inFlight.set(on, count + 1);
    return () => {
      const left = (inFlight.get(on) ?? 1) - 1;
      inFlight.set(on, left);
      if (left === 0) on.unref();
    };
  };

  // A request timed out: the connection may be dead. Ask it; no answer in time closes it.
  const probing = new WeakSet<http2.ClientHttp2Session>();
  const probe = (on: http2.ClientHttp2Session): void => {
    if (probing.has(on) || on.destroyed) return;
    probing.add(on);
    const wait = Math.min(PING_TIMEOUT_MS, target.timeoutMs);
    const dead = new Error(`the API server's connection answered no PING within ${wait} ms`);
    const timer = setTimeout(() => on.destroy(dead), wait);
    timer.unref();
    let answered = false;
    try {
      answered = on.ping((error) => {
        clearTimeout(timer);
        probing.delete(on);
        if (error) on.destroy(error);
      });
    } catch {
      // Closing already: nothing to ask.
    }
    if (!answered) {
      clearTimeout(timer);
      on.destroy(dead);
    }
  };

  const send = async (request: WireRequest, resends = 1): Promise<WireResponse> => {
    const on = await current(request.signal);
    if (on === undefined) {
      return sendHttp1(https.request, fallback as https.Agent, target, request);
    }
    const release = hold(on);
    try {
      return await sendHttp2(on, target.timeoutMs, request, () => probe(on));
    } catch (error) {
      // Refused before the server read it (the connection was going away): safe to resend.
      if (error instanceof NotProcessedError && resends > 0) {
        if (session === on) session = undefined;
        return send(request, resends - 1);
      }
      throw error;
    } finally {
      release();
    }
  };

  return {
    send,
    close: () => {
      // Requests in flight finish: HTTP/2 closes once its streams are done; HTTP/1.1
      // connections get the request timeout.
      session?.close();
      session = undefined;
      const agent = fallback;
      if (agent) setTimeout(() => agent.destroy(), target.timeoutMs).unref();
      fallback = undefined;
    },
  };
}

/** The request never reached the server's handler, so sending it again cannot apply it twice. */
class NotProcessedError extends Error {}

function hostForUrl(host: string): string {
  return isIP(host) === 6 ? `[${host}]` : host;
}

function connectTls(
  target: ConnectionTarget,
  settings: TlsSettings,
  cancel: AbortSignal,
): Promise<tls.TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({
      host: target.host,
      port: target.port,
      secureContext: settings.secureContext,
      rejectUnauthorized: settings.rejectUnauthorized,
      ALPNProtocols: ['h2', 'http/1.1'],
      // SNI carries names only; the certificate of an address is checked against the address.
      ...(settings.servername
        ? { servername: settings.servername }
        : isIP(target.host) === 0
          ? { servername: target.host }
          : {}),
    });
    socket.setTimeout(target.timeoutMs, () =>
      socket.destroy(new Error(`no answer within ${target.timeoutMs} ms`)),
    );
    // Every request waiting for the connection gave up: nobody needs it.
    const onCancel = (): void => {
      socket.destroy(new Error('no request waits for the connection any more'));
    };
    cancel.addEventListener('abort', onCancel, { once: true });
    socket.once('close', () => cancel.removeEventListener('abort', onCancel));
    socket.once('secureConnect', () => {
      socket.setTimeout(0);
      socket.removeListener('error', reject);
      cancel.removeEventListener('abort', onCancel);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

function sendHttp2(
  session: http2.ClientHttp2Session,
  timeoutMs: number,
  request: WireRequest,
  onTimeout: () => void,
): Promise<WireResponse> {
  return new Promise((resolve, reject) => {
    const { signal } = request;
    if (signal?.aborted) {
      reject(signal.reason as Error);
      return;
    }
    let stream: http2.ClientHttp2Stream;
    try {
      stream = session.request(
        { ':method': request.method, ':path': request.path, ...request.headers },
        { endStream: request.body === undefined },
      );
    } catch (error) {
      // The session closed between our check and the request.
      reject(new NotProcessedError((error as Error).message, { cause: error }));
      return;
    }
    let status = 0;
    let retryAfter: string | undefined;
    // Whether 'end' or 'error' settled the promise: 'close' follows both, and an Error built
    // there anyway (its stack captured) cost ~10 ms of a first sync's 500 applies (profile).
    let settled = false;
    const chunks: Buffer[] = [];
    stream.on('response', (headers) => {
      status = Number(headers[':status']);
      const value = headers['retry-after'];
      retryAfter = Array.isArray(value) ? value[0] : value;
    });
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => {
      // A stream the server reset before its headers (CANCEL, say) ends too: 'close' rejects it.
      if (status === 0) return;
      settled = true;
      resolve({ status, text: Buffer.concat(chunks).toString('utf8'), retryAfter });
    });
    // REFUSED_STREAM: the server did not start on it (a connection going away does so).
    const refused = (): boolean => stream.rstCode === REFUSED_STREAM && status === 0;
    stream.on('error', (error) => {
      settled = true;
      reject(refused() ? new NotProcessedError(error.message, { cause: error }) : error);
    });
    // The deadline passed with no answer: the stream is cancelled, and like a timed-out one the
    // connection is asked whether it is still alive.
    const onAbort = (): void => {
      settled = true;
      reject(signal?.reason as Error);
      stream.close(CANCEL);
      onTimeout();
    };
    const stopWatching = signal ? whenAborted(signal, onAbort) : undefined;
    stream.on('close', () => {
      stopWatching?.();
      // Nothing answered or failed the request (an 'end' before any headers included): the
      // stream was reset or lost.
      if (settled) return;
      const message = `HTTP/2 stream closed without an answer (code ${stream.rstCode})`;
      reject(refused() ? new NotProcessedError(message) : new Error(message));
    });
    stream.setTimeout(timeoutMs, () => {
      settled = true;
      reject(new Error(`no answer within ${timeoutMs} ms`));
      stream.close(CANCEL);
      onTimeout();
    });
    if (request.body !== undefined) stream.end(request.body);
  });
}

function sendHttp1(
  sendRequest: typeof http.request,
  agent: http.Agent,
  target: ConnectionTarget,
  request: WireRequest,
): Promise<WireResponse> {
  return new Promise((resolve, reject) => {
    const { signal } = request;
    if (signal?.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const req = sendRequest(
      {
        host: target.host,
        port: target.port,
        path: request.path,
        method: request.method,
        agent,
        headers: request.headers as http.OutgoingHttpHeaders,
        timeout: target.timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          // Only throttling answers carry it; reading headers builds the whole header object.
          const throttled = status === 429 || status === 503;
          resolve({
            status,
            text: Buffer.concat(chunks).toString('utf8'),
            retryAfter: throttled ? res.headers['retry-after'] : undefined,
          });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${target.timeoutMs} ms`)));
    req.on('error', reject);
    // The deadline passed with no answer: the connection is closed (HTTP/1.1 cannot cancel a
    // request on it) and the request rejects with the signal's reason.
    const onAbort = (): void => {
      reject(signal?.reason as Error);
      req.destroy();
    };
    const stopWatching = signal ? whenAborted(signal, onAbort) : undefined;
    req.on('close', () => stopWatching?.());
    req.end(request.body);
  });
}
