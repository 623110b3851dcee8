const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;
// scp-like syntax as git reads it: `[user@]host:path`, no slash before the colon.
const SCP_LIKE = /^(?:[^@/:\s]+@)?([^@/:\s]+):(.*)$/;

/**
 * The identity of a repository for matching webhooks to tracks:
 * `host/path`, lower-cased, without scheme, credentials, port, query,
 * fragment, trailing `/` or `.git`.
 *
 * So `https://user:token@GitHub.com/Org/Repo.git`, `git@github.com:org/repo.git`,
 * `ssh://git@github.com:22/org/repo` and `https://github.com/org/repo/` are one
 * repository: a payload's clone, SSH and web URLs all match the URL a track was
 * written with. The port goes because SSH and HTTPS ports differ for one
 * repository; the path's case goes because GitHub, GitLab, Gitea and Bitbucket
 * treat it case-insensitively while payloads spell it the canonical way. Both
 * can only make a push match too many tracks, never too few, and a needless
 * match costs one fetch that re-resolves the ref and changes nothing.
 *
 * Text that is neither a URL nor scp-like (a local path) is returned trimmed
 * and lower-cased; it matches no payload URL in practice. Empty text gives `''`.
 */
export function normaliseRepositoryUrl(url: string): string {
  const text = url.trim();
  let host: string;
  let path: string;
  if (SCHEME.test(text)) {
    let parsed: URL;
    try {
      parsed = new URL(text);
    } catch {
      return stripSuffixes(text.toLowerCase());
    }
    host = parsed.hostname;
    path = decodePath(parsed.pathname);
  } else {
    const scp = SCP_LIKE.exec(text);
    if (scp === null) return stripSuffixes(text.toLowerCase());
    host = scp[1] ?? '';
    path = scp[2] ?? '';
  }
  const segments = path.split('/').filter((segment) => segment !== '');
  return stripSuffixes([host, ...segments].join('/').toLowerCase());
}

function stripSuffixes(text: string): string {
  return text
    .replace(/\/+$/, '')
    .replace(/\.git$/, '')
    .replace(/\/+$/, '');
}

/** `%7E` and `~` name one path; a malformed escape is kept as written. */
function decodePath(pathname: string): string {
  try {
    return decodeURIComponent(pathname);
  } catch {
    return pathname;
  }
}
