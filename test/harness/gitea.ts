/**
 * A real Git host for the tests: Gitea, built from Go modules by
 * `test/testbin/build.sh gitea` (SQLite, cached outside the checkout), one
 * throwaway instance per test file on a free loopback port. It serves Git
 * over HTTP, delivers its own signed webhooks and keeps commit statuses —
 * what the notification and webhook tests need a real host for.
 *
 * Start-up: an app.ini with everything a first start asks for (no install
 * page), `gitea migrate` to create the database, an admin user and an API
 * token made with Gitea's own CLI, then the web server.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, startProcess, waitUntilReady } from './processes.ts';
import { binaryFromVariable, buildComponents, isExecutable } from './testbin.ts';

const run = promisify(execFile);

/** Gitea starts in a few seconds here; the margin is for loaded CI machines. */
const START_TIMEOUT_MS = 90_000;

export interface GiteaRepository {
  readonly owner: string;
  readonly name: string;
  /** `http://127.0.0.1:<port>/<owner>/<name>.git`, without credentials. */
  readonly cloneUrl: string;
}

export interface Gitea {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** `<url>/api/v1` */
  readonly apiUrl: string;
  /** The admin user, owner of the repositories created here. */
  readonly user: string;
  readonly password: string;
  /** An API token of the user with every scope (also accepted as a Git password). */
  readonly token: string;
  /** A new empty repository of the user, default branch `main`. */
  createRepo(name: string): Promise<GiteaRepository>;
  /** A push webhook (Gitea's own type, JSON, signed with `secret`) to `url`; its id. */
  addWebhook(
    repo: GiteaRepository,
    hook: { readonly url: string; readonly secret: string },
  ): Promise<number>;
  /** The commit statuses of `sha`, newest first, as the API lists them. */
  commitStatuses(repo: GiteaRepository, sha: string): Promise<unknown[]>;
  /** What Gitea printed lately, for failure messages. */
  log(): string;
  /** Stops the server and removes its data. Idempotent. */
  stop(): Promise<void>;
}

/** The gitea binary: `DRIFTLESS_GITEA_BIN` when set, else the one build.sh builds. */
export async function giteaBinary(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const explicit = binaryFromVariable('DRIFTLESS_GITEA_BIN', env);
  if (explicit) return explicit;
  const dir = (await buildComponents(['gitea'])).get('gitea');
  const binary = join(dir ?? '', 'gitea');
  if (!dir || !isExecutable(binary)) {
    throw new Error(
      `test/testbin/build.sh gitea reported ${dir ?? 'no directory'}, but ${binary} is missing`,
    );
  }
  return binary;
}

function appIni(dir: string, port: number, staticRoot: string): string {
  const secret = () => randomBytes(32).toString('hex');
  return `APP_NAME = driftless-test
RUN_MODE = prod
WORK_PATH = ${dir}
; CI and this machine run tests as root, which Gitea refuses unless told.
I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = ${port}
ROOT_URL = http://127.0.0.1:${port}/
DOMAIN = 127.0.0.1
DISABLE_SSH = true
OFFLINE_MODE = true
LFS_START_SERVER = false
APP_DATA_PATH = ${dir}/data
; Locales and templates, copied beside the binary by build.sh (no generated bindata).
STATIC_ROOT_PATH = ${staticRoot}

[database]
DB_TYPE = sqlite3
PATH = ${dir}/data/gitea.db

[repository]
ROOT = ${dir}/repositories
DEFAULT_BRANCH = main

[security]
INSTALL_LOCK = true
SECRET_KEY = ${secret()}
INTERNAL_TOKEN = ${secret()}
PASSWORD_HASH_ALGO = pbkdf2_hi

[oauth2]
ENABLED = false

[service]
DISABLE_REGISTRATION = true
REQUIRE_SIGNIN_VIEW = false

[webhook]
; By default Gitea refuses to deliver to private and loopback addresses.
ALLOWED_HOST_LIST = loopback
DELIVER_TIMEOUT = 10
QUEUE_LENGTH = 100

[mailer]
ENABLED = false

[indexer]
ISSUE_INDEXER_TYPE = db
REPO_INDEXER_ENABLED = false

[cron]
ENABLED = false

[cron.update_checker]
ENABLED = false

[log]
MODE = console
LEVEL = Warn
ROOT_PATH = ${dir}/log
`;
}

