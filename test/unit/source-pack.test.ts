/**
 * The Git source's one object reader and its pack reader, against
 * repositories the git CLI made (packs with deltas, a version 1 index, loose
 * objects, a corrupted pack or object), with git and isomorphic-git as the
 * oracles of what each object reads as.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs, {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import isogit from 'isomorphic-git';
import { ObjectReader, parseTree } from '../../src/source/git/object-reader.ts';
import { applyDelta, PackReader, PackReadError } from '../../src/source/git/pack-reader.ts';

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function git(cwd: string, args: string[], input?: string): string {
  return execFileSync('git', args, {
    cwd,
    input,
    encoding: 'utf8',
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@t',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@t',
    },
  });
}

/** A repository whose files change a little per commit, so a repack deltifies them. */
function repository(): { work: string; gitdir: string } {
  const work = mkdtempSync(join(tmpdir(), 'driftless-pack-'));
  dirs.push(work);
  git(work, ['init', '--quiet', '-b', 'main']);
  for (let commit = 0; commit < 6; commit++) {
    for (let file = 0; file < 5; file++) {
      const lines = Array.from({ length: 200 }, (_, line) => `key${line}: value-${file}-${line}`);
      lines[commit * 10] = `changed: ${commit}`;
      writeFileSync(join(work, `file-${file}.yaml`), lines.join('\n'));
    }
    git(work, ['add', '.']);
    git(work, ['commit', '--quiet', '-m', `c${commit}`]);
  }
  git(work, ['repack', '-adf', '--quiet', '--depth=50', '--window=50']);
  return { work, gitdir: join(work, '.git') };
}

/** Every object of the repository: oid and type. */
function objects(work: string): { oid: string; type: string }[] {
  const oids = git(work, ['rev-list', '--objects', '--all'])
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split(' ')[0]!);
  const types = git(work, ['cat-file', '--batch-check=%(objecttype)'], oids.join('\n') + '\n')
    .trim()
    .split('\n');
  return oids.map((oid, i) => ({ oid, type: types[i]! }));
}

function content(work: string, oid: string): Buffer {
  return execFileSync('git', ['cat-file', '-p', oid], { cwd: work });
}

const noExternal = async (): Promise<undefined> => undefined;

describe('PackReader', () => {
  it('reads every object of a deltified pack as git does', async () => {
    // Prepare
    const { work, gitdir } = repository();
    const all = objects(work);
    const deltas = git(work, ['verify-pack', '-v', ...packIndexes(gitdir)]);
    assert.match(deltas, /^[0-9a-f]{40} blob .* [0-9a-f]{40}$/m, 'the pack should hold deltas');

    // Act
    const reader = await PackReader.open(gitdir);
    const read = await Promise.all(all.map(({ oid }) => reader.read(oid, noExternal)));

    // Assess
    for (const [i, { oid, type }] of all.entries()) {
      assert.equal(read[i]?.type, type, oid);
      if (type === 'blob') assert.deepEqual(Buffer.from(read[i]!.object), content(work, oid));
    }
  });

  it('leaves loose objects and unknown oids to the caller', async () => {
    // Prepare
    const { work, gitdir } = repository();
    const loose = git(work, ['hash-object', '-w', '--stdin'], 'loose: true\n').trim();

    // Act
    const reader = await PackReader.open(gitdir);

    // Assess
    assert.equal(await reader.read(loose, noExternal), undefined);
    assert.equal(await reader.read('0'.repeat(40), noExternal), undefined);
  });

  it('reads a pack with a version 1 index as one with a version 2 index', async () => {
    // Prepare
    const { work, gitdir } = repository();
    const all = objects(work);
    const idx = packIndexes(gitdir)[0]!;
    rmSync(idx);
    git(work, ['index-pack', '--index-version=1', '-o', idx, idx.replace(/idx$/, 'pack')]);
    assert.notEqual(
      readFileSync(idx).readUInt32BE(0),
      0xff744f63,
      'a version 1 index has no magic',
    );

    // Act
    const reader = await PackReader.open(gitdir);
    const read = await Promise.all(all.map(({ oid }) => reader.read(oid, noExternal)));

    // Assess
    for (const [i, { oid, type }] of all.entries()) {
      assert.equal(read[i]?.type, type, oid);
      if (type === 'blob') assert.deepEqual(Buffer.from(read[i]!.object), content(work, oid));
    }
  });

  it('refuses a pack whose checksum does not match its index, naming the pack', async () => {
    // Prepare
    const { work, gitdir } = repository();
    const blob = objects(work).find(({ type }) => type === 'blob')!.oid;
    const pack = join(gitdir, 'objects', 'pack', packFiles(gitdir, '.pack')[0]!);
    const bytes = readFileSync(pack);
    bytes[100] = bytes[100]! ^ 0xff;
    writeFileSync(pack, bytes);

    // Act
    const reader = await PackReader.open(gitdir);

    // Assess
    await assert.rejects(reader.read(blob, noExternal), (error: unknown) => {
      assert.ok(error instanceof PackReadError);
      assert.match(error.message, /^pack pack-[0-9a-f]{40}\.pack: its checksum does not match/);
      return true;
    });
  });

  it('refuses a malformed index', async () => {
    // Prepare
    const { gitdir } = repository();
    writeFileSync(packIndexes(gitdir)[0]!, Buffer.from('\xfftOc\0\0\0\x02short', 'latin1'));

    // Act, Assess
    await assert.rejects(PackReader.open(gitdir), /pack index pack-[0-9a-f]{40}\.idx is malformed/);
  });
});

