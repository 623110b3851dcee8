/**
 * What the dashboard's track page costs on an S3 store, against a real MinIO:
 * the page polls it every 5 s per viewer, and artifacts are never removed, so
 * its listing of stored revisions must not grow by a request per artifact
 * (a HeadObject each, as `list()` needs for the digests the page never shows).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { S3Client } from '@aws-sdk/client-s3';
import { parseConfig } from '../../src/config/parse-config.ts';
import { storedObjects, trackDetail } from '../../src/dashboard/read-model.ts';
import { createStore } from '../../src/store/create-store.ts';
import { S3Store } from '../../src/store/s3-store.ts';
import { startMinio, type MinioServer } from '../harness/minio.ts';
import { randomRevision } from './store-contract.ts';

const ARTIFACTS = 25;

let minio: MinioServer;
let bucket: string;

before(async () => {
  minio = await startMinio();
  bucket = await minio.createBucket();
});

after(async () => {
  await minio?.stop();
});

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

/** A fresh prefix holding `ARTIFACTS` artifacts of track `web`, stored by the S3 store. */
async function prefixWithArtifacts(): Promise<{ prefix: string; revisions: string[] }> {
  const prefix = `reads-${randomBytes(6).toString('hex')}/`;
  const writer = new S3Store({
    bucket,
    prefix,
    client: minio.client(),
    kmsKeyId: minio.kmsKeyName,
  });
  const revisions = Array.from({ length: ARTIFACTS }, randomRevision);
  for (const revision of revisions) await writer.put('web', revision, Buffer.from(revision));
  return { prefix, revisions };
}

describe('the dashboard on an S3 store', () => {
  it('lists a track page’s stored revisions without a request per artifact', async () => {
    // Prepare: the store as the dashboard function builds it, over a counting client.
    const { prefix, revisions } = await prefixWithArtifacts();
    const client = minio.client();
    const counts = countCommands(client);
    const store = createStore(
      { type: 's3', bucket, prefix, kmsKeyId: minio.kmsKeyName },
      { s3Client: client },
    );
    const [track] = parseConfig(
      'tracks:\n  - name: web\n    repository: https://git.example.com/web.git\n',
      'driftless.yaml',
    ).tracks;

    // Act
    const detail = await trackDetail(track!, {
      state: store.state,
      artifacts: store.artifacts,
      objects: async (_track, state) => storedObjects(state),
    });

    // Assess: the state (GetObject), the history and the artifacts (a listing each); no HEAD.
    assert.deepEqual(
      detail.revisions.map(({ revision }) => revision).sort(),
      [...revisions].sort(),
    );
    assert.ok(detail.revisions.every(({ storedAt }) => !Number.isNaN(Date.parse(storedAt))));
    assert.deepEqual(Object.fromEntries(counts), {
      GetObjectCommand: 1,
      ListObjectsV2Command: 2,
    });
  });

  it('pages the listing of stored revisions and sends nothing else', async () => {
    // Prepare
    const { prefix, revisions } = await prefixWithArtifacts();
    const client = minio.client();
    const counts = countCommands(client);
    const store = new S3Store({ bucket, prefix, client, pageSize: 10 });

    // Act
    const listed = await store.listRevisions('web');

    // Assess: 25 artifacts take 3 pages of 10.
    assert.equal(listed.length, revisions.length);
    assert.deepEqual(Object.fromEntries(counts), { ListObjectsV2Command: 3 });
  });
});
