/**
 * The deployed bucket policy (serverless.yml, ArtifactBucketPolicy) refuses
 * PutObjects without `If-None-Match` to artifacts, history and deliveries and
 * without `If-Match`/`If-None-Match` to state. This checks that our own writes
 * pass it: the S3 store, wired as the functions wire it (the stack's bucket,
 * no prefix), writes every kind of object to a real MinIO through a client
 * that records each request as sent; each PutObject is then evaluated
 * against the Deny statements of the template `serverless package` makes.
 *
 * The policy is not put on the MinIO bucket: the evaluation is this test's
 * own, and small: StringLike on actions and resource ARNs, and the condition
 * operators the statements use (it throws on any other, so a new statement
 * cannot pass unread). The same evaluation must refuse an unconditional write
 * to each guarded prefix, so it is not vacuous.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CopyObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { functionStoreConfig } from '../../src/aws/function-store.ts';
import { FUNCTION_ENV } from '../../src/aws/function-env.ts';
import { createStore, type ClosableStore } from '../../src/store/create-store.ts';
import { ConcurrentUpdateError } from '../../src/store/errors.ts';
import { startMinio, type MinioServer } from '../harness/minio.ts';
import { packageService } from '../harness/serverless-package.ts';
import { REPO_ROOT } from '../harness/testbin.ts';
import { randomRevision } from './store-contract.ts';

const EXAMPLE_CONFIG = 'infra/driftless.example.yaml';

interface Statement {
  readonly Sid?: string;
  readonly Effect: string;
  readonly Principal: unknown;
  readonly Action: string | string[];
  readonly Resource: unknown;
  readonly Condition?: Record<string, Record<string, string>>;
}

/** One request as the bucket policy sees it. */
interface PolicyRequest {
  /** The SDK command, e.g. `PutObjectCommand`. */
  readonly command: string;
  /** The IAM action it is authorised as. */
  readonly action: string;
  /** The object key. */
  readonly key: string;
  /** The condition keys the request carries, lower-cased, with their values. */
  readonly keys: Readonly<Record<string, string>>;
}

/** Commands S3 authorises as `s3:PutObject`: every way of creating an object. */
const PUT_OBJECT_COMMANDS = new Set([
  'PutObjectCommand',
  'CopyObjectCommand',
  'CreateMultipartUploadCommand',
  'UploadPartCommand',
  'UploadPartCopyCommand',
  'CompleteMultipartUploadCommand',
]);

/**
 * Records every request `client` sends from now on, as serialised (the
 * headers S3 reads its condition keys from). In AWS the functions reach S3
 * over HTTPS, the SDK's default: `aws:SecureTransport` is `true` there,
 * whatever the plain-HTTP MinIO here says.
 */
function recordRequests(client: S3Client): PolicyRequest[] {
  const recorded: PolicyRequest[] = [];
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = context.commandName ?? '?';
      const headers = Object.fromEntries(
        Object.entries((args.request as { headers?: Record<string, string> }).headers ?? {}).map(
          ([name, value]) => [name.toLowerCase(), value],
        ),
      );
      const keys: Record<string, string> = { 'aws:securetransport': 'true' };
      if (headers['if-none-match'] !== undefined)
        keys['s3:if-none-match'] = headers['if-none-match'];
      if (headers['if-match'] !== undefined) keys['s3:if-match'] = headers['if-match'];
      recorded.push({
        command,
        action: PUT_OBJECT_COMMANDS.has(command) ? 's3:PutObject' : `s3:${command}`,
        key: String((args.input as { Key?: unknown }).Key ?? ''),
        keys,
      });
      return next(args);
    },
    { step: 'build', name: 'record-policy-requests' },
  );
  return recorded;
}

