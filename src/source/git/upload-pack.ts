/**
 * One shallow fetch over Git's smart HTTP protocol (v0/v1, stateless):
 * the pack holding one commit, its tree and blobs, minus what a `have`
 * commit already gives us.
 *
 * Two requests:
 * 1. GET `<url>/info/refs?service=git-upload-pack`: the ref advertisement,
 *    with the refs (see {@link readAdvertisement}, which resolving a track
 *    uses) and the server's capabilities. Skipped when the caller still has
 *    the capabilities of a recent advertisement.
 * 2. POST `<url>/git-upload-pack`: `want <sha> <capabilities>`, our shallow
 *    commits, `deepen <depth>`, a flush, `have <sha>`, `done`. The answer:
 *    the shallow-info section (`shallow`/`unshallow` lines, flush), `NAK` or
 *    `ACK <sha>`, then the pack multiplexed on side-band 1 (band 2 is
 *    progress, band 3 a fatal error).
 *
 * Basic credentials, when the track has some, go on both requests up front:
 * no round trip is spent on a 401 challenge. HTTP goes through the same
 * isomorphic-git {@link HttpClient} as the ref listing, and HTTP failures
 * are raised as isomorphic-git's HttpError, so git-errors.ts translates
 * both alike.
 *
 * Capabilities asked for, when offered: `thin-pack` (for a shallow want
 * the server leaves out the objects of the `have` commit only in a thin
 * pack; see pack-index.ts), `ofs-delta`, `side-band-64k`, `shallow`,
 * `no-progress`. Not `multi_ack`: with one `have` and `done` in one
 * request there is nothing to negotiate.
 *
 * Why our own client and not isomorphic-git's `listServerRefs` and `fetch`:
 * with them a resolve plus a fetch took 4 requests (listServerRefs speaks
 * protocol v2, a GET and a POST; fetch read the advertisement again), here
 * 2; and fetch indexed what it received with its JavaScript indexer
 * (~375 ms of a 500-object push; see pack-index.ts). isomorphic-git still provides the
 * HTTP client and its HttpError. The integration tests
 * (test/integration/source.test.ts) fetch from a real `git http-backend`.
 */
import git, { type GitHttpResponse, type HttpClient } from 'isomorphic-git';
import { basicAuthorization, type BasicCredentials } from './credentials.ts';
import type { RefEntry } from './select-ref.ts';

const SERVICE = 'git-upload-pack';
export const AGENT = 'driftless';
/** Capabilities we use, in the order sent; `agent=` is added. */
export const WANTED_CAPABILITIES = [
  'thin-pack',
  'ofs-delta',
  'side-band-64k',
  'shallow',
  'no-progress',
];
const FLUSH = '0000';
const OID = /^[0-9a-f]{40}$/;

export interface UploadPackRequest {
  readonly http: HttpClient;
  /** The repository URL, without credentials. */
  readonly url: string;
  readonly credentials: BasicCredentials | undefined;
  /** The commit to fetch. */
  readonly want: string;
  /** A commit the repository has (with its whole tree), offered as common history. */
  readonly have: string | undefined;
  /** The repository's shallow commits (its `shallow` file), so the server knows where its history stops. */
  readonly shallow: readonly string[];
  /** How many commits of history to fetch. */
  readonly depth: number;
  /** The server's capabilities from a recent advertisement; read anew when absent. */
  readonly capabilities?: ReadonlySet<string>;
}

/** A v0/v1 ref advertisement: the refs (tags peeled, HEAD's target) and the capabilities. */
export interface Advertisement {
  readonly refs: RefEntry[];
  readonly capabilities: ReadonlySet<string>;
}

export interface UploadPackResult {
  /** The pack (possibly thin), checksum included; empty when the server sent none. */
  readonly pack: Buffer;
  /** Commits the server made shallow boundaries: their parents were not sent. */
  readonly shallow: readonly string[];
  /** Shallow commits of ours whose parents the pack now holds. */
  readonly unshallow: readonly string[];
}

/** The server refused the fetch or broke the protocol; the message is the server's when it gave one. */
export class UploadPackError extends Error {
  override readonly name: string = 'UploadPackError';
}

/** The server does not serve the wanted commit (`not our ref`): unknown, or not reachable from a ref. */
export class UnknownWantError extends UploadPackError {
  override readonly name = 'UnknownWantError';
}

/**
 * The repository's objects are not named by SHA-1 (`object-format=sha256` in the
 * advertisement): its refs' 64-hex ids would otherwise be dropped as malformed, and every
 * ref reported as not found.
 */
export class UnsupportedObjectFormatError extends UploadPackError {
  override readonly name = 'UnsupportedObjectFormatError';
  constructor(readonly format: string) {
    super(`the repository uses object format ${format}; only sha1 is supported`);
  }
}

