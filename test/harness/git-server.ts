/**
 * A real Git server for integration tests: a Node HTTP server on a loopback
 * port that demands HTTP basic auth and runs Git's own `git http-backend` as a
 * CGI program for every authenticated request, over bare repositories in a
 * temp dir the server owns. Clients (the git CLI, isomorphic-git) speak the
 * smart HTTP protocol to it exactly as they would to a Git host.
 *
 * `pushFiles` makes commits from tests with the real git CLI and pushes them
 * through the server, so every commit a test sees went over the wire.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { rmSync } from 'node:fs';
import { access, constants, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, normalize, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** Debian's path; the backend ships with git itself, so no web server package is needed. */
const GIT_HTTP_BACKEND = '/usr/lib/git-core/git-http-backend';

/** The realm clients see in the `WWW-Authenticate` challenge. */
export const GIT_SERVER_REALM = 'driftless-test';

/** How much of git http-backend's stderr is kept for failure messages. */
const LOG_TAIL_CHARS = 8192;

/** A CGI header block is a few hundred bytes; anything far larger means a broken backend. */
const MAX_CGI_HEAD_BYTES = 64 * 1024;

/** A repository name: path segments of letters, digits, `.`, `_` and `-`, like `org/manifests`. */
const REPOSITORY_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]*(\/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$/;

/** Basic-auth credentials. */
export interface GitCredentials {
  readonly username: string;
  readonly password: string;
}

export interface GitServerOptions {
  /** Default: a generated `git-<hex>` name. Must not contain `:`. */
  readonly username?: string;
  /** Default: a generated random password. */
  readonly password?: string;
}

/** A bare repository on a running {@link GitServer}. */
export interface GitRepository extends GitCredentials {
  /** The name given to `createRepository`, e.g. `org/manifests`. */
  readonly name: string;
  /** The bare repository on disk, for tests that inspect it directly. */
  readonly bareDir: string;
  /** `http://127.0.0.1:<port>/<name>.git`, without credentials (isomorphic-git with `onAuth`). */
  readonly url: string;
  /** The same URL with `user:password@`, for the plain git CLI. Never log it. */
  readonly authUrl: string;
}

/** A running Git server; see {@link startGitServer}. */
export interface GitServer extends GitCredentials {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** The directory holding the bare repositories (`GIT_PROJECT_ROOT`). */
  readonly rootDir: string;
  /** Creates an empty bare repository whose default branch is `main`. */
  createRepository(name: string): Promise<GitRepository>;
  /** What git http-backend printed to stderr lately, for failure messages. */
  backendLog(): string;
  /** Closes the server, kills running backends and removes every repository. Idempotent. */
  stop(): Promise<void>;
}

/** A git command that exited non-zero; its message and stderr have URL credentials redacted. */
export class GitCommandError extends Error {
  override readonly name = 'GitCommandError';
  constructor(
    message: string,
    readonly exitCode: number | null,
    readonly stderr: string,
  ) {
    super(message);
  }
}

/** Replaces the `user:password@` part of any URL, so errors can be printed safely. */
function redactUrlCredentials(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s]+@/gi, '$1***@');
}

/** Config every git command of the harness runs with, so it behaves the same on any machine. */
const GIT_CONFIG: ReadonlyArray<readonly [string, string]> = [
  ['init.defaultBranch', 'main'],
  // A CI machine has no identity; commits need one.
  ['user.name', 'Driftless Test'],
  ['user.email', 'test@driftless.invalid'],
  ['advice.detachedHead', 'false'],
  ['commit.gpgSign', 'false'],
  ['tag.gpgSign', 'false'],
];

/**
 * The environment for git commands: the caller's, minus every `GIT_*`
 * variable (a test run from a git hook inherits `GIT_DIR`), with the user's
 * and the system's config ignored, prompts disabled (a refused credential must
 * fail, not wait for a terminal) and the harness' config given through
 * `GIT_CONFIG_COUNT`, which keeps credentials out of argument lists.
 */
function gitEnvironment(credentials?: GitCredentials): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith('GIT_')) env[name] = value;
  }
  env.GIT_CONFIG_NOSYSTEM = '1';
  env.GIT_CONFIG_GLOBAL = '/dev/null';
  env.GIT_TERMINAL_PROMPT = '0';
  const config = [...GIT_CONFIG];
  if (credentials) {
    config.push(['http.extraHeader', `Authorization: ${basicAuthorization(credentials)}`]);
  }
  env.GIT_CONFIG_COUNT = String(config.length);
  config.forEach(([key, value], index) => {
    env[`GIT_CONFIG_KEY_${index}`] = key;
    env[`GIT_CONFIG_VALUE_${index}`] = value;
  });
  return env;
}

