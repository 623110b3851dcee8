/** How a track's repository is reached. */
export type RepositoryKind = 'http' | 'file' | 'path';

const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//;
// scp-like syntax, as git reads it: `[user@]host:path` with no slash before the colon.
const SCP_LIKE = /^(?:[^@/:\s]+@)?[^@/:\s]+:/;
const WINDOWS_DRIVE = /^[A-Za-z]:[\\/]/;

/**
 * Classifies a repository location, or explains why it is refused.
 *
 * SSH gets its own message because `git@host:org/repo` is what people copy
 * from their Git host and the fix (an HTTPS URL with a token) is not obvious.
 * Credentials inside the URL are refused: the URL is logged and shown in
 * status, and `auth` exists to keep them out of both.
 */
export function classifyRepository(text: string): { kind: RepositoryKind } | { error: string } {
  const quoted = JSON.stringify(text);
  if (text.trim() === '') return { error: 'must not be empty' };
  const scheme = SCHEME.exec(text)?.[1]?.toLowerCase();
  if (scheme === 'ssh' || scheme === 'git+ssh' || scheme === 'ssh+git') return ssh(quoted);
  if (scheme === undefined) {
    if (SCP_LIKE.test(text) && !WINDOWS_DRIVE.test(text)) return ssh(quoted);
    return { kind: 'path' };
  }
  if (scheme === 'file') return { kind: 'file' };
  if (scheme !== 'http' && scheme !== 'https') {
    return {
      error: `${quoted} uses the unsupported scheme ${scheme}://; use https://, http://, file:// or a local path`,
    };
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { error: `${quoted} is not a valid URL` };
  }
  if (url.hostname === '') return { error: `${quoted} has no host` };
  if (url.username !== '' || url.password !== '') {
    return {
      error:
        'must not contain credentials (they would appear in logs and status); use auth instead',
    };
  }
  return { kind: 'http' };
}

function ssh(quoted: string): { error: string } {
  return { error: `${quoted} is an SSH URL: SSH is not supported yet; use HTTPS with a token` };
}
