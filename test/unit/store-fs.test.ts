/**
 * The filesystem store: the store contract over temporary directories, plus
 * what only the fs store has — several processes sharing one directory, its
 * lock file and its on-disk format.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { UsageError } from '../../src/errors.ts';
import { createStore } from '../../src/store/create-store.ts';
import {
  ArtifactCorruptError,
  ConcurrentUpdateError,
  InvalidStoreKeyError,
  StateCorruptError,
  StoreUnavailableError,
} from '../../src/store/errors.ts';
import { FsStore } from '../../src/store/fs-store.ts';
import type { StoreConfig } from '../../src/store/ports.ts';
import {
  describeStoreContract,
  randomRevision,
  type StoreTestOptions,
  type StoreUnderTest,
} from '../integration/store-contract.ts';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FS_STORE_MODULE = new URL('../../src/store/fs-store.ts', import.meta.url).href;

let root: string;

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'driftless-store-fs-'));
});

after(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A fresh directory under the suite's root. */
async function freshDir(): Promise<string> {
  const dir = join(root, randomBytes(6).toString('hex'));
  await mkdir(dir);
  return dir;
}

/** Every file under `dir`, relative, `/`-separated. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) =>
      join(entry.parentPath, entry.name)
        .slice(dir.length + 1)
        .replaceAll('\\', '/'),
    )
    .sort();
}

async function makeFsStore(options: StoreTestOptions = {}): Promise<StoreUnderTest> {
  const dir = await freshDir();
  const store = new FsStore({ path: dir, ...(options.now ? { now: options.now } : {}) });
  return {
    artifacts: store,
    state: store,
    deliveries: store,
    published: store,
    jobBodies: store,
    async tamperJobBody(digest) {
      await writeFile(join(dir, 'jobs', `${digest}.json`), '{"type":"other"}');
    },
    async tamperArtifact(track, revision) {
      // Flip the last byte of the body, leaving the header (and its digest) alone.
      const path = join(dir, 'artifacts', track, revision);
      const bytes = await readFile(path);
      bytes[bytes.length - 1] = (bytes[bytes.length - 1] ?? 0) ^ 0xff;
      await writeFile(path, bytes);
    },
  };
}

describeStoreContract('fs', makeFsStore);

/** Runs `code` (an ES module) in a new Node process with tsx; resolves with its stdout. */
function runNode(code: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(stdout) : reject(new Error(`child exited ${code}:\n${stderr}`)),
    );
  });
}

