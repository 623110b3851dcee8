/**
 * The contract every store adapter passes: `describeStoreContract` defines
 * the tests, and each adapter's test file runs them against a real backend
 * (`test/unit/store-fs.test.ts`: a temporary directory;
 * `test/integration/store-s3.test.ts`: a real MinIO).
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ArtifactConflictError,
  ArtifactCorruptError,
  ArtifactNotFoundError,
  ConcurrentUpdateError,
  InvalidStoreKeyError,
  JobBodyNotFoundError,
} from '../../src/store/errors.ts';
import type {
  ArtifactStore,
  DeliveryLog,
  HistoryEntry,
  JobBodyStore,
  PublishedTrackStore,
  StateStore,
} from '../../src/store/ports.ts';

/** A fresh, empty store over the adapter's backend, with back doors for the tests. */
export interface StoreUnderTest {
  readonly artifacts: ArtifactStore;
  readonly state: StateStore;
  readonly deliveries: DeliveryLog;
  /**
   * The published track lists. Optional while adapters' test files catch up:
   * when absent, `state` is used if the same object implements both.
   */
  readonly published: PublishedTrackStore;
  readonly jobBodies: JobBodyStore;
  /**
   * Changes the stored bytes of an artifact directly in the backend (not
   * through the store), keeping the digest recorded with it.
   */
  tamperArtifact(track: string, revision: string): Promise<void>;
  /** Rewrites a stored job body directly in the backend, under the same name. */
  tamperJobBody(digest: string): Promise<void>;
}

/** What a contract test may ask of the adapter under test. */
export interface StoreTestOptions {
  /** Objects per listing request, where the backend pages (S3); ignored otherwise. */
  readonly pageSize?: number;
  /** Time source of the store. */
  readonly now?: () => Date;
}

/** Builds a fresh, empty store for one test. */
export type MakeStore = (options?: StoreTestOptions) => Promise<StoreUnderTest>;

/** A random full commit sha. */
export function randomRevision(): string {
  return randomBytes(20).toString('hex');
}

/** `sha256:<hex>` computed independently of the store. */
function sha256(bytes: Uint8Array): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

/** A clock that advances one second per call, from a fixed start. */
function steppingClock(start = Date.UTC(2026, 0, 1)): () => Date {
  let tick = 0;
  return () => new Date(start + 1000 * tick++);
}

/**
 * Waits into the next whole second: S3 records an object's LastModified in whole seconds, so
 * only artifacts stored in different seconds have an order there.
 */
async function untilNextSecond(): Promise<void> {
  await sleep(1000 - (Date.now() % 1000) + 5);
}

/** Newest `storedAt` first, then by revision: the order listings promise, computed here. */
function inListingOrder<T extends { revision: string; storedAt: string }>(
  items: readonly T[],
): T[] {
  return [...items].sort(
    (a, b) =>
      Date.parse(b.storedAt) - Date.parse(a.storedAt) || a.revision.localeCompare(b.revision),
  );
}

function entry(appliedAt: Date, fields: Partial<HistoryEntry> = {}): HistoryEntry {
  return {
    revision: randomRevision(),
    appliedAt: appliedAt.toISOString(),
    result: 'applied',
    trigger: 'webhook',
    ...fields,
  };
}

/** Asserts every outcome is a rejection with InvalidStoreKeyError; `labels` name the calls. */
function assertAllRefused(
  outcomes: PromiseSettledResult<unknown>[],
  labels: readonly unknown[],
): void {
  for (const [index, outcome] of outcomes.entries()) {
    const label = typeof labels[index] === 'string' ? labels[index] : JSON.stringify(labels[index]);
    assert.equal(outcome.status, 'rejected', `${label} was accepted`);
    if (outcome.status === 'rejected') {
      assert.ok(
        outcome.reason instanceof InvalidStoreKeyError,
        `${label} failed with ${String(outcome.reason)}, not InvalidStoreKeyError`,
      );
    }
  }
}