/**
 * Starts Gitea on a free loopback port with an admin user and a token.
 * Throws (with Gitea's output) when it cannot start: tests fail, never skip.
 */
export async function startGitea(): Promise<Gitea> {
  const binary = await giteaBinary();
  const dir = await mkdtemp(join(tmpdir(), 'driftless-gitea-'));
  const port = await freePort();
  const config = join(dir, 'app.ini');
  await mkdir(join(dir, 'data'), { recursive: true });
  await writeFile(config, appIni(dir, port, dirname(binary)));
  // Gitea reads HOME for git's global config; keep it inside the throwaway directory.
  const env = { PATH: process.env.PATH ?? '', HOME: dir, GITEA_WORK_DIR: dir, USER: 'root' };
  const gitea = (...args: string[]) =>
    run(binary, [...args, '--config', config], { env, cwd: dir, maxBuffer: 4 << 20 });

  const user = 'driftless';
  const password = randomBytes(12).toString('hex');
  let token: string;
  try {
    await gitea('migrate');
    await gitea(
      'admin',
      'user',
      'create',
      '--admin',
      '--username',
      user,
      '--password',
      password,
      '--email',
      'driftless@example.com',
      '--must-change-password=false',
    );
    const created = await gitea(
      'admin',
      'user',
      'generate-access-token',
      '--username',
      user,
      '--token-name',
      'driftless-test',
      '--scopes',
      'all',
      '--raw',
    );
    // The root warning goes to stdout too; the token is the line of 40 hex digits.
    const line = created.stdout.split('\n').find((l) => /^[0-9a-f]{40}$/.test(l.trim()));
    if (line === undefined) throw new Error(`no token in: ${created.stdout}`);
    token = line.trim();
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    const failed = error as { stderr?: string; stdout?: string; message: string };
    throw new Error(
      `gitea set-up failed: ${failed.message}\n${failed.stdout ?? ''}${failed.stderr ?? ''}`,
      { cause: error },
    );
  }

  const server = startProcess('gitea', binary, ['web', '--config', config], { env, cwd: dir });
  const cleanUpOnExit = (): void => {
    server.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', cleanUpOnExit);
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    process.removeListener('exit', cleanUpOnExit);
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  };

  const url = `http://127.0.0.1:${port}`;
  const apiUrl = `${url}/api/v1`;
  try {
    await waitUntilReady(
      server,
      async () => (await fetch(`${apiUrl}/version`, { signal: AbortSignal.timeout(1_000) })).ok,
      START_TIMEOUT_MS,
    );
  } catch (error) {
    await stop();
    throw error;
  }

  /** A call of Gitea's API as the user; throws with Gitea's answer when it is not 2xx. */
  const api = async (method: string, path: string, body?: unknown): Promise<unknown> => {
    const response = await fetch(`${apiUrl}${path}`, {
      method,
      headers: {
        authorization: `token ${token}`,
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`gitea ${method} ${path}: ${response.status} ${text}`);
    return text === '' ? undefined : (JSON.parse(text) as unknown);
  };

  return {
    url,
    apiUrl,
    user,
    password,
    token,
    async createRepo(name) {
      await api('POST', '/user/repos', {
        name,
        auto_init: false,
        default_branch: 'main',
        private: true,
      });
      return { owner: user, name, cloneUrl: `${url}/${user}/${name}.git` };
    },
    async addWebhook(repo, hook) {
      const created = (await api('POST', `/repos/${repo.owner}/${repo.name}/hooks`, {
        type: 'gitea',
        active: true,
        events: ['push'],
        branch_filter: '*',
        config: { url: hook.url, content_type: 'json', secret: hook.secret },
      })) as { id: number };
      return created.id;
    },
    async commitStatuses(repo, sha) {
      // Gitea lists them oldest first (whatever `sort` says); ids grow with each status.
      const listed = (await api(
        'GET',
        `/repos/${repo.owner}/${repo.name}/statuses/${sha}?limit=50`,
      )) as { id: number }[];
      return listed.sort((a, b) => b.id - a.id);
    },
    log: () => server.outputTail(),
    stop,
  };
}
