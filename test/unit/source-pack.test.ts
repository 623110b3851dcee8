/**
 * The pack reader behind the Git source's blob reads, against repositories
 * the git CLI made (packs with deltas, loose objects, a corrupted pack).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { objectReader } from '../../src/source/git-objects.ts';
import { applyDelta, PackReader } from '../../src/source/pack-reader.ts';

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

  it('gives nothing from a pack whose checksum does not match its index', async () => {
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
    assert.equal(await reader.read(blob, noExternal), undefined);
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

describe('objectReader', () => {
  it('reads packed and loose blobs, and fails on a corrupt pack as isomorphic-git does', async () => {
    // Prepare
    const { work, gitdir } = repository();
    const loose = git(work, ['hash-object', '-w', '--stdin'], 'loose: true\n').trim();
    const packed = objects(work).find(({ type }) => type === 'blob')!.oid;

    // Act
    const reader = objectReader({ gitdir, cache: {} });

    // Assess
    assert.equal(Buffer.from(await reader.readBlob(loose)).toString(), 'loose: true\n');
    assert.deepEqual(Buffer.from(await reader.readBlob(packed)), content(work, packed));
    const pack = join(gitdir, 'objects', 'pack', packFiles(gitdir, '.pack')[0]!);
    const bytes = readFileSync(pack);
    bytes[100] = bytes[100]! ^ 0xff;
    writeFileSync(pack, bytes);
    await assert.rejects(objectReader({ gitdir, cache: {} }).readBlob(packed));
  });
});

function packFiles(gitdir: string, suffix: string): string[] {
  return readdirSync(join(gitdir, 'objects', 'pack')).filter((name) => name.endsWith(suffix));
}

function packIndexes(gitdir: string): string[] {
  return packFiles(gitdir, '.idx').map((name) => join(gitdir, 'objects', 'pack', name));
}
