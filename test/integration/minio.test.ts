/**
 * The S3 features Driftless' S3 store relies on, checked against a real MinIO
 * (the one test/testbin pins). Where MinIO differs from AWS S3 the test asserts
 * what MinIO does, so a change of behaviour shows up here; docs/s3-features.md
 * records the findings.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  NoSuchKey,
  PutObjectCommand,
  S3ServiceException,
  type S3Client,
} from '@aws-sdk/client-s3';
import { startMinio, type MinioServer } from '../harness/minio.ts';

let minio: MinioServer;
let s3: S3Client;

before(async () => {
  minio = await startMinio();
  s3 = minio.client();
});

after(async () => {
  await minio?.stop();
});

/** The S3 error `promise` rejects with; fails the test when it resolves. */
async function s3Error(promise: Promise<unknown>): Promise<S3ServiceException> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof S3ServiceException) return error;
    throw error;
  }
  assert.fail('the request succeeded, but it was expected to fail');
}

async function getText(bucket: string, key: string): Promise<string> {
  const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return (await object.Body?.transformToString('utf8')) ?? '';
}

/** Every file MinIO keeps for one object (xl.meta, and part files once it is too big to inline). */
async function filesOnDisk(bucket: string, key: string): Promise<Buffer> {
  const dir = join(minio.dataDir, bucket, key);
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const files = entries.filter((entry) => entry.isFile());
  assert.ok(files.length > 0, `MinIO stored no files for ${bucket}/${key} under ${dir}`);
  return Buffer.concat(
    await Promise.all(files.map((entry) => readFile(join(entry.parentPath, entry.name)))),
  );
}