describe('applyDelta', () => {
  const base = Buffer.from('hello, world');

  it('copies from the base and inserts literal bytes', () => {
    // base size 12, result size 9: copy 5 bytes at offset 0, insert "!!!!"
    const delta = Buffer.from([12, 9, 0x90, 5, 4, ...Buffer.from('!!!!')]);
    assert.equal(applyDelta(delta, base)?.toString(), 'hello!!!!');
  });

  it('refuses a delta made for another base, a reserved opcode, or a short result', () => {
    assert.equal(applyDelta(Buffer.from([11, 1, 1, 0x41]), base), undefined);
    assert.equal(applyDelta(Buffer.from([12, 1, 0]), base), undefined);
    assert.equal(applyDelta(Buffer.from([12, 2, 1, 0x41]), base), undefined);
    assert.equal(applyDelta(Buffer.from([12, 1, 0x90 | 0x01, 11, 5]), base), undefined);
  });
});

describe('ObjectReader', () => {
  it('reads packed and loose blobs, and fails on a corrupt pack as isomorphic-git does', async () => {
    // Prepare
    const { work, gitdir } = repository();
    const loose = git(work, ['hash-object', '-w', '--stdin'], 'loose: true\n').trim();
    const packed = objects(work).find(({ type }) => type === 'blob')!.oid;

    // Act
    const reader = new ObjectReader(gitdir);

    // Assess
    assert.equal(Buffer.from(await reader.readBlob(loose)).toString(), 'loose: true\n');
    assert.deepEqual(Buffer.from(await reader.readBlob(packed)), content(work, packed));
    const pack = join(gitdir, 'objects', 'pack', packFiles(gitdir, '.pack')[0]!);
    const bytes = readFileSync(pack);
    bytes[100] = bytes[100]! ^ 0xff;
    writeFileSync(pack, bytes);
    await assert.rejects(new ObjectReader(gitdir).readBlob(packed));
    await assert.rejects(isogit.readBlob({ fs, gitdir, oid: packed }));
  });

  it('reads every loose object as isomorphic-git does', async () => {
    // Prepare: a repository never packed, as a local repository often is.
    const work = mkdtempSync(join(tmpdir(), 'driftless-loose-'));
    dirs.push(work);
    git(work, ['init', '--quiet', '-b', 'main']);
    mkdirSync(join(work, 'sub'));
    writeFileSync(join(work, 'sub', 'a.yaml'), 'a: 1\n');
    writeFileSync(join(work, 'b.json'), '{}');
    // Objects that take more than one of the reader's output chunks: one that compresses
    // ~1000:1 and one of ~100 KB that compresses ~2:1.
    writeFileSync(join(work, 'repeated.yaml'), `data: ${'x'.repeat(200_000)}\n`);
    const mixed = Array.from(
      { length: 6_000 },
      (_, i) => `k${i}: ${(i * 2654435761) % 4294967296}`,
    );
    writeFileSync(join(work, 'large.yaml'), `${mixed.join('\n')}\n`);
    git(work, ['add', '.']);
    git(work, ['commit', '--quiet', '-m', 'c']);
    git(work, ['tag', '-a', '-m', 'annotated', 'v1']);
    const gitdir = join(work, '.git');
    assert.deepEqual(packFiles(gitdir, '.pack'), [], 'every object should be loose');
    const all = objects(work);

    // Act
    const reader = new ObjectReader(gitdir);
    const read = await Promise.all(all.map(({ oid }) => reader.read(oid)));

    // Assess
    for (const [i, { oid, type }] of all.entries()) {
      const oracle = await isogit.readObject({ fs, gitdir, oid, format: 'content' });
      assert.equal(read[i]?.type, oracle.type, oid);
      assert.equal(read[i]?.type, type, oid);
      assert.deepEqual(Buffer.from(read[i]!.object), Buffer.from(oracle.object as Uint8Array), oid);
    }
    assert.equal(await reader.read('0'.repeat(40)), undefined);
  });

  it('refuses a loose object whose content does not match its oid, naming it', async () => {
    // Prepare: the object file of one blob holding another blob.
    const { work, gitdir } = repository();
    const one = git(work, ['hash-object', '-w', '--stdin'], 'one\n').trim();
    const two = git(work, ['hash-object', '-w', '--stdin'], 'two\n').trim();
    const path = (oid: string): string => join(gitdir, 'objects', oid.slice(0, 2), oid.slice(2));
    rmSync(path(one), { force: true });
    writeFileSync(path(one), readFileSync(path(two)));

    // Act, Assess
    await assert.rejects(
      new ObjectReader(gitdir).readBlob(one),
      new RegExp(`loose git object ${one} is corrupt`),
    );
  });

  it('names a missing object and one of the wrong type', async () => {
    // Prepare
    const { work, gitdir } = repository();
    const tree = git(work, ['rev-parse', 'HEAD^{tree}']).trim();

    // Act
    const reader = new ObjectReader(gitdir);

    // Assess
    await assert.rejects(reader.readBlob('0'.repeat(40)), /git object 0{40} not found/);
    await assert.rejects(reader.readBlob(tree), new RegExp(`${tree} is a tree, not a blob`));
  });
});

