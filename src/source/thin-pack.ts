/**
 * Asks for thin packs on isomorphic-git's upload-pack requests.
 *
 * Why: our fetches are shallow (depth 1), and for a shallow want the server
 * only leaves out the objects we already have (the previous commit's tree)
 * when the client accepts a thin pack — without it every fetch resends the
 * whole tree, as a fresh clone would. isomorphic-git leaves `thin-pack` out of
 * its capabilities because the git CLI refuses thin packs on disk; it reads
 * them itself (deltas against objects of other packs), and the cache is read
 * by isomorphic-git only. The capability is added only when the server
 * advertised it, by rewriting the first pkt-line of the request.
 */
import type { GitHttpRequest, GitHttpResponse, HttpClient } from 'isomorphic-git';

const ADVERTISEMENT = /\/info\/refs\?service=git-upload-pack$/;
const UPLOAD_PACK = /\/git-upload-pack$/;
const CAPABILITY = ' thin-pack';

/** `http` with `thin-pack` added to upload-pack requests of servers that offer it. */
export function withThinPack(http: HttpClient): HttpClient {
  // Repository base URL -> whether its last protocol v1 advertisement offered thin-pack.
  const offered = new Map<string, boolean>();
  return {
    async request(request: GitHttpRequest): Promise<GitHttpResponse> {
      if (request.method === 'GET' && ADVERTISEMENT.test(request.url)) {
        const response = await http.request(request);
        if (response.statusCode !== 200 || !response.body) return response;
        const body = await collect(response.body);
        const capabilities = v1Capabilities(body);
        // A protocol v2 advertisement (ls-refs) lists no pack capabilities; keep what v1 said.
        if (capabilities) {
          offered.set(request.url.replace(ADVERTISEMENT, ''), capabilities.includes('thin-pack'));
        }
        return { ...response, body: single(body) };
      }
      if (request.method === 'POST' && UPLOAD_PACK.test(request.url) && request.body) {
        if (offered.get(request.url.replace(UPLOAD_PACK, '')) === true) {
          const body = await collect(request.body);
          return http.request({ ...request, body: single(addThinPack(body)) });
        }
      }
      return http.request(request);
    },
  };
}

/** The capabilities of a protocol v0/v1 ref advertisement (after the NUL of the first ref line). */
export function v1Capabilities(body: Uint8Array): string[] | undefined {
  const text = Buffer.from(body.subarray(0, 65536)).toString('latin1');
  if (text.includes('version 2\n')) return undefined;
  const match = /\0([^\n]*)\n/.exec(text);
  return match?.[1]?.split(' ');
}

/**
 * Adds ` thin-pack` to the capability list on the first `want` line of an
 * upload-pack request, fixing the pkt-line length; other requests unchanged.
 */
export function addThinPack(body: Uint8Array): Uint8Array {
  const buffer = Buffer.from(body);
  const length = Number.parseInt(buffer.subarray(0, 4).toString('latin1'), 16);
  if (!Number.isInteger(length) || length < 50 || length > buffer.length) return body;
  const line = buffer.subarray(4, length).toString('latin1');
  // `want <40 hex> <capabilities>\n`: only the first want line carries capabilities.
  if (!/^want [0-9a-f]{40} \S/.test(line) || line.includes(CAPABILITY)) return body;
  const end = line.endsWith('\n') ? line.length - 1 : line.length;
  const rewritten = `${line.slice(0, end)}${CAPABILITY}${line.slice(end)}`;
  const header = (rewritten.length + 4).toString(16).padStart(4, '0');
  return Buffer.concat([Buffer.from(header + rewritten, 'latin1'), buffer.subarray(length)]);
}

/** isomorphic-git passes and expects async iterators of chunks (arrays too, despite its types). */
async function collect(body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return Buffer.concat(chunks);
}

async function* single(chunk: Uint8Array): AsyncIterableIterator<Uint8Array> {
  yield chunk;
}
