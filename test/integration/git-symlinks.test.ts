/**
 * Symlinks in real Git repositories, read by the Git source both over smart HTTP (a real
 * `git http-backend`, test/harness/git-server.ts) and in place as a local path: a symlinked
 * directory under the subPath is read as if the directory were there, one leading outside
 * the repository or into a loop refuses the revision, alike on both paths. And a remote
 * SHA-256 repository is refused by name instead of looking empty.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { SecretRef } from '../../src/config/secret-ref.ts';
import { GitRepositoryError, SubPathError } from '../../src/source/git/errors.ts';
import { createGitSource } from '../../src/source/git/index.ts';
import type { GitSource, TrackSource } from '../../src/source/ports.ts';
import type { RevisionFile } from '../../src/render/types.ts';
import { runGit, startGitServer, type GitServer } from '../harness/git-server.ts';

const CREDENTIALS_REF: SecretRef = { scheme: 'env', name: 'GIT_CREDENTIALS' };

let server: GitServer;
let workDir: string;

before(async () => {
  server = await startGitServer();
  workDir = await mkdtemp(join(tmpdir(), 'driftless-git-symlinks-'));
});

after(async () => {
  await server?.stop();
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

function sourceFor(name: string): GitSource {
  return createGitSource({
    cacheDir: join(workDir, `${name}-cache`),
    readSecret: async () => `${server.username}:${server.password}`,
  });
}

function contents(files: readonly RevisionFile[]): Record<string, string> {
  return Object.fromEntries(
    files.map((file) => [file.path, new TextDecoder().decode(file.content)]),
  );
}

/** A work tree whose commits are made with the git CLI: files, and symlinks as `{ link }`. */
async function workTree(
  name: string,
  initOptions: readonly string[] = [],
): Promise<{
  dir: string;
  commit: (entries: Record<string, string | { link: string }>) => Promise<string>;
}> {
  const dir = join(workDir, name);
  await runGit(['init', '--quiet', '--initial-branch=main', ...initOptions, dir]);
  const commit = async (entries: Record<string, string | { link: string }>): Promise<string> => {
    for (const [path, entry] of Object.entries(entries)) {
      await mkdir(dirname(join(dir, path)), { recursive: true });
      if (typeof entry === 'string') await writeFile(join(dir, path), entry);
      else await symlink(entry.link, join(dir, path));
    }
    await runGit(['add', '--all'], { cwd: dir });
    await runGit(['commit', '--quiet', '--message', Object.keys(entries).join(', ')], {
      cwd: dir,
    });
    return (await runGit(['rev-parse', 'HEAD'], { cwd: dir })).trim();
  };
  return { dir, commit };
}

/** Makes `dir`'s repository a bare repository the server serves as `<name>.git`; returns its URL. */
async function serve(dir: string, name: string): Promise<string> {
  await runGit(['clone', '--quiet', '--bare', dir, join(server.rootDir, `${name}.git`)]);
  return `${server.url}/${name}.git`;
}

/** The track over HTTP and the same repository read in place. */
function tracks(url: string, dir: string, subPath: string): Record<string, TrackSource> {
  const track = { name: 'webapp', reference: 'main', subPath };
  return {
    remote: { ...track, repository: url, auth: { type: 'basic', secret: CREDENTIALS_REF } },
    local: { ...track, repository: dir },
  };
}