/** The pid of a process that has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise((resolve) => child.on('close', resolve));
  assert.ok(child.pid !== undefined);
  return child.pid;
}

describe('fs store', () => {
  it('loses no increment when four processes run read-modify-write loops on one directory', async () => {
    // Prepare
    const dir = await freshDir();
    const worker = `
      import { FsStore } from ${JSON.stringify(FS_STORE_MODULE)};
      const store = new FsStore({ path: ${JSON.stringify(dir)} });
      let conflicts = 0;
      for (let i = 0; i < 10; i++) {
        for (;;) {
          const current = await store.read('counter');
          try {
            await store.write('counter', { count: (current?.value.count ?? 0) + 1 }, current?.version);
            break;
          } catch (error) {
            if (error.code !== 'STATE_CONFLICT') throw error;
            conflicts++;
          }
        }
        await store.appendHistory('counter', {
          revision: 'x', appliedAt: new Date().toISOString(), result: 'applied', trigger: 'manual',
        });
      }
      console.log(conflicts);
    `;

    // Act
    const outputs = await Promise.all(Array.from({ length: 4 }, () => runNode(worker)));

    // Assess
    const store = new FsStore({ path: dir });
    assert.deepEqual((await store.read('counter'))?.value, { count: 40 });
    assert.equal((await store.listHistory('counter')).length, 40);
    console.log(`# conflicts per process: ${outputs.map((o) => o.trim()).join(', ')}`);
  });

  it('breaks a lock left by a process that died', async () => {
    // Prepare
    const dir = await freshDir();
    const store = new FsStore({ path: dir, lock: { timeoutMs: 2_000 } });
    const created = await store.write('webapp', { n: 1 }, undefined);
    const lock = { token: 'dead', pid: await deadPid(), host: hostname(), at: Date.now() };
    await writeFile(join(dir, 'state', 'webapp.json.lock'), JSON.stringify(lock));

    // Act
    const updated = await store.write('webapp', { n: 2 }, created.version);

    // Assess
    assert.deepEqual(await store.read('webapp'), { value: { n: 2 }, version: updated.version });
    assert.deepEqual(await filesUnder(join(dir, 'state')), ['webapp.json']);
  });

  it('breaks a lock older than its lease', async () => {
    // Prepare: a live pid (this one) on another host cannot be checked, only aged.
    const dir = await freshDir();
    const store = new FsStore({ path: dir, lock: { timeoutMs: 2_000, staleMs: 1_000 } });
    const lock = { token: 'old', pid: process.pid, host: 'elsewhere', at: Date.now() - 5_000 };
    await mkdir(join(dir, 'state'));
    await writeFile(join(dir, 'state', 'webapp.json.lock'), JSON.stringify(lock));

    // Act
    const created = await store.write('webapp', { n: 1 }, undefined);

    // Assess
    assert.deepEqual((await store.read('webapp'))?.version, created.version);
  });

  it('waits for a live lock and gives up with StoreUnavailableError', async () => {
    // Prepare
    const dir = await freshDir();
    const store = new FsStore({ path: dir, lock: { timeoutMs: 200 } });
    const lock = { token: 'live', pid: process.pid, host: hostname(), at: Date.now() };
    await mkdir(join(dir, 'state'));
    await writeFile(join(dir, 'state', 'webapp.json.lock'), JSON.stringify(lock));

    // Act
    const attempt = store.write('webapp', { n: 1 }, undefined);

    // Assess
    await assert.rejects(attempt, (error: unknown) => {
      assert.ok(error instanceof StoreUnavailableError);
      assert.equal(error.code, 'STORE_UNAVAILABLE');
      assert.match(error.message, /lock held by process/);
      return true;
    });
    assert.equal(await store.read('webapp'), undefined);
  });

  it('writes the layout under its directory and leaves no temporary or lock files', async () => {
    // Prepare
    const dir = await freshDir();
    const store = new FsStore({ path: dir });
    const revision = randomRevision();

    // Act
    await store.put('webapp', revision, Buffer.from('bundle'));
    await store.put('webapp', revision, Buffer.from('bundle'));
    const created = await store.write('webapp', { applied: revision }, undefined);
    await assert.rejects(store.write('webapp', {}, undefined), ConcurrentUpdateError);
    await store.write('webapp', { applied: revision }, created.version);
    await store.appendHistory('webapp', {
      revision,
      appliedAt: '2026-01-01T00:00:00.000Z',
      result: 'applied',
      trigger: 'webhook',
    });
    await store.markDelivery('delivery-1');
    await store.markDelivery('delivery-1');

    // Assess
    const files = await filesUnder(dir);
    assert.equal(files.length, 4, files.join('\n'));
    assert.equal(files[0], `artifacts/webapp/${revision}`);
    assert.match(files[1] ?? '', /^deliveries\/[0-9a-f]{64}$/);
    assert.match(files[2] ?? '', /^history\/webapp\/\d{13}-\d{9}-[0-9a-f]{16}\.json$/);
    assert.equal(files[3], 'state/webapp.json');
  });

  it('reports an artifact with an unreadable header as corrupt', async () => {
    // Prepare
    const dir = await freshDir();
    const store = new FsStore({ path: dir });
    const revision = randomRevision();
    await store.put('webapp', revision, Buffer.from('bundle'));
    await writeFile(join(dir, 'artifacts', 'webapp', revision), 'not a header\nbundle');

    // Act
    const attempt = store.get('webapp', revision);

    // Assess
    await assert.rejects(attempt, ArtifactCorruptError);
  });

  it('publishes a track list as published/<source>.json, replaced without leftovers', async () => {
    // Prepare
    const dir = await freshDir();
    const store = new FsStore({ path: dir });
    await store.publish('cluster-tracks', { tracks: ['webapp'] });

    // Act
    await store.publish('cluster-tracks', { tracks: ['infra'] });

    // Assess
    assert.deepEqual(await filesUnder(dir), ['published/cluster-tracks.json']);
    assert.deepEqual(
      JSON.parse(await readFile(join(dir, 'published', 'cluster-tracks.json'), 'utf8')),
      {
        tracks: ['infra'],
      },
    );
  });

  it('writes nothing for an invalid source name', async () => {
    // Prepare
    const dir = await freshDir();
    const store = new FsStore({ path: dir });

    // Act
    const outcomes = await Promise.allSettled(
      ['../x', 'a/b', '', '..', '../state/webapp'].map((source) => store.publish(source, {})),
    );

    // Assess
    for (const outcome of outcomes) {
      assert.equal(outcome.status, 'rejected');
      if (outcome.status === 'rejected') {
        assert.ok(outcome.reason instanceof InvalidStoreKeyError);
        assert.match(String(outcome.reason), /invalid track source name/);
      }
    }
    assert.deepEqual(await filesUnder(dir), []);
  });

  it('reports a published document that is not JSON as corrupt, naming its file', async () => {
    // Prepare
    const dir = await freshDir();
    const store = new FsStore({ path: dir });
    await mkdir(join(dir, 'published'));
    const path = join(dir, 'published', 'cluster-tracks.json');
    await writeFile(path, '{"tracks": [');

    // Act
    const attempt = store.readPublished('cluster-tracks');

    // Assess
    await assert.rejects(attempt, (error: unknown) => {
      assert.ok(error instanceof StateCorruptError);
      assert.ok(error.message.includes(path), error.message);
      return true;
    });
  });

  it('creates a working fs store from the config, and refuses an unknown type', async () => {
    // Prepare
    const dir = await freshDir();

    // Act
    const store = createStore({ type: 'fs', path: dir });
    const wrong = () => createStore({ type: 'gcs' } as unknown as StoreConfig);

    // Assess
    assert.equal(await store.deliveries.markDelivery('x'), true);
    assert.deepEqual(await filesUnder(dir).then((files) => files.length), 1);
    await store.published.publish('cluster-tracks', { tracks: [] });
    assert.deepEqual(await store.published.readPublished('cluster-tracks'), { tracks: [] });
    assert.throws(wrong, UsageError);
    store.close();
  });
});