function basicAuthorization({ username, password }: GitCredentials): string {
  return `Basic ${Buffer.from(`${username}:${password}`, 'utf8').toString('base64')}`;
}

export interface RunGitOptions {
  readonly cwd?: string;
  /** Sent as a basic `Authorization` header on every HTTP request (never in arguments). */
  readonly credentials?: GitCredentials;
  /** More environment (e.g. GNUPGHOME for signing). */
  readonly env?: Readonly<Record<string, string>>;
}

/**
 * Runs the git CLI in an isolated environment (see {@link GIT_CONFIG}) and
 * returns its stdout. Throws a {@link GitCommandError} when git exits non-zero.
 */
export function runGit(args: readonly string[], options: RunGitOptions = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', args, {
      cwd: options.cwd,
      env: { ...gitEnvironment(options.credentials), ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code === 0) {
        resolve(stdout);
        return;
      }
      const command = redactUrlCredentials(['git', ...args].join(' '));
      const cleanStderr = redactUrlCredentials(stderr.trim());
      const status = signal ? `signal ${signal}` : `exit ${code}`;
      reject(
        new GitCommandError(`${command} failed (${status}):\n${cleanStderr}`, code, cleanStderr),
      );
    });
  });
}

/** Hashing both sides first makes the lengths equal, so the comparison leaks neither content nor length. */
function sameSecret(given: string, expected: string): boolean {
  const digest = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/** The user name when the `Authorization` header carries the right basic credentials, else undefined. */
function authenticatedUser(
  header: string | undefined,
  expected: GitCredentials,
): string | undefined {
  const match = header ? /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header) : null;
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  const username = decoded.slice(0, colon);
  // Both comparisons always run: stopping at a wrong user name would tell
  // an attacker, by the response time, that the user name was wrong.
  const userMatches = sameSecret(username, expected.username);
  const passwordMatches = sameSecret(decoded.slice(colon + 1), expected.password);
  return userMatches && passwordMatches ? username : undefined;
}

/**
 * Reads the CGI header block from the backend's stdout and returns it,
 * putting any body bytes read with it back into the stream. Resolves null
 * when the stream ends before the block is complete (the backend failed).
 */
function readCgiHead(stdout: Readable): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    let buffered = Buffer.alloc(0);
    const finish = (): void => {
      stdout.off('readable', onReadable);
      stdout.off('end', onEnd);
      stdout.off('error', onError);
    };
    const onReadable = (): void => {
      let chunk: Buffer | null;
      while ((chunk = stdout.read() as Buffer | null) !== null) {
        buffered = Buffer.concat([buffered, chunk]);
        const end = headEnd(buffered);
        if (end) {
          finish();
          const body = buffered.subarray(end.bodyStart);
          if (body.length > 0) stdout.unshift(body);
          resolve(buffered.subarray(0, end.headLength));
          return;
        }
        if (buffered.length > MAX_CGI_HEAD_BYTES) {
          finish();
          reject(new Error(`no end of the CGI header within ${MAX_CGI_HEAD_BYTES} bytes`));
          return;
        }
      }
    };
    const onEnd = (): void => {
      finish();
      resolve(null);
    };
    const onError = (error: Error): void => {
      finish();
      reject(error);
    };
    stdout.on('readable', onReadable);
    stdout.on('end', onEnd);
    stdout.on('error', onError);
  });
}

/** Where the blank line after the CGI headers is; CGI allows `\n` as well as `\r\n` line ends. */
function headEnd(buffer: Buffer): { headLength: number; bodyStart: number } | undefined {
  const crlf = buffer.indexOf('\r\n\r\n');
  const lf = buffer.indexOf('\n\n');
  if (crlf >= 0 && (lf < 0 || crlf < lf)) return { headLength: crlf, bodyStart: crlf + 4 };
  if (lf >= 0) return { headLength: lf, bodyStart: lf + 2 };
  return undefined;
}