/** Fetches the pack of `request.want`; see the module comment for the exchange. */
export async function fetchPack(request: UploadPackRequest): Promise<UploadPackResult> {
  const base = request.url.replace(/\/+$/, '');
  const authorization = request.credentials && {
    authorization: basicAuthorization(request.credentials),
  };
  const offered =
    request.capabilities ??
    (await readAdvertisement(request.http, request.url, request.credentials)).capabilities;
  const capabilities = [
    ...WANTED_CAPABILITIES.filter((capability) => offered.has(capability)),
    `agent=${AGENT}`,
  ];
  if (!offered.has('shallow') && request.depth > 0) {
    throw new UploadPackError('the server does not support shallow fetches');
  }
  const body = uploadPackRequest(request, capabilities);
  const response = await send(request.http, {
    method: 'POST',
    url: `${base}/${SERVICE}`,
    headers: {
      ...authorization,
      'user-agent': `git/${AGENT}`,
      'content-type': `application/x-${SERVICE}-request`,
      accept: `application/x-${SERVICE}-result`,
    },
    // One buffer, not a stream: isomorphic-git's node client then sends a
    // Content-Length, which some hosts (AWS CodeCommit) insist on. Its own
    // fetch passes an array the same way, whatever the type says.
    body: [body] as unknown as AsyncIterableIterator<Uint8Array>,
  });
  return parseUploadPackResponse(response, offered.has('side-band-64k'));
}

/** The body of the POST: pkt-lines, see the module comment. */
export function uploadPackRequest(
  request: Pick<UploadPackRequest, 'want' | 'have' | 'shallow' | 'depth'>,
  capabilities: readonly string[],
): Buffer {
  const lines = [pktLine(`want ${request.want} ${capabilities.join(' ')}\n`)];
  for (const oid of request.shallow) lines.push(pktLine(`shallow ${oid}\n`));
  if (request.depth > 0) lines.push(pktLine(`deepen ${request.depth}\n`));
  lines.push(FLUSH);
  if (request.have) lines.push(pktLine(`have ${request.have}\n`));
  lines.push(pktLine('done\n'));
  return Buffer.from(lines.join(''), 'latin1');
}

/** GETs and parses the ref advertisement of `url`: one request for refs and capabilities. */
export async function readAdvertisement(
  http: HttpClient,
  url: string,
  credentials: BasicCredentials | undefined,
): Promise<Advertisement> {
  const body = await send(http, {
    method: 'GET',
    url: `${url.replace(/\/+$/, '')}/info/refs?service=${SERVICE}`,
    headers: {
      ...(credentials ? { authorization: basicAuthorization(credentials) } : {}),
      'user-agent': `git/${AGENT}`,
    },
  });
  return parseAdvertisement(body);
}

/**
 * Parses a v0/v1 ref advertisement: the optional `# service=` line and its
 * flush, then `<oid> <ref>` lines; the first carries the capabilities after
 * a NUL (an empty repository advertises `capabilities^{}` with a zero oid),
 * `<ref>^{}` lines give what an annotated tag points to, and the
 * `symref=HEAD:<ref>` capability names HEAD's target. A repository whose
 * `object-format` is not sha1 is refused ({@link UnsupportedObjectFormatError}).
 */
export function parseAdvertisement(advertisement: Buffer): Advertisement {
  const reader = new PktReader(advertisement);
  let line = reader.next();
  if (line?.toString('latin1').startsWith('# service=')) {
    reader.next(); // its flush
    line = reader.next();
  }
  const first = line?.toString('latin1') ?? '';
  if (first.startsWith('ERR ')) throw new UploadPackError(first.slice(4).trim());
  if (first.startsWith('version 2')) {
    throw new UploadPackError('the server answered with protocol v2 unasked');
  }
  // No ref line at all: how Gitea and Forgejo advertise an empty repository (git itself
  // sends `capabilities^{}`). No refs, so the track's ref is reported as not found.
  if (first === '') return { capabilities: new Set(), refs: [] };
  const nul = first.indexOf('\0');
  if (nul < 0) throw new UploadPackError('the ref advertisement lists no capabilities');
  const capabilities = new Set(
    first
      .slice(nul + 1)
      .trim()
      .split(' ')
      .filter(Boolean),
  );
  // Absent means sha1, by the protocol's rule (servers from before SHA-256 never send it).
  const prefix = 'object-format=';
  const format = [...capabilities].find((c) => c.startsWith(prefix))?.slice(prefix.length);
  if (format !== undefined && format !== 'sha1') throw new UnsupportedObjectFormatError(format);
  const symrefs = new Map<string, string>();
  for (const capability of capabilities) {
    const match = /^symref=([^:]+):(.+)$/.exec(capability);
    if (match) symrefs.set(match[1]!, match[2]!);
  }
  const refs = new Map<string, { oid: string; peeled?: string }>();
  let text: string | undefined = first.slice(0, nul);
  while (text !== undefined) {
    const [oid, name] = text.replace(/\n$/, '').split(' ');
    if (oid && name && OID.test(oid) && name !== 'capabilities^{}') {
      if (name.endsWith('^{}')) {
        const tag = refs.get(name.slice(0, -3));
        if (tag) tag.peeled = oid;
      } else {
        refs.set(name, { oid });
      }
    }
    const next = reader.next();
    text = next === undefined || next === FLUSH_LINE ? undefined : next.toString('latin1');
  }
  return {
    capabilities,
    refs: [...refs].map(([ref, { oid, peeled }]) => ({
      ref,
      oid,
      ...(peeled ? { peeled } : {}),
      ...(symrefs.has(ref) ? { target: symrefs.get(ref)! } : {}),
    })),
  };
}

