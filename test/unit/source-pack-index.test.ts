/**
 * The pack indexer behind the Git source's fetches, against packs the git
 * CLI made: its `.idx` must be the one `git index-pack` and isomorphic-git
 * (the library it replaced) write, byte for byte, and a thin pack must be
 * completed with its bases as git does.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs, { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import isogit from 'isomorphic-git';
import { ObjectReader } from '../../src/source/git/object-reader.ts';
import { indexPack, PackIndexError, storePack } from '../../src/source/git/pack-index.ts';

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'driftless-pack-index-'));
  dirs.push(dir);
  return dir;
}

function run(cwd: string, args: string[], input?: string | Buffer): Buffer {
  return execFileSync('git', args, {
    cwd,
    input,
    maxBuffer: 64 * 1024 * 1024,
    env: {
      ...process.env,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@t',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@t',
    },
  });
}

/** A repository of six commits whose files change a little each time, so packs deltify them. */
function repository(): string {
  const work = scratch();
  run(work, ['init', '--quiet', '-b', 'main']);
  for (let commit = 0; commit < 6; commit++) {
    for (let file = 0; file < 5; file++) {
      const lines = Array.from({ length: 200 }, (_, line) => `key${line}: value-${file}-${line}`);
      lines[commit * 10] = `changed: ${commit}`;
      writeFileSync(join(work, `file-${file}.yaml`), lines.join('\n'));
    }
    writeFileSync(join(work, `new-${commit}.txt`), `commit ${commit}\n`);
    run(work, ['add', '.']);
    run(work, ['commit', '--quiet', '-m', `c${commit}`]);
  }
  run(work, ['repack', '-adf', '--quiet', '--depth=50', '--window=50']);
  return work;
}

/** `git pack-objects` of the revisions on stdin (`HEAD`, `^HEAD~1`...), with `options`. */
function packObjects(work: string, revisions: string[], options: string[]): Buffer {
  return run(
    work,
    ['pack-objects', '--stdout', '--revs', '--quiet', ...options],
    revisions.join('\n') + '\n',
  );
}

/** The index `git index-pack` writes for `pack` (not thin). */
function gitIndex(pack: Buffer): Buffer {
  const dir = scratch();
  writeFileSync(join(dir, 'test.pack'), pack);
  run(dir, ['index-pack', '-o', join(dir, 'test.idx'), join(dir, 'test.pack')]);
  return readFileSync(join(dir, 'test.idx'));
}

/** The index isomorphic-git's indexPack writes for `pack` (not thin). */
async function isogitIndex(pack: Buffer): Promise<Buffer> {
  const dir = scratch();
  writeFileSync(join(dir, 'test.pack'), pack);
  await isogit.indexPack({ fs, dir, gitdir: join(dir, '.git'), filepath: 'test.pack' });
  return readFileSync(join(dir, 'test.idx'));
}

/** `git show-index` of an index: `offset oid (crc)` per object. */
function showIndex(idx: Buffer): string[] {
  return run(tmpdir(), ['show-index'], idx).toString('latin1').trim().split('\n');
}

const noExternal = async (): Promise<undefined> => undefined;

