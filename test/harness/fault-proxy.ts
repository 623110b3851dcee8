/**
 * A loopback HTTP proxy that sits in front of a real server (the test Git
 * server) and injects one fault at a time: answer 500, hang (accept the
 * request and never answer), or close the connection part-way through a Git
 * pack (after the answer's headers and its first bytes). With no fault it
 * forwards requests and answers byte for byte. And a TCP proxy that falls
 * silent on demand, for SSH.
 */
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect, createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';

/**
 * `stall`: a slow but healthy host — the pack answer starts only after
 * {@link FaultProxyOptions.stallMs} of silence (a big pack being prepared).
 */
export type ProxyFault = 'none' | 'status500' | 'hang' | 'closeMidPack' | 'stall';

export interface FaultProxyOptions {
  /** How long `stall` keeps a pack request silent; default 6 s. */
  readonly stallMs?: number;
  /**
   * Forward the client's `Host` header as it is, for a server that checks a signature over it
   * (S3's SigV4 signs the host the client sent to). By default it is the target's.
   */
  readonly keepHost?: boolean;
  /** The requests the fault is injected into; the others are forwarded. Default: every one. */
  readonly affects?: (req: IncomingMessage) => boolean;
}

export interface FaultProxy {
  /** `http://127.0.0.1:<port>`: use it in place of the target's origin. */
  readonly url: string;
  /** The fault from now on; requests already in flight keep theirs. */
  setFault(fault: ProxyFault): void;
  /** Requests the current or an earlier fault was injected into. */
  readonly injected: number;
  /** Client connections open now (a hung request's stays open until its client gives up). */
  readonly connections: number;
  /** Hung requests whose client connection is still open. */
  readonly hanging: number;
  /** Closes the proxy and every connection it holds (hung ones included). */
  stop(): Promise<void>;
}

/** Bytes of a pack answer let through before the connection is closed. */
const MID_PACK_BYTES = 64;

/** Whether `req` asks for a pack (the answer the mid-pack fault cuts). */
function isPackRequest(req: IncomingMessage): boolean {
  return req.method === 'POST' && (req.url ?? '').endsWith('/git-upload-pack');
}

/** Starts a proxy forwarding to `target` (an `http://host:port` origin). */
export async function startFaultProxy(
  target: string,
  options: FaultProxyOptions = {},
): Promise<FaultProxy> {
  const origin = new URL(target);
  let fault: ProxyFault = 'none';
  let injected = 0;
  let hanging = 0;
  const sockets = new Set<Socket>();

  const forward = (req: IncomingMessage, res: ServerResponse, cutPack: boolean): void => {
    const upstream = request(
      {
        hostname: origin.hostname,
        port: origin.port,
        method: req.method,
        path: req.url,
        headers: options.keepHost ? req.headers : { ...req.headers, host: origin.host },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.statusMessage, answer.headers);
        if (!cutPack) {
          answer.pipe(res);
          return;
        }
        let sent = 0;
        answer.on('data', (chunk: Buffer) => {
          if (sent >= MID_PACK_BYTES) return;
          const part = chunk.subarray(0, MID_PACK_BYTES - sent);
          sent += part.length;
          const cut = sent >= MID_PACK_BYTES;
          // The connection goes down with the answer half sent (and flushed), as a crashed host's would.
          res.write(part, () => {
            if (cut) res.socket?.destroy();
          });
          if (cut) answer.destroy();
        });
        answer.on('end', () => res.socket?.destroy());
      },
    );
    upstream.on('error', () => res.socket?.destroy());
    req.pipe(upstream);
  };

  const server = createServer((req, res) => {
    const current = (options.affects?.(req) ?? true) ? fault : 'none';
    if (current === 'status500') {
      injected++;
      req.resume();
      res.writeHead(500, { 'Content-Type': 'text/plain' }).end('injected failure\n');
      return;
    }
    if (current === 'hang') {
      injected++;
      hanging++;
      req.socket.once('close', () => hanging--);
      // Read the request, answer nothing; stop() closes the socket.
      req.resume();
      return;
    }
    if (current === 'stall' && isPackRequest(req)) {
      injected++;
      setTimeout(() => forward(req, res, false), options.stallMs ?? 6_000);
      return;
    }
    const cut = current === 'closeMidPack' && isPackRequest(req);
    if (cut) injected++;
    forward(req, res, cut);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    setFault: (next) => {
      fault = next;
    },
    get injected() {
      return injected;
    },
    get connections() {
      return sockets.size;
    },
    get hanging() {
      return hanging;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * A loopback TCP proxy in front of any server (sshd): it forwards bytes both ways until
 * `blackhole()`, after which every connection stays open and carries nothing more either way
 * — a host that hangs, or a link gone dead, under a protocol the HTTP proxy cannot speak.
 */
export interface TcpFaultProxy {
  readonly port: number;
  /** From now on nothing is forwarded on any connection, open or new. */
  blackhole(): void;
  /** Client connections open now. */
  readonly connections: number;
  /** Bytes clients sent since `blackhole()` (a request the host never sees). */
  readonly swallowed: number;
  stop(): Promise<void>;
}

export async function startTcpFaultProxy(targetPort: number): Promise<TcpFaultProxy> {
  let silent = false;
  let swallowed = 0;
  const sockets = new Set<Socket>();
  const server = createNetServer((client) => {
    sockets.add(client);
    const upstream = connect({ host: '127.0.0.1', port: targetPort });
    const forward = (from: Socket, to: Socket) =>
      from.on('data', (chunk: Buffer) => {
        if (!silent) to.write(chunk);
        else if (from === client) swallowed += chunk.length;
      });
    forward(client, upstream);
    forward(upstream, client);
    const close = () => {
      sockets.delete(client);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', close).on('error', close);
    upstream.on('close', close).on('error', close);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    blackhole: () => {
      silent = true;
    },
    get connections() {
      return sockets.size;
    },
    get swallowed() {
      return swallowed;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