/** Names that must never become (part of) a key. */
const HOSTILE_TRACKS = [
  '../x',
  '..',
  '.',
  'a/b',
  '/abs',
  'a\\b',
  '',
  ' web',
  'web\n',
  'a\0b',
  '%2e%2e',
  '.hidden',
  'x'.repeat(64),
];

const HOSTILE_REVISIONS = [
  '../../state/web.json',
  'HEAD',
  'main',
  'A'.repeat(40),
  '0'.repeat(39),
  `${'0'.repeat(40)}/x`,
  '',
];

/**
 * Defines the store contract tests under `describe(name)`. `makeStore` is
 * called once per test and must return an empty store.
 */
export function describeStoreContract(name: string, makeStore: MakeStore): void {
  describe(`${name}: store contract`, () => {
    describe('artifacts', () => {
      it('stores an artifact and reads back the same bytes with their sha256 digest', async () => {
        // Prepare
        const store = await makeStore();
        const revision = randomRevision();
        const bytes = randomBytes(64 * 1024);

        // Act
        const put = await store.artifacts.put('webapp', revision, bytes);
        const read = await store.artifacts.get('webapp', revision);

        // Assess
        assert.deepEqual(put, { digest: sha256(bytes), created: true });
        assert.ok(Buffer.from(read).equals(bytes));
        assert.equal(await store.artifacts.has('webapp', revision), true);
        const listed = await store.artifacts.list('webapp');
        assert.deepEqual(
          listed.map(({ revision: r, digest }) => ({ revision: r, digest })),
          [{ revision, digest: sha256(bytes) }],
        );
        assert.ok(!Number.isNaN(Date.parse(listed[0]?.storedAt ?? '')), 'storedAt is a time');
      });

      it('stores an empty artifact', async () => {
        // Prepare
        const store = await makeStore();
        const revision = randomRevision();

        // Act
        await store.artifacts.put('webapp', revision, new Uint8Array());

        // Assess
        assert.equal((await store.artifacts.get('webapp', revision)).byteLength, 0);
      });

      it('treats putting the same bytes again as a no-op', async () => {
        // Prepare
        const store = await makeStore();
        const revision = randomRevision();
        const bytes = Buffer.from('{"objects":[]}');
        await store.artifacts.put('webapp', revision, bytes);

        // Act
        const again = await store.artifacts.put('webapp', revision, Buffer.from(bytes));

        // Assess
        assert.deepEqual(again, { digest: sha256(bytes), created: false });
      });

      it('refuses different bytes for a stored revision and keeps the stored artifact', async () => {
        // Prepare
        const store = await makeStore();
        const revision = randomRevision();
        const original = Buffer.from('original');
        await store.artifacts.put('webapp', revision, original);

        // Act
        const attempt = store.artifacts.put('webapp', revision, Buffer.from('replacement'));

        // Assess
        await assert.rejects(attempt, (error: unknown) => {
          assert.ok(error instanceof ArtifactConflictError);
          assert.equal(error.code, 'ARTIFACT_CONFLICT');
          assert.equal(error.storedDigest, sha256(original));
          return true;
        });
        assert.ok(Buffer.from(await store.artifacts.get('webapp', revision)).equals(original));
      });

      it('creates an artifact exactly once when ten writers put it at the same time', async () => {
        // Prepare
        const store = await makeStore();
        const revision = randomRevision();
        const bytes = randomBytes(4096);

        // Act
        const results = await Promise.all(
          Array.from({ length: 10 }, () => store.artifacts.put('webapp', revision, bytes)),
        );

        // Assess
        assert.equal(results.filter((result) => result.created).length, 1);
        assert.ok(results.every((result) => result.digest === sha256(bytes)));
      });

      it('keeps artifacts of different tracks apart', async () => {
        // Prepare
        const store = await makeStore();
        const revision = randomRevision();
        await store.artifacts.put('webapp', revision, Buffer.from('webapp'));

        // Act
        await store.artifacts.put('infra', revision, Buffer.from('infra'));

        // Assess
        assert.equal(
          Buffer.from(await store.artifacts.get('webapp', revision)).toString(),
          'webapp',
        );
        assert.equal(Buffer.from(await store.artifacts.get('infra', revision)).toString(), 'infra');
      });

      it('reports a missing artifact as ArtifactNotFoundError', async () => {
        // Prepare
        const store = await makeStore();
        const revision = randomRevision();
        await store.artifacts.put('webapp', randomRevision(), Buffer.from('other'));

        // Act
        const attempt = store.artifacts.get('webapp', revision);

        // Assess
        await assert.rejects(attempt, (error: unknown) => {
          assert.ok(error instanceof ArtifactNotFoundError);
          assert.equal(error.code, 'ARTIFACT_NOT_FOUND');
          assert.equal(error.revision, revision);
          assert.match(error.message, /^webapp@[0-9a-f]{40}: /);
          return true;
        });
        assert.equal(await store.artifacts.has('webapp', revision), false);
        assert.deepEqual(await store.artifacts.list('unknown-track'), []);
        assert.deepEqual(await store.artifacts.listRevisions('unknown-track'), []);
      });

      it('detects bytes changed at rest and raises ArtifactCorruptError', async () => {
        // Prepare
        const store = await makeStore();
        const revision = randomRevision();
        const bytes = Buffer.from('{"objects":[{"kind":"ConfigMap"}]}');
        await store.artifacts.put('webapp', revision, bytes);
        await store.tamperArtifact('webapp', revision);

        // Act
        const attempt = store.artifacts.get('webapp', revision);

        // Assess
        await assert.rejects(attempt, (error: unknown) => {
          assert.ok(error instanceof ArtifactCorruptError);
          assert.equal(error.code, 'ARTIFACT_CORRUPT');
          assert.equal(error.expectedDigest, sha256(bytes));
          assert.notEqual(error.actualDigest, sha256(bytes));
          return true;
        });
      });

      it('never overwrites a corrupt artifact, even with its original bytes', async () => {
        // Prepare
        const store = await makeStore();
        const revision = randomRevision();
        const bytes = Buffer.from('original bytes');
        await store.artifacts.put('webapp', revision, bytes);
        await store.tamperArtifact('webapp', revision);

        // Act
        const attempt = store.artifacts.put('webapp', revision, bytes);

        // Assess
        await assert.rejects(attempt, ArtifactCorruptError);
        await assert.rejects(store.artifacts.get('webapp', revision), ArtifactCorruptError);
      });

      it('lists more artifacts than fit in one page, newest first', async () => {
        // Prepare
        const store = await makeStore({ pageSize: 10, now: steppingClock() });
        const revisions = Array.from({ length: 25 }, randomRevision);
        for (const revision of revisions) {
          await store.artifacts.put('webapp', revision, Buffer.from(revision));
        }
        await store.artifacts.put('webapp-other', randomRevision(), Buffer.from('x'));

        // Act
        const listed = await store.artifacts.list('webapp');

        // Assess: a track whose name extends another's is not listed with it.
        assert.deepEqual(
          listed.map((info) => info.revision),
          [...revisions].reverse(),
        );
        assert.ok(listed.every((info) => info.digest === sha256(Buffer.from(info.revision))));
        assert.equal(listed[0]?.storedAt, new Date(Date.UTC(2026, 0, 1) + 24_000).toISOString());
      });

      it('lists the stored revisions by name and store time, newest first, across pages', async () => {
        // Prepare: the newest in a later second than the others.
        const store = await makeStore({ pageSize: 10 });
        const older = Array.from({ length: 12 }, randomRevision);
        const started = Date.now();
        for (const revision of older) {
          await store.artifacts.put('webapp', revision, Buffer.from(revision));
        }
        await untilNextSecond();
        const newest = randomRevision();
        await store.artifacts.put('webapp', newest, Buffer.from(newest));
        const ended = Date.now();
        await store.artifacts.put('webapp-other', randomRevision(), Buffer.from('x'));

        // Act
        const listed = await store.artifacts.listRevisions('webapp');

        // Assess: the revisions list() has (digests left out), and the time each was stored.
        assert.equal(listed[0]?.revision, newest);
        assert.deepEqual(listed, inListingOrder(listed));
        assert.deepEqual(
          listed.map(({ revision }) => revision).sort(),
          (await store.artifacts.list('webapp')).map(({ revision }) => revision).sort(),
        );
        assert.equal(listed.length, older.length + 1);
        for (const listing of listed) {
          const { revision, storedAt } = listing;
          assert.deepEqual(Object.keys(listing).sort(), ['revision', 'storedAt']);
          const time = Date.parse(storedAt);
          assert.ok(
            time >= started - (started % 1000) && time <= ended,
            `${revision} stored at ${storedAt}, not between ${new Date(started).toISOString()} and ${new Date(ended).toISOString()}`,
          );
        }
      });

      it('keeps the time a revision was stored when it is put again, with the same or other bytes', async () => {
        // Prepare
        const store = await makeStore();
        const revision = randomRevision();
        await store.artifacts.put('webapp', revision, Buffer.from('original'));
        const stored = await store.artifacts.listRevisions('webapp');
        await untilNextSecond();

        // Act
        const again = await store.artifacts.put('webapp', revision, Buffer.from('original'));
        const other = store.artifacts.put('webapp', revision, Buffer.from('other'));

        // Assess: neither write reached the stored artifact, so its time is the first put's.
        assert.equal(again.created, false);
        await assert.rejects(other, ArtifactConflictError);
        assert.deepEqual(await store.artifacts.listRevisions('webapp'), stored);
      });
    });

    describe('state', () => {
      it('reads nothing for a track that was never written', async () => {
        // Prepare
        const store = await makeStore();

        // Act
        const state = await store.state.read('webapp');

        // Assess
        assert.equal(state, undefined);
      });

      it('creates, reads and updates a document, changing its version each time', async () => {
        // Prepare
        const store = await makeStore();

        // Act
        const created = await store.state.write('webapp', { applied: 'a' }, undefined);
        const first = await store.state.read<{ applied: string }>('webapp');
        const updated = await store.state.write('webapp', { applied: 'b' }, created.version);
        const second = await store.state.read<{ applied: string }>('webapp');

        // Assess
        assert.deepEqual(first, { value: { applied: 'a' }, version: created.version });
        assert.deepEqual(second, { value: { applied: 'b' }, version: updated.version });
        assert.notEqual(updated.version, created.version);
      });

      it('gives a new version to a value written back unchanged', async () => {
        // Prepare
        const store = await makeStore();
        const first = await store.state.write('webapp', { n: 1 }, undefined);
        const second = await store.state.write('webapp', { n: 2 }, first.version);

        // Act
        const third = await store.state.write('webapp', { n: 1 }, second.version);

        // Assess: the first version must not become valid again (no ABA for versioned writers).
        assert.notEqual(third.version, second.version);
        await assert.rejects(
          store.state.write('webapp', { n: 9 }, second.version),
          ConcurrentUpdateError,
        );
      });

      it('refuses a write with a stale version and keeps the newer document', async () => {
        // Prepare
        const store = await makeStore();
        const created = await store.state.write('webapp', { step: 1 }, undefined);
        await store.state.write('webapp', { step: 2 }, created.version);

        // Act
        const attempt = store.state.write('webapp', { step: 'stale' }, created.version);

        // Assess
        await assert.rejects(attempt, (error: unknown) => {
          assert.ok(error instanceof ConcurrentUpdateError);
          assert.equal(error.code, 'STATE_CONFLICT');
          assert.equal(error.expectedVersion, created.version);
          return true;
        });
        assert.deepEqual((await store.state.read('webapp'))?.value, { step: 2 });
      });

      it('refuses to create a document that exists', async () => {
        // Prepare
        const store = await makeStore();
        await store.state.write('webapp', { first: true }, undefined);

        // Act
        const attempt = store.state.write('webapp', { second: true }, undefined);

        // Assess
        await assert.rejects(attempt, ConcurrentUpdateError);
        assert.deepEqual((await store.state.read('webapp'))?.value, { first: true });
      });

      it('refuses an update of a document that does not exist', async () => {
        // Prepare
        const store = await makeStore();
        const elsewhere = await store.state.write('infra', { x: 1 }, undefined);

        // Act
        const attempt = store.state.write('webapp', { x: 2 }, elsewhere.version);

        // Assess
        await assert.rejects(attempt, ConcurrentUpdateError);
        assert.equal(await store.state.read('webapp'), undefined);
      });

      it('loses no increment when ten read-modify-write loops run at once', async () => {
        // Prepare
        const store = await makeStore();
        const increment = async (): Promise<number> => {
          for (let attempts = 1; ; attempts++) {
            const current = await store.state.read<{ count: number }>('counter');
            try {
              await store.state.write(
                'counter',
                { count: (current?.value.count ?? 0) + 1 },
                current?.version,
              );
              return attempts;
            } catch (error) {
              if (!(error instanceof ConcurrentUpdateError)) throw error;
            }
          }
        };

        // Act
        const attempts = await Promise.all(Array.from({ length: 10 }, increment));

        // Assess: retries prove the writers really collided.
        assert.deepEqual((await store.state.read('counter'))?.value, { count: 10 });
        assert.ok(
          attempts.some((n) => n > 1),
          'no writer ever lost a race',
        );
      });

      it('lists the tracks that have a state document, sorted', async () => {
        // Prepare
        const store = await makeStore();
        for (const track of ['webapp', 'infra', 'a.b_c-d']) {
          await store.state.write(track, {}, undefined);
        }
        await store.state.appendHistory('history-only', entry(new Date()));

        // Act
        const tracks = await store.state.listTracks();

        // Assess
        assert.deepEqual(tracks, ['a.b_c-d', 'infra', 'webapp']);
      });

      it('lists each document with the version a read returns, and a new one after a write', async () => {
        // Prepare
        const store = await makeStore();
        await store.state.write('webapp', { n: 1 }, undefined);
        const first = await store.state.write('infra', { n: 1 }, undefined);
        await store.state.write('infra', { n: 2 }, first.version);
        await store.state.appendHistory('history-only', entry(new Date()));

        // Act
        const versions = await store.state.listVersions();

        // Assess
        assert.deepEqual([...versions.keys()].sort(), ['infra', 'webapp']);
        assert.equal(versions.get('webapp'), (await store.state.read('webapp'))?.version);
        assert.equal(versions.get('infra'), (await store.state.read('infra'))?.version);
        assert.notEqual(versions.get('infra'), first.version);
      });
    });

    describe('history', () => {
      it('keeps every entry of concurrent appends and lists them newest first', async () => {
        // Prepare: appended in shuffled order, at once.
        const store = await makeStore({ pageSize: 10 });
        const start = Date.UTC(2026, 1, 1);
        const entries = Array.from({ length: 25 }, (_, i) =>
          entry(new Date(start + i * 60_000), { result: `r${i}` }),
        );
        const shuffled = [...entries].sort(() => Math.random() - 0.5);

        // Act
        await Promise.all(shuffled.map((e) => store.state.appendHistory('webapp', e)));
        const listed = await store.state.listHistory('webapp');

        // Assess
        assert.deepEqual(listed, [...entries].reverse());
      });

      it('lists only the newest entries up to the limit', async () => {
        // Prepare
        const store = await makeStore({ pageSize: 10 });
        const start = Date.UTC(2026, 1, 1);
        const entries = Array.from({ length: 15 }, (_, i) => entry(new Date(start + i * 1000)));
        for (const e of entries) await store.state.appendHistory('webapp', e);

        // Act
        const newest = await store.state.listHistory('webapp', 12);

        // Assess
        assert.deepEqual(newest, entries.slice(3).reverse());
        assert.deepEqual(await store.state.listHistory('webapp', 0), []);
      });

      it('keeps entries with the same time and their extra fields', async () => {
        // Prepare
        const store = await makeStore();
        const at = new Date(Date.UTC(2026, 2, 1));
        const entries = Array.from({ length: 10 }, (_, i) =>
          entry(at, { trigger: 'rollback', changeset: [{ subject: `ConfigMap/apps/c${i}` }] }),
        );

        // Act
        await Promise.all(entries.map((e) => store.state.appendHistory('webapp', e)));
        const listed = await store.state.listHistory('webapp');

        // Assess: order among equal times is not guaranteed.
        const bySubject = (e: HistoryEntry): string => JSON.stringify(e.changeset);
        assert.deepEqual(listed.map(bySubject).sort(), entries.map(bySubject).sort());
      });

      it('lists no history for a track without entries', async () => {
        // Prepare
        const store = await makeStore();

        // Act
        const listed = await store.state.listHistory('webapp');

        // Assess
        assert.deepEqual(listed, []);
      });

      it('refuses malformed entries', async () => {
        // Prepare
        const store = await makeStore();
        const bad = [
          { ...entry(new Date()), appliedAt: 'yesterday' },
          { ...entry(new Date()), trigger: 'cron' },
          { ...entry(new Date()), revision: 42 },
        ] as unknown as HistoryEntry[];

        // Act
        const outcomes = await Promise.allSettled(
          bad.map((e) => store.state.appendHistory('webapp', e)),
        );

        // Assess
        assertAllRefused(outcomes, bad);
        assert.deepEqual(await store.state.listHistory('webapp'), []);
      });
    });

    describe('deliveries', () => {
      it('marks a delivery true the first time and false after', async () => {
        // Prepare
        const store = await makeStore();
        const id = `github:${randomBytes(8).toString('hex')}`;

        // Act
        const first = await store.deliveries.markDelivery(id);
        const second = await store.deliveries.markDelivery(id);
        const other = await store.deliveries.markDelivery(`${id}-other`);

        // Assess
        assert.deepEqual([first, second, other], [true, false, true]);
      });

      it('marks a delivery true exactly once when ten callers mark it at the same time', async () => {
        // Prepare
        const store = await makeStore();
        const id = '72d3162e-cc78-11e3-81ab-4c9367dc0958';

        // Act
        const results = await Promise.all(
          Array.from({ length: 10 }, () => store.deliveries.markDelivery(id)),
        );

        // Assess
        assert.equal(results.filter(Boolean).length, 1);
      });

      it('says whether a delivery was marked', async () => {
        // Prepare
        const store = await makeStore();
        const id = `gitlab:${randomBytes(8).toString('hex')}`;

        // Act
        const before = await store.deliveries.isDelivered(id);
        await store.deliveries.markDelivery(id);
        const after = await store.deliveries.isDelivered(id);
        const other = await store.deliveries.isDelivered(`${id}-other`);

        // Assess
        assert.deepEqual([before, after, other], [false, true, false]);
      });

      it('accepts ids with slashes and dots without escaping the layout', async () => {
        // Prepare
        const store = await makeStore();

        // Act
        const marked = await store.deliveries.markDelivery('../../state/webapp.json');

        // Assess
        assert.equal(marked, true);
        assert.deepEqual(await store.state.listTracks(), []);
        await assert.rejects(store.deliveries.markDelivery(''), InvalidStoreKeyError);
      });
    });

    describe('job bodies', () => {
      it('stores a body under the sha256 of its bytes and reads it back', async () => {
        // Prepare: larger than an SQS message, and not only ASCII.
        const store = (await makeStore()).jobBodies;
        const body = JSON.stringify({ type: 'writeBack', data: 'ü ✓ '.repeat(100_000) });

        // Act
        const name = await store.putJobBody(body);
        const again = await store.putJobBody(body);
        const read = await store.readJobBody(name);

        // Assess
        assert.equal(name, createHash('sha256').update(body, 'utf8').digest('hex'));
        assert.equal(again, name, 'the same body, the same name');
        assert.equal(read, body);
      });

      it('refuses a name with no body, a body that is not what its name says, and a bad name', async () => {
        // Prepare
        const under = await makeStore();
        const store = under.jobBodies;
        const name = await store.putJobBody('{"type":"notify"}');
        await under.tamperJobBody(name);

        // Assess
        await assert.rejects(store.readJobBody('0'.repeat(64)), JobBodyNotFoundError);
        await assert.rejects(store.readJobBody(name), /does not match its name/);
        for (const bad of ['../state/x', 'A'.repeat(64), '0'.repeat(63), '']) {
          await assert.rejects(store.readJobBody(bad), InvalidStoreKeyError, bad);
        }
      });
    });

    describe('published track lists', () => {
      it('reads nothing for a source that was never published', async () => {
        // Prepare
        const store = (await makeStore()).published;

        // Act
        const document = await store.readPublished('cluster-tracks');

        // Assess
        assert.equal(document, undefined);
      });

      it('reads back the document that was published', async () => {
        // Prepare
        const store = (await makeStore()).published;
        const document = {
          source: 'cluster-tracks',
          publishedAt: '2026-01-01T00:00:00.000Z',
          tracks: [{ name: 'webapp', cluster: 'prod', labels: { tier: 'web' } }],
          problems: [],
          unicode: 'ü ✓',
        };

        // Act
        await store.publish('cluster-tracks', document);
        const read = await store.readPublished<typeof document>('cluster-tracks');

        // Assess
        assert.deepEqual(read, document);
      });

      it('replaces the whole document on a second publish', async () => {
        // Prepare
        const store = (await makeStore()).published;
        await store.publish('cluster-tracks', { tracks: ['a', 'b'], revision: 'r1' });

        // Act
        await store.publish('cluster-tracks', { tracks: ['c'] });

        // Assess: nothing of the first document is merged in.
        assert.deepEqual(await store.readPublished('cluster-tracks'), { tracks: ['c'] });
      });

      it('keeps the documents of different sources apart', async () => {
        // Prepare
        const store = (await makeStore()).published;
        await store.publish('cluster-tracks', { tracks: ['webapp'] });

        // Act
        await store.publish('repo-tracks', { tracks: ['infra'] });
        await store.publish('repo-tracks', { tracks: ['infra', 'db'] });

        // Assess
        assert.deepEqual(await store.readPublished('cluster-tracks'), { tracks: ['webapp'] });
        assert.deepEqual(await store.readPublished('repo-tracks'), { tracks: ['infra', 'db'] });
        assert.equal(await store.readPublished('cluster-tracks-other'), undefined);
      });

      it('refuses invalid source names before writing anything', async () => {
        // Prepare
        const under = await makeStore();
        const store = under.published;

        // Act
        const calls = HOSTILE_TRACKS.flatMap((source) => [
          {
            call: `publish(${JSON.stringify(source)})`,
            run: () => store.publish(source, { tracks: [] }),
          },
          {
            call: `readPublished(${JSON.stringify(source)})`,
            run: () => store.readPublished(source),
          },
        ]);
        const outcomes = await Promise.allSettled(calls.map(({ run }) => run()));

        // Assess
        assertAllRefused(
          outcomes,
          calls.map(({ call }) => call),
        );
        for (const outcome of outcomes) {
          if (outcome.status === 'rejected') {
            assert.match(String(outcome.reason), /invalid track source name/);
          }
        }
        assert.deepEqual(await under.state.listTracks(), []);
        assert.equal(await store.readPublished('x'), undefined);
      });

      it('does not list published documents as tracks', async () => {
        // Prepare
        const under = await makeStore();
        const store = under.published;
        await under.state.write('webapp', {}, undefined);

        // Act
        await store.publish('cluster-tracks', { tracks: [{ name: 'infra' }] });
        await store.publish('webapp', { tracks: [] });

        // Assess
        assert.deepEqual(await under.state.listTracks(), ['webapp']);
        assert.equal(await under.state.read('cluster-tracks'), undefined);
        assert.deepEqual((await under.state.read('webapp'))?.value, {});
      });
    });

    describe('names', () => {
      it('refuses hostile track names everywhere before touching storage', async () => {
        // Prepare
        const store = await makeStore();
        const revision = randomRevision();

        // Act
        const calls = HOSTILE_TRACKS.flatMap((track) => [
          {
            call: `put(${JSON.stringify(track)})`,
            run: () => store.artifacts.put(track, revision, Buffer.from('x')),
          },
          {
            call: `get(${JSON.stringify(track)})`,
            run: () => store.artifacts.get(track, revision),
          },
          {
            call: `has(${JSON.stringify(track)})`,
            run: () => store.artifacts.has(track, revision),
          },
          { call: `list(${JSON.stringify(track)})`, run: () => store.artifacts.list(track) },
          {
            call: `listRevisions(${JSON.stringify(track)})`,
            run: () => store.artifacts.listRevisions(track),
          },
          { call: `read(${JSON.stringify(track)})`, run: () => store.state.read(track) },
          {
            call: `write(${JSON.stringify(track)})`,
            run: () => store.state.write(track, {}, undefined),
          },
          {
            call: `appendHistory(${JSON.stringify(track)})`,
            run: () => store.state.appendHistory(track, entry(new Date())),
          },
          {
            call: `listHistory(${JSON.stringify(track)})`,
            run: () => store.state.listHistory(track),
          },
        ]);
        const outcomes = await Promise.allSettled(calls.map(({ run }) => run()));

        // Assess
        assertAllRefused(
          outcomes,
          calls.map(({ call }) => call),
        );
        assert.deepEqual(await store.state.listTracks(), []);
      });

      it('refuses revisions that are not full commit shas', async () => {
        // Prepare
        const store = await makeStore();

        // Act
        const calls = HOSTILE_REVISIONS.flatMap((revision) => [
          {
            call: `put(${JSON.stringify(revision)})`,
            run: () => store.artifacts.put('webapp', revision, Buffer.from('x')),
          },
          {
            call: `get(${JSON.stringify(revision)})`,
            run: () => store.artifacts.get('webapp', revision),
          },
          {
            call: `has(${JSON.stringify(revision)})`,
            run: () => store.artifacts.has('webapp', revision),
          },
        ]);
        const outcomes = await Promise.allSettled(calls.map(({ run }) => run()));

        // Assess
        assertAllRefused(
          outcomes,
          calls.map(({ call }) => call),
        );
        assert.deepEqual(await store.artifacts.list('webapp'), []);
        assert.deepEqual(await store.artifacts.listRevisions('webapp'), []);
      });

      it('accepts SHA-256 commit ids', async () => {
        // Prepare
        const store = await makeStore();
        const revision = randomBytes(32).toString('hex');

        // Act
        await store.artifacts.put('webapp', revision, Buffer.from('sha256 repo'));

        // Assess
        assert.equal(await store.artifacts.has('webapp', revision), true);
      });
    });
  });
}
