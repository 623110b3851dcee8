/**
 * The test Git server is the Git host of every fetch test, so it is tested
 * here first, with the clients that will use it: the git CLI and isomorphic-git.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import fs, { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import git from 'isomorphic-git';
import http from 'isomorphic-git/http/node';
import {
  GIT_SERVER_REALM,
  GitCommandError,
  pushFiles,
  runGit,
  startGitServer,
  type GitRepository,
  type GitServer,
} from '../harness/git-server.ts';
import { eventually } from '../harness/eventually.ts';

const WEB_V1 = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  version: "1"\n';
const WEB_V2 = WEB_V1.replace('"1"', '"2"');

let server: GitServer;
let workDir: string;
let scratchCount = 0;

/** A fresh, not yet existing directory for one clone. */
function scratchDir(name: string): string {
  scratchCount += 1;
  return join(workDir, `${scratchCount}-${name}`);
}

function basic(username: string, password: string): string {
  return `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
}

function onAuth(repository: GitRepository): () => { username: string; password: string } {
  return () => ({ username: repository.username, password: repository.password });
}

/** The id git gives a blob: sha1 over a `blob <size>\0` header and the content. */
function gitBlobId(content: Buffer): string {
  return createHash('sha1').update(`blob ${content.length}\0`).update(content).digest('hex');
}

/** A pkt-line: four hex digits of length (their own included), then the payload. */
function pktLine(payload: string): string {
  return (payload.length + 4).toString(16).padStart(4, '0') + payload;
}

/** Our processes whose environment names `rootDir` as GIT_PROJECT_ROOT: that server's backends. */
async function backendPids(rootDir: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    // Other users' processes are unreadable, and any process may exit meanwhile.
    const environ = await readFile(`/proc/${entry}/environ`, 'latin1').catch(() => '');
    if (environ.split('\0').includes(`GIT_PROJECT_ROOT=${rootDir}`)) pids.push(Number(entry));
  }
  return pids;
}

describe('the test Git server', () => {
  before(async () => {
    server = await startGitServer();
    workDir = await mkdtemp(join(tmpdir(), 'driftless-git-server-test-'));
  });

  after(async () => {
    await server?.stop();
    if (workDir) await rm(workDir, { recursive: true, force: true });
  });

  it('serves a pushed commit to git clone with valid credentials', async () => {
    // Prepare
    const repository = await server.createRepository('org/clone-cli');
    const sha = await pushFiles(repository, { 'deploy/web.yaml': WEB_V1 }, { message: 'Add web' });
    const dir = scratchDir('clone-cli');

    // Act
    await runGit(['clone', '--quiet', repository.authUrl, dir]);

    // Assess
    assert.equal((await runGit(['rev-parse', 'HEAD'], { cwd: dir })).trim(), sha);
    assert.equal((await runGit(['log', '-1', '--format=%s'], { cwd: dir })).trim(), 'Add web');
    assert.equal(await readFile(join(dir, 'deploy/web.yaml'), 'utf8'), WEB_V1);
  });

  it('answers 401 with a Basic challenge when credentials are missing or wrong', async () => {
    // Prepare
    const repository = await server.createRepository('org/raw-401');
    await pushFiles(repository, { 'deploy/web.yaml': WEB_V1 });
    const infoRefs = `${repository.url}/info/refs?service=git-upload-pack`;
    const attempts: Record<string, string | undefined> = {
      'no credentials': undefined,
      'a wrong password': basic(repository.username, `${repository.password}x`),
      'a wrong user name': basic(`${repository.username}x`, repository.password),
      'a malformed header': 'Basic not-base64!',
    };

    // Act
    const refused = await Promise.all(
      Object.entries(attempts).map(async ([label, authorization]) => {
        const headers: Record<string, string> = authorization ? { authorization } : {};
        const response = await fetch(infoRefs, { headers });
        return { label, response, body: await response.text() };
      }),
    );
    const pushWithoutCredentials = await fetch(
      `${repository.url}/info/refs?service=git-receive-pack`,
    );
    const accepted = await fetch(infoRefs, {
      headers: { authorization: basic(repository.username, repository.password) },
    });

    // Assess
    for (const { label, response, body } of refused) {
      assert.equal(response.status, 401, `status with ${label}`);
      assert.equal(
        response.headers.get('www-authenticate'),
        `Basic realm="${GIT_SERVER_REALM}"`,
        `challenge with ${label}`,
      );
      // Refs would show up here had git http-backend run.
      assert.doesNotMatch(body, /refs\/heads/, `body with ${label}`);
    }
    assert.equal(pushWithoutCredentials.status, 401);
    await pushWithoutCredentials.body?.cancel();
    assert.equal(accepted.status, 200);
    assert.equal(
      accepted.headers.get('content-type'),
      'application/x-git-upload-pack-advertisement',
    );
    assert.match(await accepted.text(), /refs\/heads\/main/);
  });

  it('refuses git clone without credentials', async () => {
    // Prepare
    const repository = await server.createRepository('org/clone-anonymous');
    await pushFiles(repository, { 'deploy/web.yaml': WEB_V1 });
    const dir = scratchDir('clone-anonymous');

    // Act
    const clone = runGit(['clone', '--quiet', repository.url, dir]);

    // Assess
    await assert.rejects(clone, (error: unknown) => {
      assert.ok(error instanceof GitCommandError);
      assert.equal(error.exitCode, 128);
      // Git only asks for a user name after a 401; prompts are disabled.
      assert.match(error.stderr, /could not read Username/);
      return true;
    });
    assert.equal(existsSync(dir), false, 'a refused clone leaves no directory behind');
  });

  it('refuses git clone with a wrong password and keeps it out of the error', async () => {
    // Prepare
    const repository = await server.createRepository('org/clone-wrong-password');
    await pushFiles(repository, { 'deploy/web.yaml': WEB_V1 });
    const wrongPassword = `wrong-${randomBytes(6).toString('hex')}`;
    const wrongUrl = new URL(repository.url);
    wrongUrl.username = repository.username;
    wrongUrl.password = wrongPassword;
    const dir = scratchDir('clone-wrong-password');

    // Act
    const clone = runGit(['clone', '--quiet', wrongUrl.href, dir]);

    // Assess
    await assert.rejects(clone, (error: unknown) => {
      assert.ok(error instanceof GitCommandError);
      assert.equal(error.exitCode, 128);
      assert.match(error.stderr, /Authentication failed/);
      assert.ok(!error.message.includes(wrongPassword), 'the password is redacted');
      return true;
    });
    assert.equal(existsSync(dir), false);
  });

  it('serves a shallow single-branch clone to isomorphic-git with onAuth', async () => {
    // Prepare
    const repository = await server.createRepository('org/clone-iso');
    await pushFiles(repository, { 'deploy/web.yaml': WEB_V1 });
    const second = await pushFiles(repository, { 'deploy/web.yaml': WEB_V2 });
    await pushFiles(repository, { 'other.yaml': 'x: 1\n' }, { branch: 'other' });
    const dir = scratchDir('clone-iso');

    // Act
    await git.clone({
      fs,
      http,
      dir,
      url: repository.url,
      ref: 'main',
      singleBranch: true,
      depth: 1,
      onAuth: onAuth(repository),
    });

    // Assess
    assert.equal(await git.resolveRef({ fs, dir, ref: 'HEAD' }), second);
    assert.equal(await readFile(join(dir, 'deploy/web.yaml'), 'utf8'), WEB_V2);
    const history = await git.log({ fs, dir });
    assert.deepEqual(
      history.map((entry) => entry.oid),
      [second],
      'depth 1 fetches only the tip of a two-commit branch',
    );
    const branches = await git.listBranches({ fs, dir, remote: 'origin' });
    assert.deepEqual(branches, ['main'], 'single-branch leaves out the other branch');
  });

  it('fails an isomorphic-git clone without onAuth with HttpError 401', async () => {
    // Prepare
    const repository = await server.createRepository('org/clone-iso-anonymous');
    await pushFiles(repository, { 'deploy/web.yaml': WEB_V1 });
    const dir = scratchDir('clone-iso-anonymous');

    // Act
    const clone = git.clone({ fs, http, dir, url: repository.url, singleBranch: true, depth: 1 });

    // Assess
    await assert.rejects(clone, (error: unknown) => {
      assert.ok(error instanceof git.Errors.HttpError, `not an HttpError: ${String(error)}`);
      assert.equal(error.data.statusCode, 401);
      return true;
    });
  });

  it('shows a second push to git.fetch on an existing clone', async () => {
    // Prepare
    const repository = await server.createRepository('org/fetch-iso');
    const first = await pushFiles(repository, { 'deploy/web.yaml': WEB_V1 });
    const dir = scratchDir('fetch-iso');
    await git.clone({
      fs,
      http,
      dir,
      url: repository.url,
      ref: 'main',
      singleBranch: true,
      depth: 1,
      onAuth: onAuth(repository),
    });
    const second = await pushFiles(repository, { 'deploy/web.yaml': WEB_V2 });

    // Act
    const result = await git.fetch({
      fs,
      http,
      dir,
      ref: 'main',
      singleBranch: true,
      onAuth: onAuth(repository),
    });

    // Assess
    assert.notEqual(first, second);
    assert.equal(result.fetchHead, second);
    assert.equal(await git.resolveRef({ fs, dir, ref: 'refs/remotes/origin/main' }), second);
    const { blob } = await git.readBlob({ fs, dir, oid: second, filepath: 'deploy/web.yaml' });
    assert.equal(Buffer.from(blob).toString('utf8'), WEB_V2);
  });

  it('accepts a push larger than git buffers, sent chunked without a length', async () => {
    // Prepare: random bytes do not compress, so the pack stays above git's
    // 1 MiB http.postBuffer and git streams it with chunked transfer encoding.
    const repository = await server.createRepository('org/push-large');
    const content = randomBytes(3 * 1024 * 1024);

    // Act
    const sha = await pushFiles(repository, { 'data/blob.bin': content });

    // Assess
    const stored = await runGit(['rev-parse', `${sha}:data/blob.bin`], {
      cwd: repository.bareDir,
    });
    assert.equal(stored.trim(), gitBlobId(content));
  });

  it('inflates a gzip-encoded upload-pack request', async () => {
    // Prepare: git gzips upload-pack requests over 1 KiB; one small enough to
    // build by hand shows that the backend gets told about the encoding.
    const repository = await server.createRepository('org/gzip');
    const sha = await pushFiles(repository, { 'deploy/web.yaml': WEB_V1 });
    const request = `${pktLine(`want ${sha}\n`)}0000${pktLine('done\n')}`;

    // Act
    const response = await fetch(`${repository.url}/git-upload-pack`, {
      method: 'POST',
      headers: {
        authorization: basic(repository.username, repository.password),
        'content-type': 'application/x-git-upload-pack-request',
        'content-encoding': 'gzip',
      },
      body: gzipSync(request),
    });

    // Assess
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'application/x-git-upload-pack-result');
    const body = Buffer.from(await response.arrayBuffer());
    assert.equal(body.subarray(0, 8).toString('latin1'), '0008NAK\n');
    assert.equal(body.subarray(8, 12).toString('latin1'), 'PACK');
  });

  it("passes on the backend's Status header, as 404 for a missing repository", async () => {
    // Prepare
    const authorization = basic(server.username, server.password);

    // Act
    const response = await fetch(
      `${server.url}/org/missing.git/info/refs?service=git-upload-pack`,
      {
        headers: { authorization },
      },
    );
    await response.body?.cancel();

    // Assess
    assert.equal(response.status, 404);
    assert.equal(response.statusText, 'Not Found');
  });

  it('pushes an annotated tag and removes the files not named when asked', async () => {
    // Prepare
    const repository = await server.createRepository('org/push-options');
    await pushFiles(repository, { 'deploy/web.yaml': WEB_V1, 'deploy/old.yaml': 'old: 1\n' });

    // Act
    const sha = await pushFiles(
      repository,
      { 'deploy/new.yaml': 'new: 1\n' },
      { removeOthers: true, tag: 'v1.2.0', message: 'Replace everything' },
    );

    // Assess
    const refs = await runGit(['ls-remote', repository.authUrl]);
    assert.match(refs, new RegExp(`^${sha}\\trefs/heads/main$`, 'm'));
    assert.match(refs, new RegExp(`^${sha}\\trefs/tags/v1\\.2\\.0\\^\\{\\}$`, 'm'));
    const tagType = await runGit(['cat-file', '-t', 'v1.2.0'], { cwd: repository.bareDir });
    assert.equal(tagType.trim(), 'tag');
    const files = await runGit(['ls-tree', '-r', '--name-only', sha], {
      cwd: repository.bareDir,
    });
    assert.deepEqual(files.trim().split('\n'), ['deploy/new.yaml']);
  });

  it('removes its repositories and stops answering when stopped', async (t) => {
    // Prepare
    const own = await startGitServer({ username: 'alice', password: 'secret' });
    // Also when an assertion fails first; stop() is idempotent.
    t.after(() => own.stop());
    const repository = await own.createRepository('stopped');
    await pushFiles(repository, { 'a.yaml': 'a: 1\n' });

    // Act
    await own.stop();
    await own.stop();

    // Assess
    assert.equal(existsSync(own.rootDir), false);
    await assert.rejects(
      fetch(`${repository.url}/info/refs?service=git-upload-pack`, {
        headers: { authorization: basic('alice', 'secret') },
      }),
    );
  });

  // A stop() that leaves the backend running hangs: the timeout turns that into a failure.
  it(
    'kills a backend still waiting for its request body when stopped',
    { timeout: 20_000 },
    async (t) => {
      // Prepare: announce a body longer than what is sent, so git http-backend
      // and the upload-pack it runs block reading stdin until killed.
      const own = await startGitServer();
      t.after(() => own.stop());
      const repository = await own.createRepository('hanging');
      await pushFiles(repository, { 'a.yaml': 'a: 1\n' });
      const hanging = request(`${repository.url}/git-upload-pack`, {
        method: 'POST',
        headers: {
          authorization: basic(own.username, own.password),
          'content-type': 'application/x-git-upload-pack-request',
          'content-length': '1000',
        },
      });
      const outcome = new Promise<string>((resolve) => {
        hanging.on('error', (error) => resolve(error.message));
        hanging.on('response', (response) => resolve(`HTTP ${response.statusCode}`));
      });
      hanging.write('0032want ');
      const started = await eventually(
        async () => (await backendPids(own.rootDir)).length > 0,
        10_000,
      );

      // Act
      await own.stop();

      // Assess
      assert.ok(started, 'the backend never started');
      assert.deepEqual(await backendPids(own.rootDir), [], 'no backend outlives stop()');
      assert.match(await outcome, /socket hang up|ECONNRESET/);
    },
  );
});