describe('indexPack', () => {
  it('writes the index git index-pack writes, for ofs-deltas and for ref-deltas', async () => {
    // Prepare
    const work = repository();
    const withOffsets = packObjects(work, ['HEAD'], ['--delta-base-offset']);
    const withRefs = packObjects(work, ['HEAD'], []);
    const deltas = run(work, ['verify-pack', '-v', ...packIndexes(join(work, '.git'))]);
    assert.match(
      deltas.toString(),
      /^[0-9a-f]{40} blob .* [0-9a-f]{40}$/m,
      'packs should hold deltas',
    );

    // Act
    const ofs = await indexPack(withOffsets, noExternal);
    const ref = await indexPack(withRefs, noExternal);

    // Assess
    assert.ok(ofs.idx.equals(gitIndex(withOffsets)), 'ofs-delta pack index differs from git');
    assert.ok(ref.idx.equals(gitIndex(withRefs)), 'ref-delta pack index differs from git');
    assert.ok(ofs.idx.equals(await isogitIndex(withOffsets)), 'differs from isomorphic-git');
    assert.ok(ref.idx.equals(await isogitIndex(withRefs)), 'differs from isomorphic-git');
    assert.equal(ofs.objects, withOffsets.readUInt32BE(8));
    assert.equal(ofs.checksum, withOffsets.subarray(-20).toString('hex'));
  });

  it('completes a thin pack with its bases from the repository, as git index-pack --fix-thin', async () => {
    // Prepare
    const work = repository();
    const gitdir = join(work, '.git');
    const thin = packObjects(work, ['HEAD', '^HEAD~1'], ['--thin', '--delta-base-offset']);
    // git's own index of the same pack made whole (then removed from the repository again).
    const packDir = join(gitdir, 'objects', 'pack');
    const output = run(work, ['index-pack', '--stdin', '--fix-thin'], thin).toString();
    const fixed = `pack-${output.trim().split(/\s/).pop()}`;
    const fixedIdx = readFileSync(join(packDir, `${fixed}.idx`));
    for (const name of readdirSync(packDir)) {
      if (name.startsWith(`${fixed}.`)) rmSync(join(packDir, name));
    }

    // Act
    const result = await indexPack(thin, new ObjectReader(gitdir).read);

    // Assess
    assert.ok(result.appended > 0, 'the pack should be thin');
    assert.equal(result.pack.readUInt32BE(8), result.objects);
    // The completed pack is a pack git reads, and its index the one git writes for it.
    assert.ok(result.idx.equals(gitIndex(result.pack)), 'index differs from git index-pack');
    // The same objects as git's completion, the received ones at the same offsets with the same CRCs.
    const ours = showIndex(result.idx);
    const whole = showIndex(fixedIdx);
    const received = (lines: string[]): string[] =>
      lines.filter((line) => Number(line.split(' ')[0]) < thin.length - 20);
    const oids = (lines: string[]): string[] => lines.map((line) => line.split(' ')[1]!);
    assert.deepEqual(received(ours), received(whole));
    assert.deepEqual(oids(ours), oids(whole));
  });

  it('refuses a pack whose checksum does not match, and a thin pack without its bases', async () => {
    // Prepare
    const work = repository();
    const pack = packObjects(work, ['HEAD'], ['--delta-base-offset']);
    const badTrailer = Buffer.from(pack);
    badTrailer[badTrailer.length - 1]! ^= 0xff;
    const badBody = Buffer.from(pack);
    badBody[100]! ^= 0xff;
    const thin = packObjects(work, ['HEAD', '^HEAD~1'], ['--thin']);

    // Act (run by assert.rejects one after the other: no rejection waits unhandled)
    const trailer = (): Promise<unknown> => indexPack(badTrailer, noExternal);
    const body = (): Promise<unknown> => indexPack(badBody, noExternal);
    const orphans = (): Promise<unknown> => indexPack(thin, noExternal);

    // Assess
    await assert.rejects(trailer, PackIndexError);
    await assert.rejects(body, /checksum mismatch/);
    await assert.rejects(orphans, /thin pack: delta base [0-9a-f]{40} is in no pack here/);
  });
});

describe('storePack', () => {
  it('stores the pack and its index under the pack checksum, leaving no temporary files', async () => {
    // Prepare
    const work = repository();
    const pack = packObjects(work, ['HEAD'], ['--delta-base-offset']);
    const gitdir = scratch();

    // Act
    const name = await storePack(gitdir, pack, noExternal);
    const again = await storePack(gitdir, pack, noExternal);

    // Assess
    const checksum = pack.subarray(-20).toString('hex');
    assert.equal(name, `pack-${checksum}.pack`);
    assert.equal(again, name);
    assert.deepEqual(readdirSync(join(gitdir, 'objects', 'pack')).sort(), [
      `pack-${checksum}.idx`,
      `pack-${checksum}.pack`,
    ]);
    assert.ok(readFileSync(join(gitdir, 'objects', 'pack', name)).equals(pack));
  });
});

function packIndexes(gitdir: string): string[] {
  const dir = join(gitdir, 'objects', 'pack');
  return readdirSync(dir)
    .filter((name) => name.endsWith('.idx'))
    .map((name) => join(dir, name));
}
