/**
 * Git over SSH for `ssh://` and `user@host:path` repositories, with the
 * maintained ssh2 library (the Lambda runtime has no `git` or `ssh`).
 *
 * The bytes are the same as over smart HTTP (upload-pack.ts builds and reads
 * them): `git-upload-pack '<path>'` runs on an exec channel and speaks
 * protocol v0, statefully. Its ref advertisement is read up to its flush;
 * for a ref listing a flush ends the conversation; for a fetch the same
 * request body the HTTP POST carries is written (wants, shallow lines,
 * deepen, flush, have, done), and the rest of stdout is the same answer.
 *
 * The host key must be in `knownHosts` (known_hosts lines, plain or hashed,
 * `[host]:port` for other ports than 22): an unknown or changed host key is
 * refused before authenticating, naming the host and the fingerprint seen.
 */
import { globMatches } from '../../glob.ts';
import { createHash, createHmac } from 'node:crypto';
import { createConnection, type Socket } from 'node:net';
import type { GitHttpResponse, HttpClient } from 'isomorphic-git';
import type { Client, ClientChannel } from 'ssh2';
import type { SshLocation } from '../../config/repository-location.ts';
import { GitAuthError, GitFetchError, type GitErrorContext } from './errors.ts';
import { GIT_HTTP_IDLE_TIMEOUT_MS } from './http-idle-timeout.ts';
import {
  parseAdvertisement,
  parseUploadPackResponse,
  uploadPackRequest,
  WANTED_CAPABILITIES,
  AGENT,
  type Advertisement,
  type UploadPackRequest,
  type UploadPackResult,
  UploadPackError,
} from './upload-pack.ts';

export interface SshCredentials {
  readonly privateKey: string;
  readonly passphrase?: string;
  readonly knownHosts: string;
}

/** How long connecting (TCP, handshake, authentication) may take. */
const READY_TIMEOUT_MS = 20_000;

/** What bounds one call's SSH exchange besides {@link READY_TIMEOUT_MS}. */
export interface SshCallLimits {
  /** How long the host may send nothing once connected (GitSourceOptions.idleTimeoutMs). */
  readonly idleTimeoutMs: number;
  /** The call's (SourceCall): aborting it closes the connection. */
  readonly signal?: AbortSignal | undefined;
}

/**
 * Ends a session's connection when its host falls silent for too long or its call is asked
 * to stop, and keeps why for the read under way to throw. Without it a host that accepted the
 * connection and then sent nothing (a hung git-upload-pack, a link gone dead) held the fetch
 * forever: over HTTP the idle timeout ends such a request, and `serve` runs a track's jobs one
 * after the other.
 */
class SessionGuard {
  failure: Error | undefined;
  private signal: AbortSignal | undefined;
  /** Wakes the read under way (ChannelReader) so it sees {@link failure}. */
  onStop: (() => void) | undefined;
  private readonly onAbort = (): void =>
    this.stop(new GitFetchError(`${this.where}: ${abortMessage(this.signal)}`, this.context));

  constructor(
    private readonly socket: Socket,
    private readonly where: string,
    private readonly context: GitErrorContext,
    limits: SshCallLimits,
  ) {
    socket.setTimeout(limits.idleTimeoutMs, () =>
      this.stop(
        new GitFetchError(
          `${where} sent nothing over SSH for ${Math.round(limits.idleTimeoutMs / 1000)} s`,
          context,
        ),
      ),
    );
    this.watch(limits.signal);
  }