describe('ObjectReader trees and commits', () => {
  /** A repository with a subdirectory, an executable, a symlink, a submodule and tags. */
  function varied(): { work: string; gitdir: string } {
    const work = mkdtempSync(join(tmpdir(), 'driftless-objects-'));
    dirs.push(work);
    git(work, ['init', '--quiet', '-b', 'main']);
    mkdirSync(join(work, 'sub'));
    writeFileSync(join(work, 'sub', 'a.yaml'), 'a: 1\n');
    writeFileSync(join(work, 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
    symlinkSync('sub/a.yaml', join(work, 'link.yaml'));
    git(work, ['add', '.']);
    git(work, ['update-index', '--add', '--cacheinfo', `160000,${'1'.repeat(40)},module`]);
    git(work, ['commit', '--quiet', '-m', 'c']);
    git(work, ['tag', '-a', '-m', 'one', 'v1']);
    git(work, ['tag', '-a', '-m', 'two', 'v1-again', 'v1']);
    git(work, ['repack', '-adq']);
    return { work, gitdir: join(work, '.git') };
  }

  it('parses trees from packs as isomorphic-git does', async () => {
    // Prepare
    const { work, gitdir } = varied();
    const trees = objects(work).filter(({ type }) => type === 'tree');

    // Act
    const reader = new ObjectReader(gitdir);
    const ours = await Promise.all(trees.map(({ oid }) => reader.readTree(oid)));

    // Assess
    for (const [i, { oid }] of trees.entries()) {
      const { tree } = await isogit.readTree({ fs, gitdir, oid });
      const byPath = (a: { path: string }, b: { path: string }): number =>
        a.path < b.path ? -1 : 1;
      assert.deepEqual([...ours[i]!].sort(byPath), [...tree].sort(byPath), oid);
    }
    const root = ours.find((entries) => entries.some((e) => e.path === 'module'))!;
    assert.deepEqual(root.map(({ path, mode, type }) => `${path} ${mode} ${type}`).sort(), [
      'link.yaml 120000 blob',
      'module 160000 commit',
      'run.sh 100755 blob',
      'sub 040000 tree',
    ]);
  });

  it('refuses a malformed tree, naming it', () => {
    assert.throws(
      () => parseTree(Buffer.from('100644 name-without-oid'), 'f'.repeat(40)),
      /malformed git tree object f{40}$/,
    );
    assert.throws(
      () => parseTree(Buffer.concat([Buffer.from('777 x\0'), Buffer.alloc(20)]), 'e'.repeat(40)),
      /malformed git tree object e{40}: unknown mode 777/,
    );
  });

  it('peels commits and annotated tags, and says what is missing or no commit', async () => {
    // Prepare
    const { work, gitdir } = varied();
    const commit = git(work, ['rev-parse', 'HEAD']).trim();
    const tree = git(work, ['rev-parse', 'HEAD^{tree}']).trim();
    const tagOfTag = git(work, ['rev-parse', 'v1-again']).trim();
    const blob = git(work, ['rev-parse', 'HEAD:sub/a.yaml']).trim();
    const loose = git(work, ['hash-object', '-w', '--stdin'], 'loose\n').trim();

    // Act
    const reader = new ObjectReader(gitdir);

    // Assess
    assert.deepEqual(await reader.peel(commit), { kind: 'commit', oid: commit, tree });
    assert.deepEqual(await reader.peel(tagOfTag), { kind: 'commit', oid: commit, tree });
    assert.deepEqual(await reader.peel(blob), { kind: 'other', type: 'blob' });
    assert.deepEqual(await reader.peel(loose), { kind: 'other', type: 'blob' });
    assert.deepEqual(await reader.peel('0'.repeat(40)), { kind: 'missing' });
  });

  it('reads a pack stored after its first read once refreshed', async () => {
    // Prepare
    const { work, gitdir } = varied();
    const reader = new ObjectReader(gitdir);
    assert.deepEqual(await reader.peel('0'.repeat(40)), { kind: 'missing' });
    writeFileSync(join(work, 'new.yaml'), 'new: true\n');
    git(work, ['add', '.']);
    git(work, ['commit', '--quiet', '-m', 'next']);
    git(work, ['repack', '-dq']); // a second pack with the new objects
    const next = git(work, ['rev-parse', 'HEAD']).trim();
    const blob = git(work, ['rev-parse', 'HEAD:new.yaml']).trim();

    // Act
    await reader.refresh();

    // Assess
    assert.equal((await reader.peel(next)).kind, 'commit');
    assert.equal(Buffer.from(await reader.readBlob(blob)).toString(), 'new: true\n');
  });
});

function packFiles(gitdir: string, suffix: string): string[] {
  return readdirSync(join(gitdir, 'objects', 'pack')).filter((name) => name.endsWith(suffix));
}

function packIndexes(gitdir: string): string[] {
  return packFiles(gitdir, '.idx').map((name) => join(gitdir, 'objects', 'pack', name));
}