describe('symlinks in a Git repository', () => {
  it('reads a symlinked directory under the subPath as if it were there, remote and local alike', async () => {
    // Prepare: prod's base is a link to ../base, which holds a link of its own.
    const { dir, commit } = await workTree('directory-link');
    const revision = await commit({
      'common/labels.yaml': 'labels: 1\n',
      'apps/base/deployment.yaml': 'kind: Deployment\n',
      'apps/base/nested/service.yml': 'kind: Service\n',
      'apps/base/labels.yaml': { link: '../../common/labels.yaml' },
      'apps/prod/web.yaml': 'kind: ConfigMap\n',
      'apps/prod/base': { link: '../base' },
      'apps/prod/current': { link: '.././prod/../base/nested' },
    });
    const url = await serve(dir, 'directory-link');
    const source = sourceFor('directory-link');

    // Act
    const read = await Promise.all(
      Object.values(tracks(url, dir, 'apps/prod')).map(async (track) => {
        assert.equal((await source.resolve(track)).revision, revision);
        return contents(await source.readFiles(track, revision));
      }),
    );

    // Assess
    const expected = {
      'apps/prod/base/deployment.yaml': 'kind: Deployment\n',
      'apps/prod/base/labels.yaml': 'labels: 1\n',
      'apps/prod/base/nested/service.yml': 'kind: Service\n',
      'apps/prod/current/service.yml': 'kind: Service\n',
      'apps/prod/web.yaml': 'kind: ConfigMap\n',
    };
    assert.deepEqual(read, [expected, expected]);
  });

  it('refuses a revision whose links lead outside the repository or loop, naming link and target', async () => {
    // Prepare: one commit per fault, each on top of a good tree.
    const { dir, commit } = await workTree('bad-links');
    await commit({ 'apps/base/a.yaml': 'a: 1\n', 'apps/prod/base': { link: '../base' } });
    const absolute = await commit({ 'apps/prod/host': { link: '/etc' } });
    await runGit(['rm', '--quiet', 'apps/prod/host'], { cwd: dir });
    const viaBase = await commit({ 'apps/base/up': { link: '../../..' } });
    await runGit(['rm', '--quiet', 'apps/base/up'], { cwd: dir });
    const loop = await commit({ 'apps/prod/again': { link: '../prod' } });
    const url = await serve(dir, 'bad-links');
    const source = sourceFor('bad-links');
    const expected = [
      `symlink "apps/prod/host" points outside the repository ("/etc") at revision ${absolute}; the revision is refused`,
      `symlink "apps/prod/base/up" (at "apps/base/up") points outside the repository ("../../..") at revision ${viaBase}; the revision is refused`,
      `symlink "apps/prod/again" points to "../prod" at revision ${loop}: a directory the link is in or is reached through, so following it would never end (a symlink loop)`,
    ];

    for (const [kind, track] of Object.entries(tracks(url, dir, 'apps/prod'))) {
      // Act
      const attempts = await Promise.allSettled(
        [absolute, viaBase, loop].map((revision) => source.readFiles(track, revision)),
      );

      // Assess
      attempts.forEach((attempt, index) => {
        assert.equal(attempt.status, 'rejected', `${kind}: ${expected[index]}`);
        const error = (attempt as PromiseRejectedResult).reason as unknown;
        assert.ok(error instanceof SubPathError, `${kind}: ${String(error)}`);
        assert.equal(error.message, `track "webapp": ${expected[index]}`, kind);
      });
    }
  });
});

describe('a remote SHA-256 repository', () => {
  it('is refused by name, without its credentials, rather than reported as not found', async () => {
    // Prepare
    const { dir, commit } = await workTree('sha256', ['--object-format=sha256']);
    const sha = await commit({ 'deploy/web.yaml': 'kind: ConfigMap\n' });
    const url = await serve(dir, 'org/sha256');
    const source = sourceFor('sha256');
    const track = tracks(url, dir, 'deploy').remote!;

    // Act
    const attempts = await Promise.allSettled([
      source.resolve(track),
      source.resolve({ ...track, reference: sha }),
      source.readFiles(track, sha),
    ]);

    // Assess
    assert.equal(sha.length, 64);
    for (const attempt of attempts) {
      assert.equal(attempt.status, 'rejected');
      const error = (attempt as PromiseRejectedResult).reason as unknown;
      assert.ok(error instanceof GitRepositoryError, String(error));
      assert.equal(
        error.message,
        `track "webapp": ${url} is a SHA-256 repository (its server advertises object-format=sha256); SHA-256 repositories are not supported yet`,
      );
      assert.equal(error.code, 'GIT_REPOSITORY_INVALID');
      assert.ok(!error.message.includes(server.password));
    }
  });
});