  /** Watches `signal` instead of the one before (a parked session taken by another call). */
  watch(signal: AbortSignal | undefined): void {
    this.signal?.removeEventListener('abort', this.onAbort);
    this.signal = signal;
    if (signal?.aborted) this.onAbort();
    else signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  stop(error: Error): void {
    this.failure ??= error;
    this.socket.destroy();
    this.onStop?.();
  }
}

function abortMessage(signal: AbortSignal | undefined): string {
  const reason: unknown = signal?.reason;
  return reason instanceof Error ? reason.message : 'cancelled';
}

/** `SHA256:<base64 without padding>`, as ssh-keygen -l prints it. */
function fingerprint(key: Buffer): string {
  return `SHA256:${createHash('sha256').update(key).digest('base64').replace(/=+$/, '')}`;
}

function keyType(key: Buffer): string {
  const length = key.readUInt32BE(0);
  return key.subarray(4, 4 + length).toString('latin1');
}

/** Host names compare without case, as OpenSSH compares them. */
const HOST_NAMES = { ignoreCase: true } as const;

/** The name known_hosts files use for a host: `host`, or `[host]:port` for another port. */
function knownHostsName(location: SshLocation): string {
  return location.port === 22 ? location.host : `[${location.host}]:${location.port}`;
}

function hostMatches(field: string, name: string): boolean {
  if (field.startsWith('|1|')) {
    const [, , salt, hash] = field.split('|');
    if (!salt || !hash) return false;
    const computed = createHmac('sha1', Buffer.from(salt, 'base64')).update(name).digest('base64');
    return computed === hash;
  }
  const patterns = field.split(',');
  if (patterns.some((p) => p.startsWith('!') && globMatches(p.slice(1), name, HOST_NAMES)))
    return false;
  return patterns.some((p) => !p.startsWith('!') && globMatches(p, name, HOST_NAMES));
}

/** The host's keys in `knownHosts` (`@revoked` ones apart), as key blobs. */
export function knownHostKeys(
  knownHosts: string,
  location: SshLocation,
): { trusted: Buffer[]; revoked: Buffer[] } {
  const name = knownHostsName(location);
  const trusted: Buffer[] = [];
  const revoked: Buffer[] = [];
  for (const raw of knownHosts.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const fields = line.split(/\s+/);
    const marker = fields[0]?.startsWith('@') ? fields.shift() : undefined;
    const [hosts, , key] = fields;
    if (!hosts || !key || marker === '@cert-authority' || !hostMatches(hosts, name)) continue;
    (marker === '@revoked' ? revoked : trusted).push(Buffer.from(key, 'base64'));
  }
  return { trusted, revoked };
}

/** How long a session opened by a ref listing waits for the fetch that usually follows. */
const PARK_MS = 10_000;

/** A connected, authenticated git-upload-pack whose advertisement has been read. */
interface Session {
  readonly client: Client;
  readonly socket: Socket;
  readonly channel: ClientChannel;
  readonly reader: ChannelReader;
  readonly advertisement: Buffer;
  readonly guard: SessionGuard;
}

/**
 * Sessions left open by `advertise` for the `fetchPack` that follows,
 * one per repository and credentials, for {@link PARK_MS}. A resolve
 * followed by a fetch then costs one SSH connection (handshake, login,
 * git-upload-pack start) instead of two; an unused session is closed with a
 * flush, as git does after `ls-remote`. A parked session's socket and timer
 * do not keep the process alive.
 */
export class SshSessionPool {
  private readonly parked = new Map<
    string,
    { session: Session; timer: NodeJS.Timeout; closed: () => boolean }
  >();

  park(key: string, session: Session): void {
    this.close(key);
    let closed = false;
    session.guard.watch(undefined);
    session.socket.once('close', () => (closed = true));
    session.socket.unref();
    const timer = setTimeout(() => this.close(key), PARK_MS).unref();
    this.parked.set(key, { session, timer, closed: () => closed });
  }

  /** The parked session of `key` if it is still connected, now watching `signal`; it is no longer parked. */
  take(key: string, signal: AbortSignal | undefined): Session | undefined {
    const entry = this.parked.get(key);
    if (entry === undefined) return undefined;
    this.parked.delete(key);
    clearTimeout(entry.timer);
    if (entry.closed()) return undefined;
    entry.session.socket.ref();
    entry.session.guard.watch(signal);
    return entry.session;
  }

  private close(key: string): void {
    const entry = this.parked.get(key);
    if (entry === undefined) return;
    this.parked.delete(key);
    clearTimeout(entry.timer);
    endSession(entry.session, '0000');
  }
}

function endSession(session: Session, last?: string): void {
  session.guard.watch(undefined);
  if (last !== undefined) session.channel.end(last);
  session.client.end();
}

/** The transport of one SSH repository; see the module comment. */
export class SshTransport {
  /** Sessions are shared only between the same repository, key and known hosts. */
  private readonly poolKey: string;

  constructor(
    private readonly location: SshLocation,
    private readonly credentials: SshCredentials,
    private readonly context: GitErrorContext,
    private readonly pool?: SshSessionPool,
    private readonly limits: SshCallLimits = { idleTimeoutMs: GIT_HTTP_IDLE_TIMEOUT_MS },
  ) {
    this.poolKey = createHash('sha256')
      .update(
        JSON.stringify([
          location,
          credentials.privateKey,
          credentials.passphrase ?? '',
          credentials.knownHosts,
        ]),
      )
      .digest('hex');
  }

