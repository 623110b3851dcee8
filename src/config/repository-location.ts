/** How a track's repository is reached. */
export type RepositoryKind = 'http' | 'ssh' | 'file' | 'path';

/** Where an SSH repository is: `ssh://[user@]host[:port]/path` or scp-like `[user@]host:path`. */
export interface SshLocation {
  readonly user: string;
  readonly host: string;
  readonly port: number;
  /** As git sends it to `git-upload-pack`: absolute for ssh:// URLs, as written for scp-like ones. */
  readonly path: string;
}

/** The parts of an SSH repository location, or undefined for text that is not one. */
export function parseSshLocation(text: string): SshLocation | undefined {
  const scheme = SCHEME.exec(text)?.[1]?.toLowerCase();
  if (scheme === 'ssh' || scheme === 'git+ssh' || scheme === 'ssh+git') {
    let url: URL;
    try {
      url = new URL(text.replace(/^[^:]+:/, 'ssh:'));
    } catch {
      return undefined;
    }
    if (url.hostname === '' || url.password !== '') return undefined;
    const path = decodeURIComponent(url.pathname);
    if (path === '' || path === '/') return undefined;
    return {
      user: decodeURIComponent(url.username) || 'git',
      host: url.hostname.replace(/^\[|\]$/g, ''),
      port: url.port === '' ? 22 : Number(url.port),
      // git's `ssh://host/~/repo` means a path in the user's home.
      path: path.startsWith('/~') ? path.slice(1) : path,
    };
  }
  if (scheme !== undefined || !SCP_LIKE.test(text) || WINDOWS_DRIVE.test(text)) return undefined;
  const match = /^(?:([^@/:\s]+)@)?([^@/:\s]+):(.+)$/.exec(text);
  if (!match) return undefined;
  return { user: match[1] ?? 'git', host: match[2]!, port: 22, path: match[3]! };
}

const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//;
// scp-like syntax, as git reads it: `[user@]host:path` with no slash before the colon.
const SCP_LIKE = /^(?:[^@/:\s]+@)?[^@/:\s]+:/;
const WINDOWS_DRIVE = /^[A-Za-z]:[\\/]/;
const SSH_SCHEMES = new Set(['ssh', 'git+ssh', 'ssh+git']);
// Schemes whose URLs skip any `/` and `\` before the host, as Node's URL parser reads them.
const SPECIAL_SCHEMES = new Set(['http', 'https', 'ws', 'wss', 'ftp']);
const CREDENTIALS =
  'must not contain credentials (they would appear in logs and status); use auth instead';

/**
 * Classifies a repository location, or explains why it is refused.
 *
 * SSH gets its own message because `git@host:org/repo` is what people copy
 * from their Git host and the fix (an HTTPS URL with a token) is not obvious.
 * Credentials inside the URL are refused: the URL is logged and shown in
 * status, and `auth` exists to keep them out of both.
 */
export function classifyRepository(text: string): { kind: RepositoryKind } | { error: string } {
  if (text.trim() === '') return { error: 'must not be empty' };
  // First, so no later message quotes them: a URL that fails another check is
  // still written in logs and status, credentials and all.
  const userinfo = userinfoOf(text);
  if (userinfo && (!SSH_SCHEMES.has(userinfo.scheme) || userinfo.userinfo.includes(':'))) {
    return { error: CREDENTIALS };
  }
  const quoted = JSON.stringify(text);
  const unpadded = text.replace(/^[\p{Cc}\s]+|[\p{Cc}\s]+$/gu, '');
  if (unpadded !== text && SCHEME.test(unpadded)) {
    // Taken as a local path, it would fail later with a message that hides the cause.
    return { error: `${quoted} has white space or control characters around it` };
  }
  const scheme = SCHEME.exec(text)?.[1]?.toLowerCase();
  if (scheme !== undefined && SSH_SCHEMES.has(scheme)) return ssh(text, quoted);
  if (scheme === undefined) {
    if (SCP_LIKE.test(text) && !WINDOWS_DRIVE.test(text)) return ssh(text, quoted);
    return { kind: 'path' };
  }
  if (scheme === 'file') return { kind: 'file' };
  if (scheme !== 'http' && scheme !== 'https') {
    return {
      error: `${quoted} uses the unsupported scheme ${scheme}://; use https://, http://, ssh://, user@host:path, file:// or a local path`,
    };
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { error: `${quoted} is not a valid URL` };
  }
  if (url.hostname === '') return { error: `${quoted} has no host` };
  if (url.username !== '' || url.password !== '') return { error: CREDENTIALS };
  return { kind: 'http' };
}

/**
 * The `user[:password]` of a URL and its scheme (lower-cased), as a URL parser
 * finds them: after the spaces and controls it drops in front (any, to be safe),
 * and up to the first `/`, `?` or `#` (the last `@` before it ends them).
 * Undefined without one.
 */
function userinfoOf(text: string): { scheme: string; userinfo: string } | undefined {
  const match = /^[\p{Cc}\s]*([A-Za-z][A-Za-z0-9+.-]*):(.*)$/su.exec(text);
  if (!match) return undefined;
  const scheme = match[1]!.toLowerCase();
  const authority = SPECIAL_SCHEMES.has(scheme)
    ? /^[/\\]*([^/\\?#]*)@/.exec(match[2]!)
    : /^\/\/([^/?#]*)@/.exec(match[2]!);
  return authority ? { scheme, userinfo: authority[1]! } : undefined;
}

function ssh(text: string, quoted: string): { kind: RepositoryKind } | { error: string } {
  if (/^[^@/]*:[^@/]*@/.test(text.replace(/^[a-z+]+:\/\//i, ''))) return { error: CREDENTIALS };
  return parseSshLocation(text) === undefined
    ? {
        error: `${quoted} is not a valid SSH repository (ssh://[user@]host[:port]/path or [user@]host:path)`,
      }
    : { kind: 'ssh' };
}
