/**
 * The S3 store against a real MinIO: the store contract (each test in its
 * own prefix of one bucket), plus what only S3 has — encryption headers,
 * paged listings, prefixes, error translation, the config factory.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { createStore } from '../../src/store/create-store.ts';
import { ArtifactCorruptError, StoreUnavailableError } from '../../src/store/errors.ts';
import { S3Store, type S3StoreOptions } from '../../src/store/s3-store.ts';
import { startMinio, type MinioServer } from '../harness/minio.ts';
import {
  describeStoreContract,
  randomRevision,
  type StoreTestOptions,
  type StoreUnderTest,
} from './store-contract.ts';

let minio: MinioServer;
let s3: S3Client;
let bucket: string;

before(async () => {
  minio = await startMinio();
  s3 = minio.client();
  bucket = await minio.createBucket();
});

after(async () => {
  await minio?.stop();
});

/** A store in a fresh prefix of the suite's bucket, encrypting with the server's KMS key. */
function makeS3Store(options: Partial<S3StoreOptions> = {}): S3Store {
  return new S3Store({
    bucket,
    prefix: `t-${randomBytes(6).toString('hex')}/`,
    client: s3,
    kmsKeyId: minio.kmsKeyName,
    ...options,
  });
}

async function makeContractStore(options: StoreTestOptions = {}): Promise<StoreUnderTest> {
  const store = makeS3Store({
    ...(options.pageSize === undefined ? {} : { pageSize: options.pageSize }),
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  return {
    artifacts: store,
    state: store,
    deliveries: store,
    published: store,
    jobBodies: store,
    async tamperJobBody(digest) {
      await s3.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: `${store.prefix}jobs/${digest}.json`,
          Body: '{"type":"other"}',
        }),
      );
    },
    async tamperArtifact(track, revision) {
      // Rewrite the object with other bytes but the metadata (digest) it was stored with.
      const key = `${store.prefix}artifacts/${track}/${revision}`;
      const original = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      const bytes = await original.Body!.transformToByteArray();
      bytes[bytes.length - 1] = (bytes[bytes.length - 1] ?? 0) ^ 0xff;
      await s3.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: key,
          Body: bytes,
          Metadata: original.Metadata,
        }),
      );
    },
  };
}

describeStoreContract('s3 (MinIO)', makeContractStore);

/** Counts the commands `client` sends, by name, from now on. */
function countCommands(client: S3Client): Map<string, number> {
  const counts = new Map<string, number>();
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const name = context.commandName ?? '?';
      counts.set(name, (counts.get(name) ?? 0) + 1);
      return next(args);
    },
    { step: 'initialize', name: `count-${randomBytes(4).toString('hex')}` },
  );
  return counts;
}

/** Every key under `prefix`. */
async function keysUnder(prefix: string): Promise<string[]> {
  const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }));
  return (page.Contents ?? []).map((object) => object.Key ?? '').sort();
}