  /** The ref advertisement; the session stays open for a fetch (see SshSessionPool). */
  async advertise(): Promise<Advertisement> {
    const session = await this.open();
    let advertisement: Advertisement;
    try {
      advertisement = parseAdvertisement(session.advertisement);
    } catch (error) {
      endSession(session);
      throw error;
    }
    if (this.pool === undefined) endSession(session, '0000');
    else this.pool.park(this.poolKey, session);
    return advertisement;
  }

  /** The pack of `request.want`, as {@link fetchPack} fetches it over HTTP. */
  async fetchPack(
    request: Omit<UploadPackRequest, 'http' | 'url' | 'credentials' | 'capabilities'>,
  ): Promise<UploadPackResult> {
    const session = this.pool?.take(this.poolKey, this.limits.signal) ?? (await this.open());
    try {
      const offered = parseAdvertisement(session.advertisement).capabilities;
      if (!offered.has('shallow') && request.depth > 0) {
        throw new UploadPackError('the server does not support shallow fetches');
      }
      const capabilities = [
        ...WANTED_CAPABILITIES.filter((capability) => offered.has(capability)),
        `agent=${AGENT}`,
      ];
      session.channel.write(uploadPackRequest(request, capabilities));
      return parseUploadPackResponse(await session.reader.rest(), offered.has('side-band-64k'));
    } catch (error) {
      throw this.uploadPackError(error);
    } finally {
      endSession(session);
    }
  }

  /**
   * An isomorphic-git HTTP client whose two smart-HTTP requests travel over
   * this SSH connection instead: `GET .../info/refs?service=<service>` runs
   * the service and answers its advertisement, the `POST .../<service>` that
   * follows writes the request to the same channel and answers all the
   * server says until it closes it. isomorphic-git speaks HTTP only; this is
   * how write-back clones and pushes an SSH repository with it (its URL's
   * host is then ignored: the connection is this transport's).
   */
  httpClient(): HttpClient {
    let session: Session | undefined;
    const respond = (url: string, body: Buffer): GitHttpResponse => ({
      url,
      method: 'POST',
      statusCode: 200,
      statusMessage: 'OK',
      headers: {},
      body: (async function* () {
        yield new Uint8Array(body);
      })(),
    });
    return {
      request: async ({ url, method, body }) => {
        const service = /service=(git-(?:upload|receive)-pack)/.exec(url)?.[1];
        if (method === 'GET' && service !== undefined) {
          if (session !== undefined) endSession(session);
          session = await this.open(service);
          const announce = `# service=${service}\n`;
          const head = `${(announce.length + 4).toString(16).padStart(4, '0')}${announce}0000`;
          return {
            ...respond(url, Buffer.concat([Buffer.from(head), session.advertisement])),
            method,
          };
        }
        const current = session;
        if (method !== 'POST' || current === undefined) {
          throw new GitFetchError(`${method} ${url} cannot be carried over SSH`, this.context);
        }
        session = undefined;
        try {
          for await (const chunk of body ?? []) current.channel.write(Buffer.from(chunk));
          // The whole request is written: the server answers and closes the channel.
          current.channel.end();
          return respond(url, await current.reader.rest());
        } finally {
          endSession(current);
        }
      },
    };
  }