/** Splits the POST's answer into the shallow updates and the pack; see the module comment. */
export function parseUploadPackResponse(response: Buffer, sideBand: boolean): UploadPackResult {
  const reader = new PktReader(response);
  const shallow: string[] = [];
  const unshallow: string[] = [];
  // Shallow-info (sent for a deepen request), then NAK or ACK.
  for (;;) {
    const line = reader.next();
    if (line === undefined)
      throw new UploadPackError('the server ended its answer before the pack');
    if (line === FLUSH_LINE) continue; // the end of the shallow-info section
    const text = line.toString('latin1').replace(/\n$/, '');
    const [keyword, oid] = text.split(' ');
    if (keyword === 'shallow' && oid && OID.test(oid)) shallow.push(oid);
    else if (keyword === 'unshallow' && oid && OID.test(oid)) unshallow.push(oid);
    else if (keyword === 'NAK' || keyword === 'ACK') break;
    else if (keyword === 'ERR') throw serverError(text.slice(4));
    else throw new UploadPackError(`unexpected line from the server: ${JSON.stringify(text)}`);
  }
  if (!sideBand) return { pack: Buffer.from(reader.rest()), shallow, unshallow };
  const pack: Buffer[] = [];
  for (;;) {
    const line = reader.next();
    if (line === undefined || line === FLUSH_LINE) break;
    const band = line[0];
    if (band === 1) pack.push(line.subarray(1));
    else if (band === 3) throw serverError(line.subarray(1).toString('utf8'));
    else if (band !== 2) {
      // An ERR line instead of a band (upload-pack died before the pack).
      const text = line.toString('latin1');
      if (text.startsWith('ERR ')) throw serverError(text.slice(4));
      throw new UploadPackError(`unexpected side-band ${band} from the server`);
    }
  }
  return { pack: Buffer.concat(pack), shallow, unshallow };
}

function serverError(message: string): UploadPackError {
  const text = message.trim();
  return /not our ref/.test(text)
    ? new UnknownWantError(`the server does not serve the commit: ${text}`)
    : new UploadPackError(`the server reported: ${text}`);
}

/** Sends `request`; a status other than 200 becomes isomorphic-git's HttpError. Returns the body. */
async function send(
  http: HttpClient,
  request: Parameters<HttpClient['request']>[0],
): Promise<Buffer> {
  const response = await http.request(request);
  const body = await collect(response);
  if (response.statusCode !== 200) {
    throw new git.Errors.HttpError(
      response.statusCode,
      response.statusMessage,
      body.subarray(0, 1024).toString('utf8'),
    );
  }
  return body;
}

async function collect(response: GitHttpResponse): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  if (response.body) for await (const chunk of response.body) chunks.push(chunk);
  return Buffer.concat(chunks);
}

function pktLine(payload: string): string {
  return (Buffer.byteLength(payload, 'latin1') + 4).toString(16).padStart(4, '0') + payload;
}

/** Returned by {@link PktReader.next} for a flush-pkt (`0000`). */
const FLUSH_LINE = Buffer.alloc(0);

/** Reads pkt-lines: 4 hex digits of length (its own 4 included), then the payload. */
class PktReader {
  private position = 0;

  constructor(private readonly data: Buffer) {}

  /** The next payload, {@link FLUSH_LINE} for a flush, undefined at the end. */
  next(): Buffer | undefined {
    if (this.position + 4 > this.data.length) return undefined;
    const header = this.data.subarray(this.position, this.position + 4).toString('latin1');
    const length = /^[0-9a-f]{4}$/i.test(header) ? Number.parseInt(header, 16) : NaN;
    if (Number.isNaN(length) || (length > 0 && length < 4)) {
      // 0001/0002 (delim, response-end) belong to protocol v2 only.
      throw new UploadPackError(`malformed pkt-line header ${JSON.stringify(header)}`);
    }
    if (length === 0) {
      this.position += 4;
      return FLUSH_LINE;
    }
    if (this.position + length > this.data.length) {
      throw new UploadPackError('the server answer ends inside a pkt-line');
    }
    const payload = this.data.subarray(this.position + 4, this.position + length);
    this.position += length;
    return payload;
  }

  /** Whatever follows the lines read so far (a pack sent without side-band). */
  rest(): Buffer {
    return this.data.subarray(this.position);
  }
}