/** Copies CGI response headers onto the HTTP response; `Status:` becomes the status line. */
function applyCgiHead(head: Buffer, res: ServerResponse): void {
  const headers = new Map<string, string[]>();
  let status = 200;
  let statusMessage: string | undefined;
  for (const line of head.toString('latin1').split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    if (name.toLowerCase() === 'status') {
      const match = /^(\d{3})\s*(.*)$/.exec(value);
      if (match) {
        status = Number(match[1]);
        statusMessage = match[2] || undefined;
      }
      continue;
    }
    // CGI: a Location header without a Status is a redirect.
    if (name.toLowerCase() === 'location' && status === 200) status = 302;
    headers.set(name, [...(headers.get(name) ?? []), value]);
  }
  res.statusCode = status;
  if (statusMessage) res.statusMessage = statusMessage;
  for (const [name, values] of headers) {
    res.setHeader(name, values.length === 1 ? values[0]! : values);
  }
}

/** Starts the server and resolves once it listens. Throws if git http-backend is missing. */
export async function startGitServer(options: GitServerOptions = {}): Promise<GitServer> {
  const credentials: GitCredentials = {
    username: options.username ?? `git-${randomBytes(4).toString('hex')}`,
    password: options.password ?? randomBytes(18).toString('base64url'),
  };
  if (credentials.username.includes(':')) {
    throw new Error('a basic-auth user name cannot contain ":"');
  }
  // Fail here, not on the first request, when the backend is not installed.
  await runGit(['--version']);
  await access(GIT_HTTP_BACKEND, constants.X_OK).catch(() => {
    throw new Error(`${GIT_HTTP_BACKEND} is missing or not executable (Debian package: git)`);
  });

  const baseDir = await mkdtemp(join(tmpdir(), 'driftless-git-'));
  const rootDir = join(baseDir, 'repositories');
  await mkdir(rootDir);

  // Each backend's 'close' promise, so stop() can kill them and wait.
  const backends = new Map<ChildProcess, Promise<void>>();
  // Kills a backend and the git process it runs (its process group). Only
  // while its pipes are open: after 'close' the group id may belong to another process.
  const killBackend = (child: ChildProcess): void => {
    if (!backends.has(child) || child.pid === undefined) return;
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // ESRCH: every process of the group has exited already.
    }
  };
  let log = '';
  const appendLog = (text: string): void => {
    log = (log + text).slice(-LOG_TAIL_CHARS);
  };

  const runBackend = async (
    req: IncomingMessage,
    res: ServerResponse,
    remoteUser: string,
  ): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    let pathInfo: string;
    try {
      pathInfo = decodeURIComponent(url.pathname);
    } catch {
      res.writeHead(400, { 'Content-Type': 'text/plain' }).end('Malformed URL path\n');
      return;
    }
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      // The backend (and the upload-pack/receive-pack it runs) must not read
      // the developer's ~/.gitconfig: tests behave the same everywhere.
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_PROJECT_ROOT: rootDir,
      GIT_HTTP_EXPORT_ALL: '1',
      GATEWAY_INTERFACE: 'CGI/1.1',
      SERVER_PROTOCOL: `HTTP/${req.httpVersion}`,
      REQUEST_METHOD: req.method ?? 'GET',
      PATH_INFO: pathInfo,
      QUERY_STRING: url.search.slice(1),
      AUTH_TYPE: 'Basic',
      // git http-backend enables receive-pack (push) only for requests with a REMOTE_USER.
      REMOTE_USER: remoteUser,
      REMOTE_ADDR: req.socket.remoteAddress ?? '',
    };
    const header = (name: string): string | undefined => {
      const value = req.headers[name];
      return Array.isArray(value) ? value.join(', ') : value;
    };
    const contentType = header('content-type');
    if (contentType) env.CONTENT_TYPE = contentType;
    // A chunked body has no length: the backend then reads its stdin to the end.
    const contentLength = header('content-length');
    if (contentLength) env.CONTENT_LENGTH = contentLength;
    // git gzips large upload-pack requests; the backend inflates them itself.
    const contentEncoding = header('content-encoding');
    if (contentEncoding) env.HTTP_CONTENT_ENCODING = contentEncoding;
    // Carries `version=2`; without it every client falls back to protocol v0.
    const gitProtocol = header('git-protocol');
    if (gitProtocol) env.HTTP_GIT_PROTOCOL = gitProtocol;

    // Its own process group, so killBackend also reaches the upload-pack or
    // receive-pack it runs, which holds our stdout pipe open.
    const child = spawn(GIT_HTTP_BACKEND, [], {
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    const closed = new Promise<void>((resolve) => {
      child.on('close', () => resolve());
      // A backend that could not be spawned emits 'error' and may never emit 'close'.
      child.on('error', () => resolve());
    });
    backends.set(child, closed);
    void closed.then(() => backends.delete(child));
    child.on('error', (error) => appendLog(`spawn ${GIT_HTTP_BACKEND}: ${error.message}\n`));
    child.stderr.on('data', (chunk: Buffer) => appendLog(chunk.toString('utf8')));
    // The backend may answer (e.g. with an error) before reading the whole
    // body; the broken pipe that follows is expected, not a server error.
    child.stdin.on('error', () => {});
    req.pipe(child.stdin);
    // A client that hangs up must not leave a backend running.
    res.on('close', () => {
      if (!res.writableFinished) killBackend(child);
    });

    const head = await readCgiHead(child.stdout).catch((error: Error) => {
      appendLog(`${req.method} ${pathInfo}: ${error.message}\n`);
      return null;
    });
    if (head === null) {
      killBackend(child);
      if (!res.headersSent) {
        res.writeHead(502, { 'Content-Type': 'text/plain' }).end('git http-backend failed\n');
      }
      return;
    }
    applyCgiHead(head, res);
    // Streams with backpressure: a pack can be far larger than memory should hold.
    await pipeline(child.stdout, res).catch(() => killBackend(child));
  };

  const server: Server = createServer((req, res) => {
    const user = authenticatedUser(req.headers.authorization, credentials);
    if (user === undefined) {
      // The backend never runs for an unauthenticated request, not even to list refs.
      res
        .writeHead(401, {
          'WWW-Authenticate': `Basic realm="${GIT_SERVER_REALM}"`,
          'Content-Type': 'text/plain',
        })
        .end('Authentication required\n');
      return;
    }
    runBackend(req, res, user).catch((error: unknown) => {
      appendLog(`${req.method} ${req.url}: ${String(error)}\n`);
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // Port 0: the kernel picks a free port at bind time, with no window for
    // another process to take it between probing and listening.
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  // A test file that forgets stop() must still end (the 'exit' handler below
  // then cleans up); open client connections keep the process alive meanwhile.
  server.unref();
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;

  // If the test process ends without calling stop() (a crash, a forgotten
  // after()), no backend and no repository may outlive it.
  const cleanUpOnExit = (): void => {
    for (const child of backends.keys()) killBackend(child);
    rmSync(baseDir, { recursive: true, force: true });
  };
  process.once('exit', cleanUpOnExit);

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      process.removeListener('exit', cleanUpOnExit);
      const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
      // close() alone waits for keep-alive connections of clients that are gone.
      server.closeAllConnections();
      for (const child of backends.keys()) killBackend(child);
      await Promise.all([serverClosed, ...backends.values()]);
      await rm(baseDir, { recursive: true, force: true });
    })();
    return stopping;
  };

  const createRepository = async (name: string): Promise<GitRepository> => {
    if (!REPOSITORY_NAME.test(name) || name.endsWith('.git')) {
      throw new Error(
        `invalid repository name "${name}": use segments of letters, digits, ".", "_" and "-", without ".git"`,
      );
    }
    const bareDir = join(rootDir, `${name}.git`);
    await mkdir(dirname(bareDir), { recursive: true });
    // git init quietly reinitialises an existing repository, so check first:
    // two tests sharing a name by accident should fail loudly, not share history.
    const existing = await stat(bareDir).then(
      () => true,
      () => false,
    );
    if (existing) throw new Error(`repository "${name}" already exists`);
    await runGit(['init', '--quiet', '--bare', '--initial-branch=main', bareDir]);
    // Tracks may pin a full commit sha, and Git hosts serve reachable commits
    // by sha. The backend already does over HTTP, but the git CLI speaking
    // protocol v0 asks for an unadvertised sha only when the server advertises this.
    await runGit(['config', 'uploadpack.allowReachableSHA1InWant', 'true'], { cwd: bareDir });
    const repoUrl = `${url}/${name}.git`;
    const userInfo = `${encodeURIComponent(credentials.username)}:${encodeURIComponent(credentials.password)}`;
    return {
      name,
      bareDir,
      url: repoUrl,
      authUrl: `http://${userInfo}@127.0.0.1:${port}/${name}.git`,
      ...credentials,
    };
  };

  return {
    url,
    rootDir,
    ...credentials,
    createRepository,
    backendLog: () => log,
    stop,
  };
}

export interface PushFilesOptions {
  /** Default: "Update <paths>". */
  readonly message?: string;
  /** Default `main`. A new branch starts from the repository's default branch, or empty. */
  readonly branch?: string;
  /** Also create this annotated tag on the new commit and push it. */
  readonly tag?: string;
  /** Remove every tracked file that `files` does not name (the commit holds exactly `files`). */
  readonly removeOthers?: boolean;
  /** `key=value` settings for the commit, e.g. to sign it (`commit.gpgsign=true`, `gpg.format=ssh`). */
  readonly commitConfig?: readonly string[];
  /** Environment of the commit (e.g. GNUPGHOME). */
  readonly commitEnv?: Readonly<Record<string, string>>;
}

/** A path relative to the work tree that stays inside it. */
function workTreePath(root: string, path: string): string {
  const normalized = normalize(path);
  if (isAbsolute(path) || normalized === '.' || normalized.split(sep).includes('..')) {
    throw new Error(`"${path}" is not a relative path inside the repository`);
  }
  if (normalized.split(sep)[0] === '.git') throw new Error(`"${path}" is inside .git`);
  return join(root, normalized);
}

/**
 * Commits `files` (path -> content; `null` deletes the file) on `branch` of
 * `repository` and pushes the commit over HTTP with the repository's
 * credentials, using the real git CLI in a scratch work tree that is removed
 * afterwards. The commit is made even when nothing changed, so every call
 * yields a new revision. Resolves with the new commit's sha.
 */
export async function pushFiles(
  repository: GitRepository,
  files: Readonly<Record<string, string | Uint8Array | null>>,
  options: PushFilesOptions = {},
): Promise<string> {
  const branch = options.branch ?? 'main';
  const paths = Object.keys(files);
  const message = options.message ?? `Update ${paths.join(', ') || 'nothing'}`;
  const credentials: GitCredentials = repository;
  const scratch = await mkdtemp(join(tmpdir(), 'driftless-git-push-'));
  const work = join(scratch, 'work');
  try {
    const git = (...args: string[]): Promise<string> => runGit(args, { cwd: work, credentials });
    await runGit(['clone', '--quiet', '--no-tags', repository.url, work], { credentials });
    const remoteBranch = await git('branch', '--remotes', '--list', `origin/${branch}`);
    if (remoteBranch.trim() !== '') {
      await git('checkout', '--quiet', '-B', branch, `origin/${branch}`);
    } else {
      // From the default branch the clone checked out, or an unborn branch in an empty repository.
      await git('checkout', '--quiet', '-B', branch);
    }
    if (options.removeOthers) await git('rm', '-r', '--quiet', '--ignore-unmatch', '--', '.');
    for (const [path, content] of Object.entries(files)) {
      const target = workTreePath(work, path);
      if (content === null) {
        await rm(target, { force: true });
      } else {
        await mkdir(dirname(target), { recursive: true });
        await writeFile(target, content);
      }
    }
    await git('add', '--all');
    await runGit(
      [
        ...(options.commitConfig ?? []).flatMap((setting) => ['-c', setting]),
        'commit',
        '--quiet',
        '--allow-empty',
        '--message',
        message,
      ],
      { cwd: work, credentials, ...(options.commitEnv ? { env: options.commitEnv } : {}) },
    );
    const refspecs = [`HEAD:refs/heads/${branch}`];
    if (options.tag) {
      await git('tag', '--annotate', '--message', options.tag, options.tag);
      refspecs.push(`refs/tags/${options.tag}:refs/tags/${options.tag}`);
    }
    await git('push', '--quiet', '--atomic', 'origin', ...refspecs);
    return (await git('rev-parse', 'HEAD')).trim();
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/**
 * A local repository (a track's `repository: /path`) at `dir`, made here, holding `files` in
 * one commit on `main`.
 */
export async function localRepository(
  dir: string,
  files: Readonly<Record<string, string>>,
): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const [path, content] of Object.entries(files)) {
    await writeFile(workTreePath(dir, path), content);
  }
  await runGit(['init', '-q', '-b', 'main'], { cwd: dir });
  await runGit(['add', '-A'], { cwd: dir });
  await runGit(['-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-qm', 'c'], {
    cwd: dir,
  });
}