describe('s3 store', () => {
  it('encrypts every object it writes with SSE-KMS and the configured key', async () => {
    // Prepare
    const store = makeS3Store();
    const revision = randomRevision();

    // Act
    await store.put('webapp', revision, Buffer.from('bundle'));
    await store.write('webapp', { applied: revision }, undefined);
    await store.appendHistory('webapp', {
      revision,
      appliedAt: new Date().toISOString(),
      result: 'applied',
      trigger: 'webhook',
    });
    await store.markDelivery('delivery-1');

    // Assess
    const keys = await keysUnder(store.prefix);
    assert.equal(keys.length, 4, keys.join('\n'));
    for (const key of keys) {
      const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
      assert.equal(head.ServerSideEncryption, 'aws:kms', key);
      assert.equal(head.SSEKMSKeyId, `arn:aws:kms:${minio.kmsKeyName}`, key);
    }
  });

  it('encrypts with SSE-S3 when configured so', async () => {
    // Prepare
    const store = makeS3Store({ encryption: 'AES256' });

    // Act
    await store.put('webapp', randomRevision(), Buffer.from('bundle'));

    // Assess
    const [key] = await keysUnder(store.prefix);
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
    assert.equal(head.ServerSideEncryption, 'AES256');
  });

  it('records the digest in metadata and the SHA-256 checksum of the upload', async () => {
    // Prepare
    const store = makeS3Store();
    const revision = randomRevision();
    const bytes = Buffer.from('bundle');

    // Act
    const { digest } = await store.put('webapp', revision, bytes);

    // Assess
    const head = await s3.send(
      new HeadObjectCommand({
        Bucket: bucket,
        Key: `${store.prefix}artifacts/webapp/${revision}`,
        ChecksumMode: 'ENABLED',
      }),
    );
    assert.equal(head.Metadata?.sha256, digest);
    assert.equal(
      head.ChecksumSHA256,
      Buffer.from(digest.slice('sha256:'.length), 'hex').toString('base64'),
    );
  });

  it('relies on a server that refuses an upload not matching its SHA-256 checksum', async () => {
    // Prepare: the checksum of other bytes, as a damaged upload would carry.
    const checksum = Buffer.from(createHash('sha256').update('intended').digest()).toString(
      'base64',
    );
    const key = `checksum-${randomBytes(4).toString('hex')}`;

    // Act
    const attempt = s3.send(
      new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'damaged', ChecksumSHA256: checksum }),
    );

    // Assess
    await assert.rejects(attempt, (error: unknown) => {
      assert.equal(
        (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode,
        400,
      );
      console.log(`# MinIO answers a checksum mismatch with ${(error as Error).name}`);
      return true;
    });
    assert.deepEqual(await keysUnder(key), []);
  });

  it('pages listings with the configured page size', async () => {
    // Prepare
    const store = makeS3Store({ pageSize: 10 });
    for (let i = 0; i < 25; i++) {
      await store.put('webapp', randomRevision(), Buffer.from(String(i)));
      await store.appendHistory('webapp', {
        revision: randomRevision(),
        appliedAt: new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString(),
        result: 'applied',
        trigger: 'schedule',
      });
    }
    const counting = minio.client();
    const counts = countCommands(counting);
    const observed = makeS3Store({ prefix: store.prefix, pageSize: 10, client: counting });

    // Act
    const artifacts = await observed.list('webapp');
    const listsForArtifacts = counts.get('ListObjectsV2Command');
    const history = await observed.listHistory('webapp', 12);

    // Assess: 25 artifacts take 3 pages; the newest 12 entries take 2 (10 + 2), not 3.
    assert.equal(artifacts.length, 25);
    assert.equal(listsForArtifacts, 3);
    assert.equal(history.length, 12);
    assert.equal(counts.get('ListObjectsV2Command'), 5);
    assert.equal(history[0]?.appliedAt, new Date(Date.UTC(2026, 0, 1, 0, 24)).toISOString());
  });

  it('keeps every object under its prefix and sees nothing outside it', async () => {
    // Prepare
    const other = makeS3Store();
    await other.write('webapp', { other: true }, undefined);
    const store = makeS3Store({ prefix: `/${other.prefix}nested//` });

    // Act
    await store.write('webapp', { nested: true }, undefined);
    const tracks = await other.listTracks();

    // Assess: the nested store lives inside the other's prefix but not in its layout.
    assert.equal(store.prefix, `${other.prefix}nested/`);
    assert.deepEqual(tracks, ['webapp']);
    assert.deepEqual((await other.read('webapp'))?.value, { other: true });
    assert.deepEqual(await keysUnder(store.prefix), [`${store.prefix}state/webapp.json`]);
  });

  it('reports an artifact stored without its digest metadata as corrupt', async () => {
    // Prepare
    const store = makeS3Store();
    const revision = randomRevision();
    await s3.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: `${store.prefix}artifacts/webapp/${revision}`,
        Body: 'planted',
      }),
    );

    // Act
    const attempt = store.get('webapp', revision);

    // Assess
    await assert.rejects(attempt, (error: unknown) => {
      assert.ok(error instanceof ArtifactCorruptError);
      assert.match(error.message, /no valid sha256 metadata/);
      return true;
    });
  });

  it('translates a missing bucket into StoreUnavailableError', async () => {
    // Prepare
    const store = makeS3Store({ bucket: `missing-${randomBytes(4).toString('hex')}` });

    // Act
    const attempts = [
      store.put('webapp', randomRevision(), Buffer.from('x')),
      store.get('webapp', randomRevision()),
      store.has('webapp', randomRevision()),
      store.write('webapp', {}, undefined),
      store.listTracks(),
      store.markDelivery('x'),
    ];

    // Assess
    const outcomes = await Promise.allSettled(attempts);
    for (const outcome of outcomes) {
      assert.equal(outcome.status, 'rejected');
      if (outcome.status === 'rejected') {
        assert.ok(outcome.reason instanceof StoreUnavailableError, String(outcome.reason));
        assert.match(outcome.reason.message, /^s3:\/\/missing-[0-9a-f]+\/.*NoSuchBucket/);
      }
    }
  });

  it('translates an unknown KMS key into StoreUnavailableError', async () => {
    // Prepare
    const store = makeS3Store({ kmsKeyId: 'no-such-key' });

    // Act
    const attempt = store.put('webapp', randomRevision(), Buffer.from('x'));

    // Assess
    await assert.rejects(attempt, (error: unknown) => {
      assert.ok(error instanceof StoreUnavailableError);
      assert.match(error.message, /kms:KeyNotFound/);
      return true;
    });
  });

  it('translates an unreachable endpoint into StoreUnavailableError', async () => {
    // Prepare: a client the store builds itself, for a port nothing listens on.
    const store = createStore({
      type: 's3',
      bucket,
      endpoint: 'http://127.0.0.1:9',
      region: 'us-east-1',
    });

    // Act
    const attempt = store.state.read('webapp');

    // Assess
    try {
      await assert.rejects(attempt, StoreUnavailableError);
    } finally {
      store.close();
    }
  });

  it('creates an S3 store from the config with an injected client', async () => {
    // Prepare
    const prefix = `cfg-${randomBytes(4).toString('hex')}`;
    const store = createStore(
      { type: 's3', bucket, prefix, kmsKeyId: minio.kmsKeyName },
      { s3Client: s3 },
    );

    // Act
    await store.state.write('webapp', { ok: true }, undefined);
    store.close(); // must not destroy the injected client

    // Assess
    assert.deepEqual(await keysUnder(`${prefix}/`), [`${prefix}/state/webapp.json`]);
  });
});
