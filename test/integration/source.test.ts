/**
 * The Git source against a real Git server (git http-backend behind basic
 * auth) and against repositories the git CLI made on disk.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';
import httpNode from 'isomorphic-git/http/node';
import type { HttpClient } from 'isomorphic-git';
import type { SecretRef } from '../../src/config/secret-ref.ts';
import { InterruptedError } from '../../src/errors.ts';
import {
  GitAuthError,
  GitFetchError,
  GitRefAmbiguousError,
  GitRefNotFoundError,
  GitRepositoryError,
  SubPathError,
} from '../../src/source/git/errors.ts';
import { createGitSource } from '../../src/source/git/index.ts';
import { indexPack } from '../../src/source/git/pack-index.ts';
import type { GitSource, TrackSource } from '../../src/source/ports.ts';
import type { RevisionFile } from '../../src/render/types.ts';
import { eventually } from '../harness/eventually.ts';
import { startFaultProxy } from '../harness/fault-proxy.ts';
import { commitAfter } from '../harness/write-back.ts';
import {
  pushFiles,
  runGit,
  startGitServer,
  type GitRepository,
  type GitServer,
} from '../harness/git-server.ts';
import { assertInterrupted } from '../harness/interrupted.ts';

const CREDENTIALS_REF: SecretRef = { scheme: 'env', name: 'GIT_CREDENTIALS' };

let server: GitServer;
let workDir: string;
let repositoryCount = 0;
let scratchCount = 0;

function scratchDir(name: string): string {
  scratchCount += 1;
  return join(workDir, `${scratchCount}-${name}`);
}

async function newRepository(): Promise<GitRepository> {
  repositoryCount += 1;
  return server.createRepository(`org/manifests-${repositoryCount}`);
}

/** A source whose secret reader serves `value` for the credentials reference, and records reads. */
function sourceFor(
  value: string | undefined,
  options: { cacheDir?: string; http?: HttpClient; idleTimeoutMs?: number } = {},
): { source: GitSource; cacheDir: string; reads: SecretRef[] } {
  const cacheDir = options.cacheDir ?? scratchDir('cache');
  const reads: SecretRef[] = [];
  const source = createGitSource({
    cacheDir,
    readSecret: async (ref) => {
      reads.push(ref);
      if (value === undefined) throw new Error('no such secret');
      return value;
    },
    ...(options.http ? { http: options.http } : {}),
    ...(options.idleTimeoutMs ? { idleTimeoutMs: options.idleTimeoutMs } : {}),
  });
  return { source, cacheDir, reads };
}

function basicSecret(repository: GitRepository): string {
  return `${repository.username}:${repository.password}`;
}

function trackOf(
  repository: GitRepository | string,
  fields: Partial<TrackSource> = {},
): TrackSource {
  return {
    name: 'webapp',
    repository: typeof repository === 'string' ? repository : repository.url,
    reference: 'main',
    auth: { type: 'basic', secret: CREDENTIALS_REF },
    ...fields,
  };
}

function contents(files: readonly RevisionFile[]): Record<string, string> {
  return Object.fromEntries(
    files.map((file) => [file.path, new TextDecoder().decode(file.content)]),
  );
}

/** An HTTP client that counts the response bytes of upload-pack POSTs (pack transfers). */
function countingHttp(): { http: HttpClient; packBytes: () => number } {
  let bytes = 0;
  return {
    packBytes: () => bytes,
    http: {
      async request(request) {
        const response = await httpNode.request(request);
        if (request.method !== 'POST' || !response.body) return response;
        const body = response.body;
        async function* counted(): AsyncIterableIterator<Uint8Array> {
          for await (const chunk of body) {
            bytes += chunk.length;
            yield chunk;
          }
        }
        return { ...response, body: counted() };
      },
    },
  };
}

/** An HTTP client that records every request: method, path and query, and the status answered. */
function recordingHttp(): { http: HttpClient; requests: string[] } {
  const requests: string[] = [];
  return {
    requests,
    http: {
      async request(request) {
        const response = await httpNode.request(request);
        const url = new URL(request.url);
        requests.push(
          `${request.method ?? 'GET'} ${url.pathname}${url.search} ${response.statusCode}`,
        );
        return response;
      },
    },
  };
}

/** Commits symlinks (path -> target) on main and pushes them, with the git CLI. */
async function pushSymlinks(
  repository: GitRepository,
  links: Readonly<Record<string, string>>,
): Promise<string> {
  const work = scratchDir('symlinks');
  const credentials = repository;
  await runGit(['clone', '--quiet', repository.url, work], { credentials });
  for (const [path, target] of Object.entries(links)) {
    await mkdir(dirname(join(work, path)), { recursive: true });
    await symlink(target, join(work, path));
  }
  await runGit(['add', '--all'], { cwd: work });
  await runGit(['commit', '--quiet', '--message', 'Add symlinks'], { cwd: work });
  await runGit(['push', '--quiet', 'origin', 'HEAD:refs/heads/main'], { cwd: work, credentials });
  return (await runGit(['rev-parse', 'HEAD'], { cwd: work })).trim();
}

/** Replaces main with a new root commit holding only `files` (a force-push of unrelated history). */
async function forcePushUnrelated(
  repository: GitRepository,
  files: Readonly<Record<string, string>>,
): Promise<string> {
  const work = scratchDir('force');
  await runGit(['init', '--quiet', '--initial-branch=main', work]);
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(work, path)), { recursive: true });
    await writeFile(join(work, path), content);
  }
  await runGit(['add', '--all'], { cwd: work });
  await runGit(['commit', '--quiet', '--message', 'Start over'], { cwd: work });
  await runGit(['push', '--quiet', '--force', repository.url, 'HEAD:refs/heads/main'], {
    cwd: work,
    credentials: repository,
  });
  return (await runGit(['rev-parse', 'HEAD'], { cwd: work })).trim();
}

