/**
 * The per-track memo of the blobs a tree read: the next read takes the
 * unchanged blobs from it, and a damaged memo is not used.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { BlobMemo } from '../../src/source/git/blob-memo.ts';
import type { TreeReader } from '../../src/source/git/read-tree-files.ts';

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function oidOf(text: string): string {
  return createHash('sha1')
    .update(`blob ${Buffer.byteLength(text)}\0${text}`)
    .digest('hex');
}

/** An object reader over `blobs` that counts its blob reads. */
function readerOf(blobs: readonly string[]): TreeReader & { reads: string[] } {
  const byOid = new Map(blobs.map((text) => [oidOf(text), Buffer.from(text)]));
  const reads: string[] = [];
  return {
    reads,
    readTree: async () => [],
    readBlob: async (oid) => {
      reads.push(oid);
      const blob = byOid.get(oid);
      if (!blob) throw new Error(`no blob ${oid}`);
      return blob;
    },
  };
}

function memoPath(): string {
  const dir = mkdtempSync(join(tmpdir(), 'driftless-memo-'));
  dirs.push(dir);
  return join(dir, 'memo', 'track');
}

async function readAll(memo: BlobMemo, reader: TreeReader, texts: string[]): Promise<string[]> {
  const through = memo.over(reader);
  return Promise.all(
    texts.map(async (text) => Buffer.from(await through.readBlob(oidOf(text))).toString()),
  );
}

describe('BlobMemo', () => {
  it('gives the blobs of the last read, and reads only the changed ones', async () => {
    // Prepare
    const path = memoPath();
    const first = ['a: 1\n', 'b: 2\n', 'c: 3\n'];
    const second = ['a: 1\n', 'b: 20\n', 'c: 3\n'];
    const memo = await BlobMemo.load(path);
    await readAll(memo, readerOf(first), first);
    await memo.save();

    // Act
    const reader = readerOf(second);
    const read = await readAll(await BlobMemo.load(path), reader, second);

    // Assess
    assert.deepEqual(read, second);
    assert.deepEqual(reader.reads, [oidOf('b: 20\n')]);
  });

  it('is not used when its content does not match its checksum', async () => {
    // Prepare
    const path = memoPath();
    const memo = await BlobMemo.load(path);
    await readAll(memo, readerOf(['a: 1\n']), ['a: 1\n']);
    await memo.save();
    const bytes = readFileSync(path);
    bytes[bytes.length - 32 - 2] = 'X'.charCodeAt(0); // 'a: 1\n' -> 'a: X\n', before the checksum
    writeFileSync(path, bytes);

    // Act
    const reader = readerOf(['a: 1\n']);
    const read = await readAll(await BlobMemo.load(path), reader, ['a: 1\n']);

    // Assess
    assert.deepEqual(read, ['a: 1\n']);
    assert.deepEqual(reader.reads, [oidOf('a: 1\n')]);
  });

  it('ignores a truncated or foreign file', async () => {
    // Prepare
    const path = memoPath();
    const memo = await BlobMemo.load(path);
    await readAll(memo, readerOf(['a: 1\n', 'b: 2\n']), ['a: 1\n', 'b: 2\n']);
    await memo.save();
    writeFileSync(path, readFileSync(path).subarray(0, -3));
    const foreign = `${path}-foreign`;
    writeFileSync(foreign, 'not a memo');

    // Act
    const truncatedReader = readerOf(['a: 1\n', 'b: 2\n']);
    await readAll(await BlobMemo.load(path), truncatedReader, ['a: 1\n', 'b: 2\n']);
    const foreignReader = readerOf(['a: 1\n']);
    await readAll(await BlobMemo.load(foreign), foreignReader, ['a: 1\n']);

    // Assess
    assert.equal(truncatedReader.reads.length, 2);
    assert.equal(foreignReader.reads.length, 1);
  });

  it('is written anew when a read repeats a remembered blob and adds a new one', async () => {
    // Prepare: a memo of a and b; the next tree holds a twice (two paths, one blob) and c.
    const path = memoPath();
    const first = await BlobMemo.load(path);
    await readAll(first, readerOf(['a: 1\n', 'b: 2\n']), ['a: 1\n', 'b: 2\n']);
    await first.save();
    const next = await BlobMemo.load(path);
    await readAll(next, readerOf(['c: 3\n']), ['a: 1\n', 'a: 1\n', 'c: 3\n']);

    // Act
    await next.save();

    // Assess
    const reader = readerOf([]);
    const read = await readAll(await BlobMemo.load(path), reader, ['a: 1\n', 'c: 3\n']);
    assert.deepEqual(read, ['a: 1\n', 'c: 3\n']);
    assert.deepEqual(reader.reads, [], 'both came from the memo');
  });

  it('keeps only the blobs of the last read, and leaves an unchanged memo alone', async () => {
    // Prepare
    const path = memoPath();
    const first = await BlobMemo.load(path);
    await readAll(first, readerOf(['a: 1\n', 'b: 2\n']), ['a: 1\n', 'b: 2\n']);
    await first.save();
    const smaller = await BlobMemo.load(path);
    await readAll(smaller, readerOf(['a: 1\n']), ['a: 1\n']);
    await smaller.save();
    const written = statSync(path).mtimeMs;

    // Act
    const again = await BlobMemo.load(path);
    await readAll(again, readerOf([]), ['a: 1\n']);
    await again.save();
    const reader = readerOf(['b: 2\n']);
    await readAll(await BlobMemo.load(path), reader, ['b: 2\n']);

    // Assess
    assert.equal(statSync(path).mtimeMs, written);
    assert.deepEqual(reader.reads, [oidOf('b: 2\n')], 'b left the memo with the smaller read');
  });
});