describe('MinIO as the S3 store', () => {
  it('returns the same bytes that were put', async () => {
    // Prepare
    const bucket = await minio.createBucket();
    const bytes = randomBytes(256 * 1024);

    // Act
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'artifact.bin', Body: bytes }));
    const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'artifact.bin' }));
    const read = Buffer.from((await object.Body?.transformToByteArray()) ?? []);

    // Assess
    assert.equal(object.ContentLength, bytes.length);
    assert.ok(read.equals(bytes), 'the bytes read back differ from the bytes put');
  });

  it('raises NoSuchKey when getting a missing key', async () => {
    // Prepare
    const bucket = await minio.createBucket();

    // Act
    const error = await s3Error(s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'missing' })));

    // Assess
    assert.ok(error instanceof NoSuchKey, `expected NoSuchKey, got ${error.name}`);
    assert.equal(error.$metadata.httpStatusCode, 404);
  });

  it('raises NotFound, not NoSuchKey, when heading a missing key', async () => {
    // Prepare: a HEAD response has no body, so the SDK cannot read an error code from it.
    const bucket = await minio.createBucket();

    // Act
    const error = await s3Error(s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'missing' })));

    // Assess
    assert.equal(error.name, 'NotFound');
    assert.equal(error.$metadata.httpStatusCode, 404);
  });

  it('creates an object with If-None-Match: * only once', async () => {
    // Prepare
    const bucket = await minio.createBucket();
    const create = (body: string) =>
      s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'lock', Body: body, IfNoneMatch: '*' }));

    // Act
    const first = await create('first');
    const error = await s3Error(create('second'));

    // Assess
    assert.ok(first.ETag, 'the first create returned no ETag');
    assert.equal(error.name, 'PreconditionFailed');
    assert.equal(error.$metadata.httpStatusCode, 412);
    assert.equal(await getText(bucket, 'lock'), 'first');
  });

  it('updates an object with If-Match only while the ETag is current', async () => {
    // Prepare
    const bucket = await minio.createBucket();
    const put = (body: string, ifMatch?: string) =>
      s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'state', Body: body, IfMatch: ifMatch }));
    const original = await put('v1');
    assert.ok(original.ETag, 'the first put returned no ETag');

    // Act
    const updated = await put('v2', original.ETag);
    const error = await s3Error(put('v3', original.ETag));

    // Assess
    assert.ok(updated.ETag, 'the conditional update returned no ETag');
    assert.notEqual(updated.ETag, original.ETag);
    assert.equal(error.name, 'PreconditionFailed');
    assert.equal(error.$metadata.httpStatusCode, 412);
    assert.equal(await getText(bucket, 'state'), 'v2');
  });

  it('raises NoSuchKey, not 412, for If-Match on a key that does not exist', async () => {
    // Prepare
    const bucket = await minio.createBucket();
    const somebodysETag = '"0123456789abcdef0123456789abcdef"';

    // Act
    const error = await s3Error(
      s3.send(
        new PutObjectCommand({ Bucket: bucket, Key: 'new', Body: 'x', IfMatch: somebodysETag }),
      ),
    );

    // Assess
    assert.ok(error instanceof NoSuchKey, `expected NoSuchKey, got ${error.name}`);
    assert.equal(error.$metadata.httpStatusCode, 404);
  });

  it('ignores If-Match on DeleteObject: a stale ETag still deletes', async () => {
    // Prepare: AWS S3 answers 412 here; this MinIO has no conditional delete.
    const bucket = await minio.createBucket();
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'state', Body: 'v1' }));
    const staleETag = '"0123456789abcdef0123456789abcdef"';

    // Act
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'state', IfMatch: staleETag }));

    // Assess
    const error = await s3Error(s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'state' })));
    assert.ok(
      error instanceof NoSuchKey,
      'the object survived: MinIO now honours If-Match on DELETE',
    );
  });

  it('pages ListObjectsV2 with MaxKeys and ContinuationToken, in key order', async () => {
    // Prepare: uploaded in parallel so the listing order cannot come from upload order.
    const bucket = await minio.createBucket();
    const keys = Array.from({ length: 25 }, (_, i) => `revisions/${String(i).padStart(2, '0')}`);
    await Promise.all(
      keys.map((key) => s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: key }))),
    );
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'other/outside', Body: 'x' }));

    // Act
    const pages: { keys: string[]; truncated: boolean | undefined }[] = [];
    let token: string | undefined;
    do {
      const page = await s3.send(
        new ListObjectsV2Command({
          Bucket: bucket,
          Prefix: 'revisions/',
          MaxKeys: 10,
          ContinuationToken: token,
        }),
      );
      pages.push({
        keys: (page.Contents ?? []).map((object) => object.Key ?? ''),
        truncated: page.IsTruncated,
      });
      token = page.NextContinuationToken;
    } while (token && pages.length < 10);

    // Assess
    assert.deepEqual(
      pages.map((page) => page.keys.length),
      [10, 10, 5],
    );
    assert.deepEqual(
      pages.map((page) => page.truncated),
      [true, true, false],
    );
    assert.deepEqual(
      pages.flatMap((page) => page.keys),
      keys,
    );
  });

  it('accepts SSE-KMS with the named key and reports it on HeadObject', async () => {
    // Prepare
    const bucket = await minio.createBucket();

    // Act
    const put = await s3.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: 'kms',
        Body: 'kms-encrypted',
        ServerSideEncryption: 'aws:kms',
        SSEKMSKeyId: minio.kmsKeyName,
      }),
    );
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'kms' }));

    // Assess: MinIO reports the key id as an ARN made from the bare key name.
    assert.equal(put.ServerSideEncryption, 'aws:kms');
    assert.equal(head.ServerSideEncryption, 'aws:kms');
    assert.equal(head.SSEKMSKeyId, `arn:aws:kms:${minio.kmsKeyName}`);
    assert.equal(await getText(bucket, 'kms'), 'kms-encrypted');
  });

  it('refuses SSE-KMS with a key id the KMS does not have', async () => {
    // Prepare: proves SSEKMSKeyId is honoured rather than ignored.
    const bucket = await minio.createBucket();

    // Act
    const error = await s3Error(
      s3.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: 'kms',
          Body: 'x',
          ServerSideEncryption: 'aws:kms',
          SSEKMSKeyId: 'no-such-key',
        }),
      ),
    );

    // Assess
    assert.equal(error.name, 'kms:KeyNotFound');
    assert.equal(error.$metadata.httpStatusCode, 404);
  });

  it('accepts SSE-S3 (AES256) and reports it on HeadObject', async () => {
    // Prepare
    const bucket = await minio.createBucket();

    // Act
    const put = await s3.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: 'sse-s3',
        Body: 'sse-s3-encrypted',
        ServerSideEncryption: 'AES256',
      }),
    );
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'sse-s3' }));

    // Assess
    assert.equal(put.ServerSideEncryption, 'AES256');
    assert.equal(head.ServerSideEncryption, 'AES256');
    assert.equal(await getText(bucket, 'sse-s3'), 'sse-s3-encrypted');
  });

  // Small objects are inlined into xl.meta; large ones go to part files.
  for (const size of [1024, 1024 * 1024]) {
    it(`stores SSE objects of ${size} bytes encrypted at rest, plain ones in the clear`, async () => {
      // Prepare: a marker that cannot occur by chance, repeated to the size.
      const bucket = await minio.createBucket();
      const marker = `driftless-plaintext-${randomBytes(8).toString('hex')}|`;
      const body = marker.repeat(Math.ceil(size / marker.length)).slice(0, size);
      const put = (key: string, encryption?: 'aws:kms' | 'AES256') =>
        s3.send(
          new PutObjectCommand({
            Bucket: bucket,
            Key: key,
            Body: body,
            ServerSideEncryption: encryption,
          }),
        );

      // Act
      await put('plain');
      await put('kms', 'aws:kms');
      await put('sse-s3', 'AES256');

      // Assess: the plain object proves the scan finds plaintext when it is there.
      const plainHead = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'plain' }));
      assert.equal(plainHead.ServerSideEncryption, undefined);
      assert.ok((await filesOnDisk(bucket, 'plain')).includes(marker), 'plain object not found');
      assert.ok(!(await filesOnDisk(bucket, 'kms')).includes(marker), 'SSE-KMS data is plaintext');
      assert.ok(
        !(await filesOnDisk(bucket, 'sse-s3')).includes(marker),
        'SSE-S3 data is plaintext',
      );
      assert.equal(await getText(bucket, 'kms'), body);
    });
  }
});