/** IAM's StringLike: `*` any run of characters, `?` one. */
function like(pattern: string, value: string, ignoreCase = false): boolean {
  const source = pattern
    .split('')
    .map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[.+^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`, ignoreCase ? 'i' : '').test(value);
}

/** A statement's resource with the bucket's ARN put in: `!Sub '${ArtifactBucket.Arn}/…'` or `!GetAtt`. */
function resourceArn(resource: unknown, bucketArn: string): string {
  if (typeof resource === 'string') return resource;
  const sub = (resource as { 'Fn::Sub'?: unknown })['Fn::Sub'];
  if (typeof sub === 'string') return sub.replaceAll('${ArtifactBucket.Arn}', bucketArn);
  const getAtt = (resource as { 'Fn::GetAtt'?: unknown })['Fn::GetAtt'];
  if (JSON.stringify(getAtt) === '["ArtifactBucket","Arn"]') return bucketArn;
  throw new Error(`the evaluator cannot resolve the resource ${JSON.stringify(resource)}`);
}

/** Whether every condition of the statement holds for the request (operators and keys ANDed). */
function conditionsHold(statement: Statement, request: PolicyRequest): boolean {
  return Object.entries(statement.Condition ?? {}).every(([operator, block]) =>
    Object.entries(block).every(([name, expected]) => {
      const value = request.keys[name.toLowerCase()];
      switch (operator) {
        case 'Null':
          // "true": the key is absent from the request.
          return (value === undefined) === (expected === 'true');
        case 'Bool':
          return value !== undefined && value === expected.toLowerCase();
        default:
          throw new Error(
            `${statement.Sid}: the evaluator does not know the condition operator ${operator}`,
          );
      }
    }),
  );
}

/** The Sids of the Deny statements that refuse the request. */
function deniedBy(statements: readonly Statement[], request: PolicyRequest, bucket: string) {
  const bucketArn = `arn:aws:s3:::${bucket}`;
  const objectArn = `${bucketArn}/${request.key}`;
  return statements
    .filter((statement) => {
      if (statement.Effect !== 'Deny') return false;
      if (statement.Principal !== '*') {
        throw new Error(`${statement.Sid}: the evaluator reads Principal '*' only`);
      }
      return (
        [statement.Action].flat().some((action) => like(action, request.action, true)) &&
        [statement.Resource]
          .flat()
          .some((resource) => like(resourceArn(resource, bucketArn), objectArn)) &&
        conditionsHold(statement, request)
      );
    })
    .map((statement) => statement.Sid ?? '(no Sid)');
}

let minio: MinioServer;
let bucket: string;
let statements: Statement[];
let outDir: string;
let workDir: string;

before(
  async () => {
    minio = await startMinio();
    bucket = await minio.createBucket();
    outDir = await mkdtemp(join(tmpdir(), 'driftless-bucket-policy-'));
    // Inside the checkout, as the packager wants; its own esbuild folder, since the packaging
    // unit test may rebuild and remove `.esbuild`.
    await mkdir(join(REPO_ROOT, '.driftless'), { recursive: true });
    workDir = await mkdtemp(join(REPO_ROOT, '.driftless', 'bucket-policy-'));
    const template = (await packageService({
      config: EXAMPLE_CONFIG,
      into: join(outDir, 'package'),
      scratch: outDir,
      esbuildWorkFolder: relative(REPO_ROOT, join(workDir, 'esbuild')),
    })) as {
      Resources: Record<string, { Properties: { PolicyDocument: { Statement: Statement[] } } }>;
    };
    const policy = template.Resources.ArtifactBucketPolicy;
    assert.ok(policy, 'the packaged template has ArtifactBucketPolicy');
    statements = policy.Properties.PolicyDocument.Statement;
  },
  { timeout: 20 * 60_000 },
);

after(async () => {
  await minio?.stop();
  if (outDir) await rm(outDir, { recursive: true, force: true });
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

/** The store as the functions build it over the stack's bucket, here MinIO's, through `client`. */
function functionsStore(client: S3Client): ClosableStore {
  const config = functionStoreConfig(
    { store: { type: 'fs', path: 'unused' } },
    { [FUNCTION_ENV.bucket]: bucket, [FUNCTION_ENV.kmsKeyId]: minio.kmsKeyName },
  );
  return createStore(config, { s3Client: client });
}

describe('the bucket policy against what the store writes', () => {
  it('refuses none of the PutObjects the store sends, for every kind of object it writes', async () => {
    // Prepare
    const client = minio.client();
    const recorded = recordRequests(client);
    const store = functionsStore(client);
    const revision = randomRevision();

    // Act: every write path of the store, including the ones that lose their condition.
    await store.artifacts.put('webapp', revision, Buffer.from('bundle'));
    await store.artifacts.put('webapp', revision, Buffer.from('bundle')); // already stored: 412
    const { version } = await store.state.write('webapp', { applied: revision }, undefined);
    await store.state.write('webapp', { applied: revision, n: 2 }, version);
    await assert.rejects(
      store.state.write('webapp', { stale: true }, version),
      ConcurrentUpdateError,
    );
    await store.state.appendHistory('webapp', {
      revision,
      appliedAt: new Date().toISOString(),
      result: 'applied',
      trigger: 'webhook',
    });
    assert.equal(await store.deliveries.markDelivery('github:1'), true);
    assert.equal(await store.deliveries.markDelivery('github:1'), false);
    await store.published.publish('platform', [{ name: 'webapp' }]);
    await store.published.publish('platform', [{ name: 'webapp' }, { name: 'api' }]);
    await store.jobBodies.putJobBody(JSON.stringify({ type: 'sync', track: 'webapp' }));

    // Assess
    const puts = recorded.filter((request) => request.action === 's3:PutObject');
    assert.deepEqual(
      [...new Set(puts.map((request) => request.command))],
      ['PutObjectCommand'],
      'the store creates objects with PutObject only (no copy, no multipart upload)',
    );
    const denied = puts.flatMap((request) =>
      deniedBy(statements, request, bucket).map((sid) => `${request.key}: ${sid}`),
    );
    assert.deepEqual(denied, []);
    // Every prefix was written, state both ways, published and jobs without any condition.
    const written = (prefix: string) => puts.filter((request) => request.key.startsWith(prefix));
    for (const prefix of [
      'artifacts/',
      'history/',
      'deliveries/',
      'state/',
      'published/',
      'jobs/',
    ]) {
      assert.ok(written(prefix).length > 0, `a PutObject to ${prefix}`);
    }
    assert.ok(written('state/').some((request) => 's3:if-none-match' in request.keys));
    assert.ok(written('state/').some((request) => 's3:if-match' in request.keys));
    for (const prefix of ['published/', 'jobs/']) {
      assert.ok(
        written(prefix).every(
          (request) => !('s3:if-none-match' in request.keys) && !('s3:if-match' in request.keys),
        ),
        `${prefix} is written unconditionally`,
      );
    }
    store.close();
  });

  it('refuses an unconditional PutObject or a CopyObject into artifacts, history, deliveries and state', async () => {
    // Prepare
    const client = minio.client();
    const recorded = recordRequests(client);
    const source = `published/source-${randomBytes(4).toString('hex')}.json`;
    await client.send(new PutObjectCommand({ Bucket: bucket, Key: source, Body: '{}' }));
    const targets = {
      [`artifacts/webapp/${randomRevision()}`]: 'DenyOverwritingRecords',
      'history/webapp/0000000000000-000000000-0000000000000000.json': 'DenyOverwritingRecords',
      [`deliveries/${'0'.repeat(64)}`]: 'DenyOverwritingRecords',
      'state/webapp.json': 'DenyBlindStateWrites',
    };

    // Act: what a leaked key or a bug could send; this MinIO has no such policy and takes them.
    for (const key of Object.keys(targets)) {
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'overwritten' }));
      await client.send(
        new CopyObjectCommand({ Bucket: bucket, Key: key, CopySource: `${bucket}/${source}` }),
      );
    }

    // Assess
    const verdicts = recorded
      .filter((request) => request.key !== source)
      .map(
        (request) =>
          `${request.command} ${request.key}: ${deniedBy(statements, request, bucket).join(', ')}`,
      );
    assert.deepEqual(
      verdicts,
      Object.entries(targets).flatMap(([key, sid]) => [
        `PutObjectCommand ${key}: ${sid}`,
        `CopyObjectCommand ${key}: ${sid}`,
      ]),
    );
    // The write this test prepared with, unconditional to published/, stays allowed.
    const prepared = recorded.find((request) => request.key === source);
    assert.ok(prepared);
    assert.deepEqual(deniedBy(statements, prepared, bucket), []);
  });
});