/** A work tree made with the git CLI: two commits on main, the first tagged v1.0.0. */
async function localRepository(): Promise<{ dir: string; first: string; second: string }> {
  const dir = scratchDir('local');
  await runGit(['init', '--quiet', '--initial-branch=main', dir]);
  const commit = async (files: Record<string, string>, message: string): Promise<string> => {
    for (const [path, content] of Object.entries(files)) {
      await mkdir(dirname(join(dir, path)), { recursive: true });
      await writeFile(join(dir, path), content);
    }
    await runGit(['add', '--all'], { cwd: dir });
    await runGit(['commit', '--quiet', '--message', message], { cwd: dir });
    return (await runGit(['rev-parse', 'HEAD'], { cwd: dir })).trim();
  };
  const first = await commit({ 'deploy/web.yaml': 'version: 1\n', 'README.md': '#\n' }, 'One');
  await runGit(['tag', '--annotate', '--message', 'v1.0.0', 'v1.0.0'], { cwd: dir });
  const second = await commit({ 'deploy/web.yaml': 'version: 2\n' }, 'Two');
  // Packed refs and packed objects, as a repository that has seen `git gc` has them.
  await runGit(['gc', '--quiet'], { cwd: dir });
  return { dir, first, second };
}

before(async () => {
  server = await startGitServer();
  workDir = await mkdtemp(join(tmpdir(), 'driftless-source-'));
});

