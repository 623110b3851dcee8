/**
 * The local ref reader (src/source/git/refs-on-disk.ts) against repositories
 * the git CLI wrote: loose and packed refs, a ref both loose and packed,
 * annotated tags with peeled lines, nested branch names, symbolic refs and a
 * detached HEAD, with isomorphic-git's listRefs/resolveRef as the oracle.
 */
import assert from 'node:assert/strict';
import fs, { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import isogit from 'isomorphic-git';
import { runGit } from '../harness/git-server.ts';
import {
  listRefNames,
  readRef,
  RefNotOnDiskError,
  resolveRef,
} from '../../src/source/git/refs-on-disk.ts';

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** git in `cwd`, as the harness runs it (isolated config, a test identity); stdout trimmed. */
async function git(cwd: string, ...args: string[]): Promise<string> {
  return (await runGit(args, { cwd })).trim();
}

/** Three commits on main, branches (one nested), light and annotated tags; some refs packed. */
async function repository(): Promise<string> {
  const work = mkdtempSync(join(tmpdir(), 'driftless-refs-'));
  dirs.push(work);
  await git(work, 'init', '--quiet', '-b', 'main');
  for (let commit = 0; commit < 3; commit++) {
    writeFileSync(join(work, 'a.yaml'), `n: ${commit}\n`);
    await git(work, 'add', '.');
    await git(work, 'commit', '--quiet', '-m', `c${commit}`);
    await git(work, 'tag', `v1.${commit}.0`);
    await git(work, 'tag', '-a', '-m', 'annotated', `release-${commit}`);
  }
  await git(work, 'branch', 'feature/deep/name', 'HEAD~1');
  await git(work, 'branch', 'old', 'HEAD~2');
  // Everything so far packed (annotated tags get `^` peeled lines), then some refs loose again:
  await git(work, 'pack-refs', '--all');
  // ...a branch moved after packing (loose wins over its stale packed line),
  await git(work, 'update-ref', 'refs/heads/old', 'HEAD');
  // ...a loose-only branch and tag, and a symbolic ref besides HEAD.
  await git(work, 'branch', 'loose-only', 'HEAD~1');
  await git(work, 'tag', '-a', '-m', 'loose annotated', 'v2.0.0');
  await git(work, 'symbolic-ref', 'refs/heads/alias', 'refs/heads/feature/deep/name');
  return join(work, '.git');
}

describe('refs on disk, with isomorphic-git as the oracle', () => {
  it('lists the same refs as isomorphic-git, loose and packed, without peeled lines', async () => {
    const gitdir = await repository();
    const ours = await listRefNames(gitdir);
    const oracle = (await isogit.listRefs({ fs, gitdir, filepath: 'refs' }))
      .filter((name) => !name.endsWith('^{}'))
      .map((name) => `refs/${name}`)
      .sort();
    assert.deepEqual(ours, oracle);
    assert.ok(ours.includes('refs/heads/feature/deep/name'));
    assert.ok(ours.includes('refs/tags/release-0'), 'a packed annotated tag');
    assert.ok(ours.includes('refs/tags/v2.0.0'), 'a loose annotated tag');
    assert.equal(new Set(ours).size, ours.length, 'a ref both loose and packed once');
  });

  it('resolves every ref and HEAD to what isomorphic-git and git resolve', async () => {
    const gitdir = await repository();
    const names = [...(await listRefNames(gitdir)), 'HEAD'];
    for (const ref of names) {
      const ours = await resolveRef(gitdir, ref);
      assert.equal(ours, await isogit.resolveRef({ fs, gitdir, ref }), ref);
      assert.equal(ours, await git(gitdir, 'rev-parse', ref), ref);
    }
    // The loose line of a moved branch wins over its stale packed one.
    assert.equal(
      await resolveRef(gitdir, 'refs/heads/old'),
      await git(gitdir, 'rev-parse', 'main'),
    );
  });

  it('reads HEAD as symbolic, and as an object id once detached', async () => {
    const gitdir = await repository();
    assert.deepEqual(await readRef(gitdir, 'HEAD'), { target: 'refs/heads/main' });
    const head = await isogit.resolveRef({ fs, gitdir, ref: 'HEAD', depth: 1 });
    assert.equal(head, 'ref: refs/heads/main');
    await git(gitdir, 'update-ref', '--no-deref', 'HEAD', 'refs/tags/v1.0.0');
    const detached = await git(gitdir, 'rev-parse', 'v1.0.0');
    assert.deepEqual(await readRef(gitdir, 'HEAD'), { oid: detached });
    assert.equal(await resolveRef(gitdir, 'HEAD'), detached);
    assert.equal(await isogit.resolveRef({ fs, gitdir, ref: 'HEAD' }), detached);
  });

  it('names the missing ref, and a symbolic ref pointing nowhere', async () => {
    const gitdir = await repository();
    await assert.rejects(resolveRef(gitdir, 'refs/heads/nope'), (error: unknown) => {
      assert.ok(error instanceof RefNotOnDiskError);
      assert.equal(error.message, 'ref refs/heads/nope not found');
      return true;
    });
    await isogit.resolveRef({ fs, gitdir, ref: 'refs/heads/nope' }).then(
      () => assert.fail('isomorphic-git found a missing ref'),
      () => undefined,
    );
    writeFileSync(join(gitdir, 'refs', 'heads', 'dangling'), 'ref: refs/heads/gone\n');
    await assert.rejects(
      resolveRef(gitdir, 'refs/heads/dangling'),
      /ref refs\/heads\/dangling points to refs\/heads\/gone, which does not exist/,
    );
  });

  it('refuses a symbolic ref pointing outside refs/, which git never writes', async () => {
    const gitdir = await repository();
    writeFileSync(join(gitdir, 'refs', 'heads', 'escape'), 'ref: refs/../../config\n');
    writeFileSync(join(gitdir, 'refs', 'heads', 'absolute'), 'ref: /etc/hostname\n');
    for (const name of ['escape', 'absolute']) {
      await assert.rejects(resolveRef(gitdir, `refs/heads/${name}`), /points outside refs\//);
    }
  });

  it('refuses a ref file holding neither an object id nor a ref, and skips lock files', async () => {
    const gitdir = await repository();
    writeFileSync(join(gitdir, 'refs', 'heads', 'broken'), 'not a sha\n');
    writeFileSync(join(gitdir, 'refs', 'heads', 'main.lock'), `${'a'.repeat(40)}\n`);
    await assert.rejects(resolveRef(gitdir, 'refs/heads/broken'), /holds neither/);
    const names = await listRefNames(gitdir);
    assert.ok(!names.includes('refs/heads/main.lock'));
    assert.ok(names.includes('refs/heads/broken'), 'listed: resolving it is what fails');
  });
});