  /** Connects, runs `service` (git-upload-pack) and reads its advertisement (up to its flush). */
  private async open(service = 'git-upload-pack'): Promise<Session> {
    const { Client } = await import('ssh2');
    const client = new Client();
    const { location, credentials, context } = this;
    const where = this.where();
    const { trusted, revoked } = knownHostKeys(credentials.knownHosts, location);
    // Our own socket, so that a parked session can stop holding the process open.
    const socket = createConnection({ host: location.host, port: location.port });
    const guard = new SessionGuard(socket, where, context, this.limits);
    let hostProblem: string | undefined;
    try {
      await new Promise<void>((resolve, reject) => {
        client.once('ready', () => resolve());
        client.once('error', (error) => reject(error));
        client.connect({
          sock: socket,
          host: location.host,
          port: location.port,
          username: location.user,
          privateKey: credentials.privateKey,
          ...(credentials.passphrase === undefined ? {} : { passphrase: credentials.passphrase }),
          readyTimeout: READY_TIMEOUT_MS,
          hostVerifier: (key: Buffer) => {
            const seen = `${keyType(key)} ${fingerprint(key)}`;
            if (revoked.some((k) => k.equals(key))) {
              hostProblem = `the host key of ${where} (${seen}) is marked @revoked in knownHosts`;
            } else if (trusted.length === 0) {
              hostProblem = `${where} is not in knownHosts; its host key is ${seen}`;
            } else if (!trusted.some((k) => k.equals(key))) {
              hostProblem = `the host key of ${where} changed: it presented ${seen}, which is not the key knownHosts holds for it`;
            }
            return hostProblem === undefined;
          },
        });
      });
    } catch (error) {
      guard.watch(undefined);
      client.end();
      socket.destroy();
      if (guard.failure !== undefined) throw guard.failure;
      if (hostProblem !== undefined) throw new GitAuthError(hostProblem, context);
      const message = error instanceof Error ? error.message : String(error);
      if (/cannot parse privatekey|passphrase/i.test(message)) {
        throw new GitAuthError(
          `the deploy key for ${where} cannot be read (${message.replace(/privateKey/i, 'private key')}); is its passphrase right?`,
          context,
        );
      }
      if (/authentication methods failed/i.test(message)) {
        throw new GitAuthError(
          `${location.user}@${where} refused the deploy key (${message.replace(/privateKey/i, 'private key')})`,
          context,
        );
      }
      throw new GitFetchError(`cannot connect to ${where} over SSH: ${message}`, context);
    }
    // From now on a failure of the connection ends the read under way with its own message
    // (the connect promise's listener is settled; the read would only see the channel close).
    client.on('error', (error) =>
      guard.stop(new GitFetchError(`${where}: ${error.message}`, context)),
    );
    try {
      const channel = await new Promise<ClientChannel>((resolve, reject) => {
        client.exec(`${service} '${location.path.replace(/'/g, "'\\''")}'`, (error, stream) =>
          error ? reject(error) : resolve(stream),
        );
      });
      const reader = new ChannelReader(channel, guard);
      const advertisement = await reader.untilFlush();
      return { client, socket, channel, reader, advertisement, guard };
    } catch (error) {
      guard.watch(undefined);
      client.end();
      throw this.uploadPackError(error);
    }
  }

  private where(): string {
    return `${this.location.host}:${this.location.port}`;
  }

  private uploadPackError(error: unknown): Error {
    if (error instanceof UploadPackError || error instanceof GitFetchError) return error;
    const message = error instanceof Error ? error.message : String(error);
    return new GitFetchError(
      `git-upload-pack over SSH on ${this.where()}: ${message}`,
      this.context,
    );
  }
}

/** Reads a channel's stdout: the advertisement up to its first flush, then the rest. */
class ChannelReader {
  /** What arrived and was not taken yet, in order. */
  private chunks: Buffer[] = [];
  private ended = false;
  private stderr = '';
  private waiting: (() => void) | undefined;

  constructor(
    channel: ClientChannel,
    private readonly guard: SessionGuard,
  ) {
    guard.onStop = () => this.waiting?.();
    channel.on('data', (chunk: Buffer) => {
      this.chunks.push(chunk);
      this.waiting?.();
    });
    channel.stderr.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString('utf8')).slice(-4096);
    });
    channel.on('close', () => {
      this.ended = true;
      this.waiting?.();
    });
  }

  /** Until more arrives or the channel ends; throws why the guard ended the connection. */
  private async wait(): Promise<void> {
    if (this.guard.failure === undefined) {
      await new Promise<void>((resolve) => (this.waiting = resolve));
    }
    if (this.guard.failure !== undefined) throw this.guard.failure;
  }

  private serverSaid(): string {
    return this.stderr.trim() === '' ? 'the channel closed' : this.stderr.trim();
  }

  /** Everything up to and including the first flush-pkt. */
  async untilFlush(): Promise<Buffer> {
    for (;;) {
      // The advertisement is small: joining what arrived so far each time is cheap.
      const buffered = Buffer.concat(this.chunks);
      this.chunks = [buffered];
      let position = 0;
      while (position + 4 <= buffered.length) {
        const length = Number.parseInt(
          buffered.subarray(position, position + 4).toString('latin1'),
          16,
        );
        if (Number.isNaN(length)) throw new UploadPackError('malformed pkt-line from the server');
        if (length === 0) {
          this.chunks = [buffered.subarray(position + 4)];
          return buffered.subarray(0, position + 4);
        }
        position += length;
      }
      if (this.guard.failure !== undefined) throw this.guard.failure;
      if (this.ended) throw new UploadPackError(`git-upload-pack: ${this.serverSaid()}`);
      await this.wait();
    }
  }

  /** All that remains, up to the end of the channel (joined once: packs can be large). */
  async rest(): Promise<Buffer> {
    while (!this.ended) await this.wait();
    if (this.guard.failure !== undefined) throw this.guard.failure;
    return Buffer.concat(this.chunks);
  }
}