after(async () => {
  await server?.stop();
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

/** Checks the error of a fetch with a wrong password: named, and never quoting the password. */
function wrongPasswordError(url: string, wrongPassword: string) {
  return (error: unknown): boolean => {
    assert.ok(error instanceof GitAuthError, String(error));
    assert.equal(
      error.message,
      `track "webapp": authentication failed for ${url} (check the track's auth secret)`,
    );
    assert.ok(!`${error.stack} ${JSON.stringify(error)}`.includes(wrongPassword));
    return true;
  };
}
describe('the Git source over HTTP', () => {
  it('resolves a branch and reads its manifests with basic auth', async () => {
    // Prepare
    const repository = await newRepository();
    const sha = await pushFiles(repository, {
      'deploy/web.yaml': 'kind: ConfigMap\n',
      'deploy/data.json': '{}',
      'deploy/notes.txt': 'not a manifest',
      'other/x.yaml': 'x: 1\n',
    });
    const { source, reads } = sourceFor(basicSecret(repository));
    const track = trackOf(repository, { subPath: 'deploy' });

    // Act
    const resolved = await source.resolve(track);
    const files = await source.readFiles(track, resolved.revision);

    // Assess
    assert.deepEqual(resolved, { revision: sha, ref: 'refs/heads/main' });
    assert.deepEqual(contents(files), {
      'deploy/data.json': '{}',
      'deploy/web.yaml': 'kind: ConfigMap\n',
    });
    assert.deepEqual(reads[0], CREDENTIALS_REF);
  });

  it(
    'cancels the request under way when the call is asked to stop: a hung host is let go at once',
    // A regression fails here instead of hanging the run.
    { timeout: 60_000 },
    async () => {
      // Prepare: a proxy in front of the Git server that takes every request and answers none.
      const repository = await newRepository();
      await pushFiles(repository, { 'a.yaml': 'a: 1\n' });
      const proxy = await startFaultProxy(server.url);
      try {
        proxy.setFault('hang');
        // An idle timeout far beyond the test's: only the cancellation can end the request.
        const { source } = sourceFor(basicSecret(repository), { idleTimeoutMs: 600_000 });
        const track = trackOf(repository.url.replace(server.url, proxy.url));
        const controller = new AbortController();
        const resolving = source.resolve(track, { signal: controller.signal });
        resolving.catch(() => undefined);
        const reachedHost = await eventually(async () => proxy.injected === 1, 10_000, 20);
        const openWhileWaiting = proxy.connections;

        // Act
        controller.abort(new Error('interrupted by SIGINT'));

        // Assess: the client closes the connection (the host never answers, and the idle timeout
        // is far off), then the call fails.
        const closed = await eventually(async () => proxy.connections === 0, 10_000, 20);
        assert.ok(reachedHost, 'the ref advertisement request reached the host');
        assert.equal(openWhileWaiting, 1);
        assert.ok(closed, `connections still open: ${proxy.connections}`);
        await assert.rejects(resolving, GitFetchError);
      } finally {
        await proxy.stop();
      }
    },
  );

  it(
    'cancels a write-back push under way when the call is asked to stop: nothing more is sent',
    // A regression fails here instead of hanging the run.
    { timeout: 60_000 },
    async () => {
      // Prepare: the clone goes through the proxy; from the edit on, the host answers nothing,
      // so the push's first request hangs.
      const repository = await newRepository();
      const before = await pushFiles(repository, { 'a.yaml': 'a: 1\n' });
      const proxy = await startFaultProxy(server.url);
      try {
        const { source } = sourceFor(basicSecret(repository), { idleTimeoutMs: 600_000 });
        const track = trackOf(repository.url.replace(server.url, proxy.url));
        const controller = new AbortController();
        const pushing = source.commit!(
          track,
          commitAfter(() => proxy.setFault('hang'), { 'a.yaml': 'a: 2\n' }),
          { signal: controller.signal },
        );
        pushing.catch(() => undefined);
        const reachedHost = await eventually(async () => proxy.injected === 1, 10_000, 20);

        // Act
        controller.abort(new InterruptedError('interrupted by SIGINT'));

        // Assess: the client lets the connection go, the call fails with the interruption, and
        // the branch is where it was.
        const closed = await eventually(async () => proxy.connections === 0, 10_000, 20);
        assert.ok(reachedHost, "the push's first request reached the host");
        assert.ok(closed, `connections still open: ${proxy.connections}`);
        await assertInterrupted(pushing);
        const head = await runGit(['--git-dir', repository.bareDir, 'rev-parse', 'main']);
        assert.equal(head.trim(), before);
      } finally {
        await proxy.stop();
      }
    },
  );

  it('describes a fetched commit from the cache: no credentials read, no request sent', async () => {
    // Prepare
    const repository = await newRepository();
    const sha = await pushFiles(repository, { 'a.yaml': 'a: 1\n' }, { message: 'Add a\n\nbody' });
    const recorded = recordingHttp();
    const { source, reads } = sourceFor(basicSecret(repository), { http: recorded.http });
    const track = trackOf(repository);
    await source.readFiles(track, (await source.resolve(track)).revision);
    const [readsBefore, requestsBefore] = [reads.length, recorded.requests.length];

    // Act
    const info = await source.describeCommit!(track, sha);

    // Assess
    assert.equal(info?.message, 'Add a\n\nbody');
    assert.match(info?.author ?? '', /^.+ <.+@.+>$/);
    assert.ok(!Number.isNaN(Date.parse(info?.date ?? '')), info?.date);
    assert.deepEqual([reads.length, recorded.requests.length], [readsBefore, requestsBefore]);
  });

  it('authenticates a token as x-access-token', async () => {
    // Prepare
    const token = randomBytes(12).toString('hex');
    const tokenServer = await startGitServer({ username: 'x-access-token', password: token });
    try {
      const repository = await tokenServer.createRepository('org/token');
      const sha = await pushFiles(repository, { 'a.yaml': 'a: 1\n' });
      const { source } = sourceFor(`${token}\n`);

      // Act
      const resolved = await source.resolve(
        trackOf(repository, { auth: { type: 'token', secret: CREDENTIALS_REF } }),
      );

      // Assess
      assert.equal(resolved.revision, sha);
    } finally {
      await tokenServer.stop();
    }
  });

  it('fails with GitAuthError naming the URL, without credentials or with a wrong password', async () => {
    // Prepare
    const repository = await newRepository();
    await pushFiles(repository, { 'a.yaml': 'a: 1\n' });
    const wrongPassword = `wrong-${randomBytes(8).toString('hex')}`;
    const anonymous = sourceFor(undefined).source;
    const wrong = sourceFor(`${repository.username}:${wrongPassword}`).source;

    // Act
    const withoutAuth = anonymous.resolve(trackOf(repository, { auth: undefined }));
    const withWrongAuth = wrong.readFiles(trackOf(repository), 'a'.repeat(40));

    // Assess
    // Both handlers attached at once: the second rejection must not go unhandled meanwhile.
    await Promise.all([
      assert.rejects(withoutAuth, (error: unknown) => {
        assert.ok(error instanceof GitAuthError, String(error));
        assert.equal(error.code, 'GIT_AUTH_FAILED');
        assert.equal(
          error.message,
          `track "webapp": authentication required by ${repository.url}, and the track has no auth (add auth: {type: token, secret: ...})`,
        );
        return true;
      }),
      assert.rejects(withWrongAuth, wrongPasswordError(repository.url, wrongPassword)),
    ]);
  });

  it('reads a commit another track fetched into the shared cache only with credentials that reach the server', async () => {
    // Prepare: one track with the right credentials fetches a commit into the cache
    const repository = await newRepository();
    const sha = await pushFiles(repository, { 'a.yaml': 'a: private\n' });
    const { source, cacheDir } = sourceFor(basicSecret(repository));
    const pinned = trackOf(repository, { reference: sha });
    await source.readFiles(pinned, (await source.resolve(pinned)).revision);
    const wrongPassword = `wrong-${randomBytes(8).toString('hex')}`;
    const anonymous = sourceFor(undefined, { cacheDir }).source;
    const wrong = sourceFor(`${repository.username}:${wrongPassword}`, { cacheDir }).source;

    // Act: tracks of the same URL (one cache) naming that commit
    const withoutAuth = anonymous.resolve(trackOf(repository, { reference: sha, auth: undefined }));
    const withWrongAuth = wrong.resolve(pinned);
    const readWrong = wrong.readFiles(pinned, sha);

    // Assess
    await Promise.all([
      assert.rejects(withoutAuth, GitAuthError),
      assert.rejects(withWrongAuth, wrongPasswordError(repository.url, wrongPassword)),
      assert.rejects(readWrong, wrongPasswordError(repository.url, wrongPassword)),
    ]);
    assert.deepEqual(contents(await source.readFiles(pinned, sha)), { 'a.yaml': 'a: private\n' });
  });

  it('follows a branch force-pushed to an unrelated commit', async () => {
    // Prepare
    const repository = await newRepository();
    await pushFiles(repository, { 'deploy/web.yaml': 'version: 1\n' });
    const { source } = sourceFor(basicSecret(repository));
    const track = trackOf(repository, { subPath: 'deploy' });
    await source.readFiles(track, (await source.resolve(track)).revision);
    const moved = await forcePushUnrelated(repository, { 'deploy/api.yaml': 'version: 9\n' });

    // Act
    const resolved = await source.resolve(track);
    const files = await source.readFiles(track, resolved.revision);

    // Assess
    assert.equal(resolved.revision, moved);
    assert.deepEqual(contents(files), { 'deploy/api.yaml': 'version: 9\n' });
  });

  it('resolves tags (annotated tags peeled) and picks the newest tag of a semver range', async () => {
    // Prepare
    const repository = await newRepository();
    const v120 = await pushFiles(repository, { 'v.yaml': 'v: 1.2.0\n' }, { tag: 'v1.2.0' });
    const v140 = await pushFiles(repository, { 'v.yaml': 'v: 1.4.0\n' }, { tag: 'v1.4.0' });
    await pushFiles(repository, { 'v.yaml': 'v: 2.0.0\n' }, { tag: 'v2.0.0' });
    await pushFiles(repository, { 'v.yaml': 'v: release\n' }, { tag: 'release-9' });
    const { source } = sourceFor(basicSecret(repository));
    const ranged = trackOf(repository, { reference: undefined, semver: '>=1.0.0 <2' });

    // Act
    const byRange = await source.resolve(ranged);
    const byTag = await source.resolve(trackOf(repository, { reference: 'v1.2.0' }));
    const byFullRef = await source.resolve(trackOf(repository, { reference: 'refs/tags/v1.2.0' }));
    const files = await source.readFiles(ranged, byRange.revision);
    const noMatch = source.resolve(trackOf(repository, { reference: undefined, semver: '>=3' }));

    // Assess
    assert.deepEqual(byRange, { revision: v140, ref: 'refs/tags/v1.4.0' });
    assert.deepEqual(byTag, { revision: v120, ref: 'refs/tags/v1.2.0' });
    assert.deepEqual(byFullRef, byTag);
    assert.deepEqual(contents(files), { 'v.yaml': 'v: 1.4.0\n' });
    await assert.rejects(noMatch, (error: unknown) => {
      assert.ok(error instanceof GitRefNotFoundError, String(error));
      assert.match(
        error.message,
        /no tag matching semver range ">=3" in .* \(semver tags: v2\.0\.0, v1\.4\.0, v1\.2\.0\)/,
      );
      return true;
    });
  });

  it('refuses a name that is both a branch and a tag, and names a missing one', async () => {
    // Prepare
    const repository = await newRepository();
    await pushFiles(repository, { 'a.yaml': 'a: 1\n' }, { tag: 'stable' });
    await pushFiles(repository, { 'a.yaml': 'a: 2\n' }, { branch: 'stable' });
    const { source } = sourceFor(basicSecret(repository));

    // Act (run by assert.rejects one after the other: neither rejection goes unhandled, which
    // node:test reports as the test's failure when the second rejects first)
    const ambiguous = (): Promise<unknown> =>
      source.resolve(trackOf(repository, { reference: 'stable' }));
    const missing = (): Promise<unknown> =>
      source.resolve(trackOf(repository, { reference: 'production' }));

    // Assess
    await assert.rejects(ambiguous, GitRefAmbiguousError);
    await assert.rejects(missing, (error: unknown) => {
      assert.ok(error instanceof GitRefNotFoundError, String(error));
      assert.equal(
        error.message,
        `track "webapp": reference "production" is neither a branch nor a tag in ${repository.url} (available: main, stable, stable)`,
      );
      return true;
    });
  });

  it('resolves and reads an older commit by full sha, and refuses an unknown sha', async () => {
    // Prepare
    const repository = await newRepository();
    const older = await pushFiles(repository, { 'a.yaml': 'a: 1\n' });
    await pushFiles(repository, { 'a.yaml': 'a: 2\n' });
    const { source } = sourceFor(basicSecret(repository));
    const track = trackOf(repository, { reference: older.toUpperCase() });
    const unknown = 'f'.repeat(40);

    // Act
    const resolved = await source.resolve(track);
    const files = await source.readFiles(track, resolved.revision);
    const missing = source.resolve(trackOf(repository, { reference: unknown }));

    // Assess
    assert.deepEqual(resolved, { revision: older, ref: older });
    assert.deepEqual(contents(files), { 'a.yaml': 'a: 1\n' });
    await assert.rejects(missing, (error: unknown) => {
      assert.ok(error instanceof GitRefNotFoundError, String(error));
      assert.equal(
        error.message,
        `track "webapp": commit ${unknown} not found in ${repository.url}`,
      );
      return true;
    });
  });

  it('reads only the subPath and refuses subPaths and symlinks that leave the repository', async () => {
    // Prepare
    const repository = await newRepository();
    await pushFiles(repository, {
      'deploy/prod/web.yaml': 'env: prod\n',
      'deploy/prod/nested/db.yml': 'db: 1\n',
      'deploy/staging/web.yaml': 'env: staging\n',
      'common/labels.yaml': 'labels: 1\n',
    });
    const inside = await pushSymlinks(repository, {
      'deploy/prod/labels.yaml': '../../common/labels.yaml',
    });
    const outside = await pushSymlinks(repository, { 'deploy/prod/passwd.yaml': '/etc/passwd' });
    const { source } = sourceFor(basicSecret(repository));
    const prod = trackOf(repository, { subPath: 'deploy/prod' });

    // Act
    const files = await source.readFiles(prod, inside);
    const escaping = source.readFiles(prod, outside);
    const dotDot = source.readFiles(trackOf(repository, { subPath: 'deploy/../..' }), inside);
    const missing = source.readFiles(trackOf(repository, { subPath: 'deploy/dev' }), inside);

    // Assess
    assert.deepEqual(contents(files), {
      'deploy/prod/labels.yaml': 'labels: 1\n',
      'deploy/prod/nested/db.yml': 'db: 1\n',
      'deploy/prod/web.yaml': 'env: prod\n',
    });
    // All handlers attached at once: no rejection goes unhandled while another is awaited.
    await Promise.all([
      assert.rejects(escaping, (error: unknown) => {
        assert.ok(error instanceof SubPathError, String(error));
        assert.match(
          error.message,
          /symlink "deploy\/prod\/passwd\.yaml" points outside the repository \("\/etc\/passwd"\)/,
        );
        return true;
      }),
      assert.rejects(dotDot, SubPathError),
      assert.rejects(missing, (error: unknown) => {
        assert.ok(error instanceof SubPathError, String(error));
        assert.equal(
          error.message,
          `track "webapp": subPath "deploy/dev" does not exist at revision ${inside}`,
        );
        return true;
      }),
    ]);
  });

  it('reuses its cache: the next commit is an incremental fetch', async () => {
    // Prepare
    const repository = await newRepository();
    const files: Record<string, string> = {};
    for (let i = 0; i < 200; i++) {
      files[`deploy/config-${i}.yaml`] = `data: ${randomBytes(200).toString('base64')}\n`;
    }
    await pushFiles(repository, files);
    const counter = countingHttp();
    const cacheDir = scratchDir('cache');
    const track = trackOf(repository, { subPath: 'deploy' });
    const first = sourceFor(basicSecret(repository), { cacheDir, http: counter.http }).source;
    await first.readFiles(track, (await first.resolve(track)).revision);
    const cloneBytes = counter.packBytes();
    await pushFiles(repository, { 'deploy/config-7.yaml': 'data: changed\n' });
    // A new source, as the next run (or Lambda invocation) would make.
    const next = sourceFor(basicSecret(repository), { cacheDir, http: counter.http }).source;

    // Act
    const read = await next.readFiles(track, (await next.resolve(track)).revision);
    const incrementalBytes = counter.packBytes() - cloneBytes;

    // Assess
    assert.equal(read.length, 200);
    assert.equal(contents(read)['deploy/config-7.yaml'], 'data: changed\n');
    const caches = await readdir(cacheDir);
    assert.equal(caches.length, 1);
    assert.match(caches[0]!, /^manifests-\d+-[0-9a-f]{32}$/);
    const packs = (await readdir(join(cacheDir, caches[0]!, 'objects', 'pack'))).filter((name) =>
      name.endsWith('.pack'),
    );
    assert.equal(packs.length, 2);
    assert.ok(
      incrementalBytes * 20 < cloneBytes,
      `incremental fetch moved ${incrementalBytes} bytes, the first ${cloneBytes}`,
    );
  });

  it('reads the next commit right past a damaged blob memo, and writes the memo anew', async () => {
    // Prepare
    const repository = await newRepository();
    await pushFiles(repository, { 'a.yaml': 'a: 1\n', 'b.yaml': 'b: 1\n' });
    const cacheDir = scratchDir('cache');
    const track = trackOf(repository);
    const first = sourceFor(basicSecret(repository), { cacheDir }).source;
    await first.readFiles(track, (await first.resolve(track)).revision);
    const [cache] = await readdir(cacheDir);
    const memo = join(cacheDir, cache!, 'driftless-blobs', track.name);
    const damaged = await readFile(memo);
    // b.yaml stays as it is in the next commit: a damaged memo entry used for it would show.
    damaged[damaged.indexOf('b: 1') + 3] = '9'.charCodeAt(0);
    await writeFile(memo, damaged);
    await pushFiles(repository, { 'a.yaml': 'a: 2\n' });
    const next = sourceFor(basicSecret(repository), { cacheDir }).source;

    // Act
    const read = await next.readFiles(track, (await next.resolve(track)).revision);

    // Assess
    assert.deepEqual(contents(read), { 'a.yaml': 'a: 2\n', 'b.yaml': 'b: 1\n' });
    const rewritten = await readFile(memo);
    assert.ok(
      rewritten.includes('a: 2\n') && rewritten.includes('b: 1\n'),
      'memo holds the new tree',
    );
    assert.ok(!rewritten.includes('a: 1\n'), 'memo holds only the last tree read');
  });

  it('fails with GitFetchError naming the pack when a pack of the cache is damaged', async () => {
    // Prepare
    const repository = await newRepository();
    await pushFiles(repository, { 'a.yaml': 'a: 1\n' });
    const cacheDir = scratchDir('cache');
    const track = trackOf(repository);
    const first = sourceFor(basicSecret(repository), { cacheDir }).source;
    const { revision } = await first.resolve(track);
    await first.readFiles(track, revision);
    const [cache] = await readdir(cacheDir);
    const packDir = join(cacheDir, cache!, 'objects', 'pack');
    const pack = (await readdir(packDir)).find((name) => name.endsWith('.pack'))!;
    const bytes = await readFile(join(packDir, pack));
    bytes[20] = bytes[20]! ^ 0xff;
    await writeFile(join(packDir, pack), bytes);
    const next = sourceFor(basicSecret(repository), { cacheDir }).source;

    // Act
    const read = next.readFiles(track, revision);

    // Assess
    await assert.rejects(read, (error: unknown) => {
      assert.ok(error instanceof GitFetchError, String(error));
      assert.equal(
        error.message,
        `track "webapp": reading the Git cache of ${repository.url} failed: pack ${pack}: its checksum does not match its index`,
      );
      return true;
    });
  });

  it('reads a file the incremental fetch sent as a delta against the previous pack', async () => {
    // Prepare
    const repository = await newRepository();
    const lines = Array.from(
      { length: 400 },
      (_, i) => `key${i}: ${randomBytes(8).toString('hex')}`,
    );
    await pushFiles(repository, {
      'deploy/big.yaml': lines.join('\n'),
      'deploy/small.yaml': 'a: 1\n',
    });
    const cacheDir = scratchDir('cache');
    const track = trackOf(repository, { subPath: 'deploy' });
    const first = sourceFor(basicSecret(repository), { cacheDir }).source;
    await first.readFiles(track, (await first.resolve(track)).revision);
    const edited = [...lines];
    edited[200] = 'key200: edited';
    await pushFiles(repository, { 'deploy/big.yaml': edited.join('\n') });
    const next = sourceFor(basicSecret(repository), { cacheDir }).source;

    // Act
    const read = await next.readFiles(track, (await next.resolve(track)).revision);

    // Assess
    assert.deepEqual(contents(read), {
      'deploy/big.yaml': edited.join('\n'),
      'deploy/small.yaml': 'a: 1\n',
    });
  });

  it('fetches a one-file change as a thin pack, stores it whole, and keeps the shallow file as git does', async () => {
    // Prepare
    const repository = await newRepository();
    const files: Record<string, string> = {};
    for (let i = 0; i < 50; i++) {
      files[`deploy/config-${i}.yaml`] = Array.from(
        { length: 40 },
        (_, line) => `key${line}: ${randomBytes(8).toString('hex')}`,
      ).join('\n');
    }
    const first = await pushFiles(repository, files);
    const cacheDir = scratchDir('cache');
    const track = trackOf(repository, { subPath: 'deploy' });
    const before = sourceFor(basicSecret(repository), { cacheDir }).source;
    await before.readFiles(track, (await before.resolve(track)).revision);
    const gitdir = join(cacheDir, (await readdir(cacheDir))[0]!);
    const packDir = join(gitdir, 'objects', 'pack');
    const packsBefore = new Set(await readdir(packDir));
    const changed = `${files['deploy/config-7.yaml']!}\nadded: 1`;
    const second = await pushFiles(repository, { 'deploy/config-7.yaml': changed });
    const next = sourceFor(basicSecret(repository), { cacheDir }).source;

    // Act
    const read = await next.readFiles(track, (await next.resolve(track)).revision);

    // Assess
    assert.deepEqual(contents(read), { ...files, 'deploy/config-7.yaml': changed });
    const added = (await readdir(packDir)).filter((name) => !packsBefore.has(name));
    assert.deepEqual(added.map((name) => name.replace(/^pack-[0-9a-f]{40}/, '')).sort(), [
      '.idx',
      '.pack',
    ]);
    const pack = await readFile(
      join(
        packDir,
        added.find((name) => name.endsWith('.pack'))!,
      ),
    );
    // Thin: the commit, two trees and the changed blob came, nothing of the unchanged files;
    // the bases of their deltas were appended from the cache, so the pack stands alone.
    const objects = pack.readUInt32BE(8);
    assert.ok(objects > 4 && objects <= 7, `the stored pack holds ${objects} objects`);
    assert.equal((await indexPack(pack, async () => undefined)).appended, 0);
    const shallow = (await readFile(join(gitdir, 'shallow'), 'utf8')).trim().split('\n');
    assert.deepEqual(shallow, [first, second].sort());
  });

  it('reads a file reverted to an earlier version after incremental fetches', async () => {
    // Prepare
    const repository = await newRepository();
    const original = Array.from({ length: 300 }, (_, line) => `key${line}: value-${line}`);
    const edited = [...original];
    edited[150] = 'key150: edited';
    const cacheDir = scratchDir('cache');
    const track = trackOf(repository, { subPath: 'deploy' });
    const readLatest = async (): Promise<Record<string, string>> => {
      const source = sourceFor(basicSecret(repository), { cacheDir }).source;
      return contents(await source.readFiles(track, (await source.resolve(track)).revision));
    };
    await pushFiles(repository, { 'deploy/a.yaml': original.join('\n') });
    await readLatest();
    await pushFiles(repository, { 'deploy/a.yaml': edited.join('\n') });
    await readLatest();
    // Back to the first version: the server may send it as a delta against the edited one.
    await pushFiles(repository, { 'deploy/a.yaml': original.join('\n') });

    // Act
    const read = await readLatest();

    // Assess
    assert.deepEqual(read, { 'deploy/a.yaml': original.join('\n') });
    // Every pack stands alone: kept thin, the last two would be deltas against each other's
    // objects, and which a reader took first would decide whether it went round in circles.
    const packDir = join(cacheDir, (await readdir(cacheDir))[0]!, 'objects', 'pack');
    const packs = (await readdir(packDir)).filter((name) => name.endsWith('.pack'));
    assert.equal(packs.length, 3);
    for (const name of packs) {
      const pack = await readFile(join(packDir, name));
      assert.equal((await indexPack(pack, async () => undefined)).appended, 0);
    }
  });

  it('resolves and fetches in two requests, credentials sent up front (no request answered 401)', async () => {
    // Prepare
    const repository = await newRepository();
    await pushFiles(repository, { 'deploy/a.yaml': 'a: 1\n' });
    const recorder = recordingHttp();
    const { source } = sourceFor(basicSecret(repository), { http: recorder.http });
    const track = trackOf(repository);
    const path = new URL(repository.url).pathname;

    // Act
    const resolved = await source.resolve(track);
    await source.readFiles(track, resolved.revision);

    // Assess
    assert.deepEqual(recorder.requests, [
      // resolve: the ref advertisement (refs and capabilities)
      `GET ${path}/info/refs?service=git-upload-pack 200`,
      // readFiles: the shallow fetch, with the capabilities the resolve just read
      `POST ${path}/git-upload-pack 200`,
    ]);
  });

  it('fails a fetch with a wrong password or of a missing repository as before', async () => {
    // Prepare
    const repository = await newRepository();
    const sha = await pushFiles(repository, { 'a.yaml': 'a: 1\n' });
    const wrongPassword = `wrong-${randomBytes(8).toString('hex')}`;
    const wrong = sourceFor(`${repository.username}:${wrongPassword}`).source;
    const right = sourceFor(basicSecret(repository)).source;
    const missingUrl = repository.url.replace(/\.git$/, '-missing.git');

    // Act (run by assert.rejects one after the other: neither rejection goes unhandled)
    const refused = (): Promise<unknown> => wrong.readFiles(trackOf(repository), sha);
    const missing = (): Promise<unknown> => right.readFiles(trackOf(missingUrl), sha);

    // Assess
    await assert.rejects(refused, wrongPasswordError(repository.url, wrongPassword));
    await assert.rejects(missing, (error: unknown) => {
      assert.ok(error instanceof GitFetchError, String(error));
      assert.equal(
        error.message,
        `track "webapp": repository ${missingUrl} not found (HTTP 404; check the URL and that the credentials can read it)`,
      );
      return true;
    });
  });

  it('serves several tracks of one repository at once from one cache', async () => {
    // Prepare
    const repository = await newRepository();
    // isomorphic-git's fetch fails on a server whose HEAD names no branch, so main must exist.
    await pushFiles(repository, { 'README.md': '#\n' });
    for (const env of ['a', 'b', 'c', 'd']) {
      await pushFiles(repository, { [`${env}/x.yaml`]: `env: ${env}\n` }, { branch: env });
    }
    const { source, cacheDir } = sourceFor(basicSecret(repository));

    // Act
    const results = await Promise.all(
      ['a', 'b', 'c', 'd'].map(async (env) => {
        const track = trackOf(repository, { name: `track-${env}`, reference: env, subPath: env });
        return contents(await source.readFiles(track, (await source.resolve(track)).revision));
      }),
    );

    // Assess
    assert.deepEqual(results, [
      { 'a/x.yaml': 'env: a\n' },
      { 'b/x.yaml': 'env: b\n' },
      { 'c/x.yaml': 'env: c\n' },
      { 'd/x.yaml': 'env: d\n' },
    ]);
    assert.equal((await readdir(cacheDir)).length, 1);
  });

  it('refuses an SSH URL without SSH auth, without touching the network', async () => {
    // Prepare
    const { source } = sourceFor(undefined);

    // Act
    const attempt = source.resolve(trackOf('git@github.com:org/repo.git', { auth: undefined }));

    // Assess
    await assert.rejects(attempt, (error: unknown) => {
      assert.ok(error instanceof GitAuthError, String(error));
      assert.match(error.message, /an SSH repository needs auth: \{type: ssh/);
      return true;
    });
  });
});

describe('the Git source on local repositories', () => {
  it('reads a work tree in place by path and by file:// URL, committed content only', async () => {
    // Prepare
    const { dir, first, second } = await localRepository();
    await writeFile(join(dir, 'deploy', 'web.yaml'), 'version: uncommitted\n');
    const { source, cacheDir } = sourceFor(undefined);
    const byPath = trackOf(dir, { auth: undefined, subPath: 'deploy' });
    const byUrl = trackOf(pathToFileURL(dir).href, { auth: undefined, subPath: 'deploy' });

    // Act
    const main = await source.resolve(byPath);
    const tag = await source.resolve({ ...byUrl, reference: 'v1.0.0' });
    const ranged = await source.resolve({ ...byUrl, reference: undefined, semver: '^1' });
    const files = await source.readFiles(byUrl, main.revision);
    const older = await source.readFiles(byPath, first);

    // Assess
    assert.deepEqual(main, { revision: second, ref: 'refs/heads/main' });
    assert.deepEqual(tag, { revision: first, ref: 'refs/tags/v1.0.0' });
    assert.deepEqual(ranged, tag);
    assert.deepEqual(contents(files), { 'deploy/web.yaml': 'version: 2\n' });
    assert.deepEqual(contents(older), { 'deploy/web.yaml': 'version: 1\n' });
    assert.equal(existsSync(cacheDir), false, 'a local repository needs no cache');
  });

  it('reads commits whose objects are still loose, and names a damaged loose object', async () => {
    // Prepare: a commit after the gc, its objects loose as a fresh commit leaves them.
    const { dir } = await localRepository();
    await writeFile(join(dir, 'deploy', 'web.yaml'), 'version: 3\n');
    await runGit(['commit', '--quiet', '--all', '--message', 'Three'], { cwd: dir });
    const third = (await runGit(['rev-parse', 'HEAD'], { cwd: dir })).trim();
    const blob = (await runGit(['rev-parse', 'HEAD:deploy/web.yaml'], { cwd: dir })).trim();
    const blobPath = join(dir, '.git', 'objects', blob.slice(0, 2), blob.slice(2));
    assert.ok(existsSync(blobPath), 'the new blob should be loose');
    const { source } = sourceFor(undefined);
    const track = trackOf(dir, { auth: undefined, subPath: 'deploy' });

    // Act
    const resolved = await source.resolve(track);
    const files = await source.readFiles(track, resolved.revision);
    await rm(blobPath, { force: true });
    await writeFile(blobPath, 'not zlib');
    const damaged = source.readFiles(track, third);

    // Assess
    assert.deepEqual(resolved, { revision: third, ref: 'refs/heads/main' });
    assert.deepEqual(contents(files), { 'deploy/web.yaml': 'version: 3\n' });
    await assert.rejects(damaged, (error: unknown) => {
      assert.ok(error instanceof GitFetchError, String(error));
      assert.match(error.message, new RegExp(`loose git object ${blob} does not inflate`));
      return true;
    });
  });

  it('says a SHA-256 repository, or a 64-hex commit id, is not supported yet', async () => {
    // Prepare
    const dir = scratchDir('sha256');
    await runGit(['init', '--quiet', '--initial-branch=main', '--object-format=sha256', dir]);
    await mkdir(join(dir, 'deploy'));
    await writeFile(join(dir, 'deploy', 'web.yaml'), 'version: 1\n');
    await runGit(['add', '--all'], { cwd: dir });
    await runGit(['commit', '--quiet', '--message', 'One'], { cwd: dir });
    const sha = (await runGit(['rev-parse', 'HEAD'], { cwd: dir })).trim();
    const { dir: sha1Dir } = await localRepository();
    const { source } = sourceFor(undefined);

    // Act
    const attempts = await Promise.allSettled([
      source.resolve(trackOf(dir, { auth: undefined })),
      source.resolve(trackOf(dir, { auth: undefined, reference: sha })),
      source.readFiles(trackOf(dir, { auth: undefined }), sha),
      source.readFiles(trackOf(sha1Dir, { auth: undefined }), sha),
    ]);

    // Assess
    assert.equal(sha.length, 64);
    const errors = attempts.map((attempt) =>
      attempt.status === 'rejected' ? (attempt.reason as Error) : undefined,
    );
    for (const error of errors.slice(0, 3)) {
      assert.ok(error instanceof GitRepositoryError, String(error));
      assert.equal(
        error.message,
        `track "webapp": ${dir} is a SHA-256 repository (extensions.objectformat = sha256); SHA-256 repositories are not supported yet`,
      );
    }
    assert.ok(errors[3] instanceof GitRefNotFoundError, String(errors[3]));
    assert.equal(
      errors[3].message,
      `track "webapp": commit ${sha} not found in ${sha1Dir}: a 64-hex id names a SHA-256 commit, and SHA-256 repositories are not supported yet`,
    );
  });

  it('reads objects a repository borrows through objects/info/alternates (git clone --shared)', async () => {
    // Prepare: the shared clone holds none of the first two commits' objects, only the third's.
    const { dir, first } = await localRepository();
    const shared = scratchDir('shared');
    await runGit(['clone', '--quiet', '--shared', dir, shared]);
    await writeFile(join(shared, 'deploy', 'web.yaml'), 'version: 3\n');
    await runGit(['commit', '--quiet', '--all', '--message', 'Three'], { cwd: shared });
    const third = (await runGit(['rev-parse', 'HEAD'], { cwd: shared })).trim();
    const alternates = join(shared, '.git', 'objects', 'info', 'alternates');
    assert.ok(existsSync(alternates), 'git clone --shared should write alternates');
    const chained = scratchDir('chained');
    await runGit(['clone', '--quiet', '--shared', '--bare', shared, chained]);
    const { source } = sourceFor(undefined);
    const track = trackOf(shared, { auth: undefined, subPath: 'deploy' });

    // Act
    const resolved = await source.resolve(track);
    const latest = await source.readFiles(track, third);
    const older = await source.readFiles(track, first);
    const throughTwo = await source.readFiles(trackOf(chained, { auth: undefined }), first);

    // Assess
    assert.deepEqual(resolved, { revision: third, ref: 'refs/heads/main' });
    assert.deepEqual(contents(latest), { 'deploy/web.yaml': 'version: 3\n' });
    assert.deepEqual(contents(older), { 'deploy/web.yaml': 'version: 1\n' });
    assert.deepEqual(contents(throughTwo), { 'deploy/web.yaml': 'version: 1\n' });
  });

  it('refuses two tags of the version a semver range picks on different commits, naming both', async () => {
    // Prepare: v1.0.0 (annotated) is on the first commit; 1.0.0 goes on the second.
    const { dir, second } = await localRepository();
    await runGit(['tag', '1.0.0', second], { cwd: dir });
    await runGit(['tag', '--annotate', '--message', 'same', 'v0.9.0', second], { cwd: dir });
    await runGit(['tag', '0.9.0', second], { cwd: dir });
    const { source } = sourceFor(undefined);
    const track = trackOf(dir, { auth: undefined, reference: undefined });

    // Act
    const sameCommit = await source.resolve({ ...track, semver: '<1' });
    const ambiguous = source.resolve({ ...track, semver: '^1' });

    // Assess
    await assert.rejects(ambiguous, (error: unknown) => {
      assert.ok(error instanceof GitRefAmbiguousError, String(error));
      assert.equal(
        error.message,
        `track "webapp": version 1.0.0 (the newest in semver range "^1") is tagged 1.0.0 and v1.0.0 in ${dir}, on different commits; delete one of the tags, or follow one with reference: refs/tags/<tag> instead of semver`,
      );
      return true;
    });
    assert.equal(sameCommit.revision, second);
  });

  it('reads a bare repository, and refuses a directory that is not a repository', async () => {
    // Prepare
    const { dir, second } = await localRepository();
    const bare = scratchDir('bare.git');
    await runGit(['clone', '--quiet', '--bare', dir, bare]);
    const plain = scratchDir('plain');
    await mkdir(plain);
    const { source } = sourceFor(undefined);

    // Act
    const resolved = await source.resolve(trackOf(bare, { auth: undefined, reference: 'HEAD' }));
    const notRepository = source.resolve(trackOf(plain, { auth: undefined }));

    // Assess
    assert.deepEqual(resolved, { revision: second, ref: 'refs/heads/main' });
    await assert.rejects(notRepository, (error: unknown) => {
      assert.ok(error instanceof GitRepositoryError, String(error));
      assert.match(error.message, /is not a Git repository/);
      return true;
    });
    assert.ok((await stat(bare)).isDirectory());
  });
});
