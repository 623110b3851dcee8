/**
 * Bucket tracks (Flux's Bucket source) against the real MinIO: the objects
 * under a prefix are the revision's files; adding, changing and deleting
 * objects makes new revisions that are applied and pruned; an unchanged
 * bucket is the same revision.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DeleteObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { parseConfig } from '../../src/config/index.ts';
import type { SecretRef } from '../../src/config/secret-ref.ts';
import { InterruptedError } from '../../src/errors.ts';
import { matchTracks } from '../../src/source/webhooks/match-tracks.ts';
import { createTrackSource } from '../../src/source/track-source.ts';
import { syncTrack, type SyncDeps } from '../../src/sync/sync-track.ts';
import { eventually } from '../harness/eventually.ts';
import { startFaultProxy } from '../harness/fault-proxy.ts';
import { startMinio, type MinioServer } from '../harness/minio.ts';
import { TrackFixture } from '../harness/track-fixture.ts';
import { assertInterrupted } from '../harness/interrupted.ts';

const configMap = (name: string, value: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ${name}}\ndata: {value: "${value}"}\n`;

describe('bucket tracks on MinIO', () => {
  const fixture = new TrackFixture('bucket');
  let minio: MinioServer;
  let s3: S3Client;
  let bucket: string;
  let deps: SyncDeps;
  let workDir: string;

  before(async () => {
    minio = await startMinio();
    s3 = minio.client();
    bucket = await minio.createBucket();
    await fixture.start();
    workDir = await mkdtemp(join(tmpdir(), 'driftless-bucket-'));
    const credentials = JSON.stringify({
      accessKeyId: minio.accessKeyId,
      secretAccessKey: minio.secretAccessKey,
    });
    const readSecret = async (ref: SecretRef): Promise<string> => {
      if (ref.scheme === 'env' && ref.name === 'BUCKET_CREDS') return credentials;
      throw new Error(`unexpected reference ${JSON.stringify(ref)}`);
    };
    deps = { ...fixture.deps, source: createTrackSource({ cacheDir: workDir, readSecret }) };
  });

  after(async () => {
    await fixture.stop();
    await minio.stop();
    await rm(workDir, { recursive: true, force: true });
  });

  const put = (key: string, body: string) =>
    s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));

  it('applies the objects under the prefix; a changed or deleted object is a new revision, applied and pruned', async () => {
    // Prepare
    const ns = `bucket-${Date.now().toString(36)}`;
    await fixture.core.createNamespace({ body: { metadata: { name: ns } } });
    after(() => fixture.core.deleteNamespace({ name: ns }).catch(() => undefined));
    const [track] = parseConfig(
      [
        'tracks:',
        '  - name: from-bucket',
        `    bucket: {name: ${bucket}, prefix: prod/, endpoint: "${minio.endpoint}", region: us-east-1}`,
        '    auth: {type: s3, secret: env:BUCKET_CREDS}',
        `    namespace: ${ns}`,
      ].join('\n'),
      'driftless.yaml',
    ).tracks;
    await put('prod/a.yaml', configMap('a', 'one'));
    await put('prod/b.yaml', configMap('b', 'one'));
    await put('prod/README.md', '# not a manifest');
    await put('staging/c.yaml', configMap('c', 'outside the prefix'));

    // Act + Assess: the first listing.
    const first = await syncTrack(track!, { trigger: 'manual' }, deps);
    assert.equal(first.result, 'applied', first.error);
    assert.match(first.revision ?? '', /^[0-9a-f]{40}$/);
    assert.equal(await fixture.configMapValue(ns, 'a'), 'one');
    assert.equal(await fixture.configMapValue(ns, 'b'), 'one');
    assert.equal(await fixture.configMapValue(ns, 'c'), undefined, 'outside the prefix');

    // The same listing is the same revision: nothing to do.
    const again = await syncTrack(track!, { trigger: 'manual' }, deps);
    assert.equal(again.result, 'unchanged', again.error);
    assert.equal(again.revision, first.revision);

    // A changed object: a new revision, applied.
    await put('prod/a.yaml', configMap('a', 'two'));
    const changed = await syncTrack(track!, { trigger: 'manual' }, deps);
    assert.equal(changed.result, 'applied', changed.error);
    assert.notEqual(changed.revision, first.revision);
    assert.equal(await fixture.configMapValue(ns, 'a'), 'two');

    // A deleted object: a new revision, its object pruned.
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'prod/b.yaml' }));
    const deleted = await syncTrack(track!, { trigger: 'manual' }, deps);
    assert.equal(deleted.result, 'applied', deleted.error);
    assert.equal(await fixture.configMapValue(ns, 'b'), undefined, 'pruned');
    assert.ok(
      deleted.changeset.some(
        (entry) => entry.subject === `ConfigMap/${ns}/b` && entry.action === 'deleted',
      ),
    );

    // No Git host's push concerns a bucket track, whatever URL it names.
    assert.deepEqual(
      matchTracks(
        {
          repositoryUrls: [track!.repository, `${minio.endpoint}/${bucket}`],
          ref: 'refs/heads/main',
        } as never,
        [track!],
      ),
      [],
    );
  });

  it('fails naming the bucket when the credentials are refused', async () => {
    const [track] = parseConfig(
      [
        'tracks:',
        '  - name: refused-bucket',
        `    bucket: {name: ${bucket}, endpoint: "${minio.endpoint}", region: us-east-1}`,
        '    auth: {type: s3, secret: env:BUCKET_CREDS}',
      ].join('\n'),
      'driftless.yaml',
    ).tracks;
    const wrong = createTrackSource({
      cacheDir: workDir,
      readSecret: async () =>
        JSON.stringify({ accessKeyId: 'nobody', secretAccessKey: 'wrong-secret' }),
    });
    const result = await syncTrack(track!, { trigger: 'manual' }, { ...deps, source: wrong });
    assert.equal(result.result, 'failed');
    assert.match(result.error ?? '', new RegExp(`cannot list s3://${bucket}/: `));
    assert.ok(!(result.error ?? '').includes('wrong-secret'));
  });

  it(
    'cancels the listing under way when the call is asked to stop: a hung endpoint is let go at once',
    // A regression fails here instead of hanging the run.
    { timeout: 60_000 },
    async () => {
      // Prepare: the bucket's endpoint is a proxy that takes every request and answers none.
      const proxy = await startFaultProxy(minio.endpoint);
      try {
        proxy.setFault('hang');
        const [track] = parseConfig(
          [
            'tracks:',
            '  - name: hung-bucket',
            `    bucket: {name: ${bucket}, endpoint: "${proxy.url}", region: us-east-1}`,
            '    auth: {type: s3, secret: env:BUCKET_CREDS}',
          ].join('\n'),
          'driftless.yaml',
        ).tracks;
        const controller = new AbortController();
        const resolving = deps.source.resolve(track!, { signal: controller.signal });
        resolving.catch(() => undefined);
        const reachedEndpoint = await eventually(async () => proxy.injected === 1, 10_000, 20);

        // Act
        controller.abort(new InterruptedError('interrupted by SIGINT'));

        // Assess: the connection is let go (the S3 client's own timeout is 30 s), and the call
        // fails with the interruption.
        const closed = await eventually(async () => proxy.connections === 0, 10_000, 20);
        assert.ok(reachedEndpoint, 'the listing reached the endpoint');
        assert.ok(closed, `connections still open: ${proxy.connections}`);
        await assertInterrupted(resolving);
      } finally {
        await proxy.stop();
      }
    },
  );

  it(
    'cancels the object reads under way when the call is asked to stop',
    // A regression fails here instead of hanging the run.
    { timeout: 60_000 },
    async () => {
      // Prepare: the proxy passes listings (signed for its own host) and hangs object reads.
      const proxy = await startFaultProxy(minio.endpoint, {
        keepHost: true,
        affects: (req) => !(req.url ?? '').includes('list-type='),
      });
      try {
        await put('reads/a.yaml', configMap('a', 'read'));
        const [track] = parseConfig(
          [
            'tracks:',
            '  - name: hung-reads',
            `    bucket: {name: ${bucket}, prefix: reads/, endpoint: "${proxy.url}", region: us-east-1}`,
            '    auth: {type: s3, secret: env:BUCKET_CREDS}',
          ].join('\n'),
          'driftless.yaml',
        ).tracks;
        proxy.setFault('hang');
        const { revision } = await deps.source.resolve(track!);
        const controller = new AbortController();
        const reading = deps.source.readFiles(track!, revision, 'manifests', {
          signal: controller.signal,
        });
        reading.catch(() => undefined);
        const reachedEndpoint = await eventually(async () => proxy.hanging === 1, 10_000, 20);

        // Act
        controller.abort(new InterruptedError('interrupted by SIGINT'));

        // Assess: the hung read's connection is let go, and the call fails with the interruption.
        const letGo = await eventually(async () => proxy.hanging === 0, 10_000, 20);
        assert.ok(reachedEndpoint, 'the object read reached the endpoint');
        assert.ok(letGo, `hung requests still open: ${proxy.hanging}`);
        await assertInterrupted(reading);
      } finally {
        await proxy.stop();
      }
    },
  );
});
