/**
 * Starts a real MinIO server for the S3 integration tests: one throwaway
 * server per test file, on free loopback ports, with its own data directory,
 * root credentials and a static KMS key (so SSE-KMS and SSE-S3 headers work).
 *
 * The binary comes from `DRIFTLESS_MINIO_BIN` when set, else from
 * `test/testbin/build.sh minio`, which builds the pinned MinIO once and caches it.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { freePort, startProcess, waitUntilReady } from './processes.ts';
import { binaryFromVariable, buildComponents, isExecutable } from './testbin.ts';

/** MinIO starts in well under a second here; the margin is for loaded CI machines. */
const START_TIMEOUT_MS = 30_000;

/** A running MinIO server and what a test needs to talk to it. */
export interface MinioServer {
  /** `http://127.0.0.1:<port>`, the S3 API. */
  readonly endpoint: string;
  readonly region: 'us-east-1';
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  /** The name of the server's only KMS key: pass it as `SSEKMSKeyId`. */
  readonly kmsKeyName: string;
  /** The server's data directory, for tests that inspect what lands on disk. */
  readonly dataDir: string;
  /** Creates a bucket (a random `test-…` name unless one is given) and returns its name. */
  createBucket(name?: string): Promise<string>;
  /** A new S3 client for this server (path-style, root credentials); stop() destroys it. */
  client(): S3Client;
  /** Stops the server and removes its data directory. */
  stop(): Promise<void>;
  /** Kills the server with SIGKILL (a crash: data stays) and resolves once it is gone. For fault tests. */
  kill(): Promise<void>;
  /** Starts the server again on the same port, data and credentials; resolves once it is live. */
  restart(): Promise<void>;
}

/** The `store:` block of a driftless.yaml over `bucket` on this server, as lines. */
export function s3StoreLines(
  server: Pick<MinioServer, 'endpoint' | 'region'>,
  bucket: string,
  prefix: string,
): string[] {
  return [
    'store:',
    '  type: s3',
    `  bucket: ${bucket}`,
    `  prefix: ${prefix}`,
    `  endpoint: ${server.endpoint}`,
    `  region: ${server.region}`,
  ];
}

/**
 * The minio binary: `DRIFTLESS_MINIO_BIN` when set, else the one build.sh
 * builds (or finds in its cache). Throws when neither yields an executable.
 */
export async function minioBinary(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const explicit = binaryFromVariable('DRIFTLESS_MINIO_BIN', env);
  if (explicit) return explicit;
  const dir = (await buildComponents(['minio'])).get('minio');
  const binary = join(dir ?? '', 'minio');
  if (!dir || !isExecutable(binary)) {
    throw new Error(
      `test/testbin/build.sh minio reported ${dir ?? 'no directory'}, but ${binary} is missing`,
    );
  }
  return binary;
}

/**
 * Starts MinIO on free loopback ports and waits until it answers its liveness
 * probe. Throws (with MinIO's output) when it cannot start: tests that need S3
 * must fail, never skip.
 */
export async function startMinio(): Promise<MinioServer> {
  const binary = await minioBinary();
  const dataDir = await mkdtemp(join(tmpdir(), 'driftless-minio-'));
  const [port, consolePort] = [await freePort(), await freePort()];
  const endpoint = `http://127.0.0.1:${port}`;
  const accessKeyId = `driftless-${randomBytes(6).toString('hex')}`;
  const secretAccessKey = randomBytes(24).toString('base64url');
  const kmsKeyName = 'driftless-test-key';

  // Kept for restart(): the same key must read back what was encrypted with it.
  const kmsSecretKey = `${kmsKeyName}:${randomBytes(32).toString('base64')}`;
  const spawnServer = () =>
    startProcess(
      'minio',
      binary,
      [
        'server',
        dataDir,
        '--address',
        `127.0.0.1:${port}`,
        '--console-address',
        `127.0.0.1:${consolePort}`,
        '--quiet',
      ],
      {
        env: {
          ...process.env,
          MINIO_ROOT_USER: accessKeyId,
          MINIO_ROOT_PASSWORD: secretAccessKey,
          // A static key makes MinIO act as its own KMS; without one it refuses
          // every request that carries server-side-encryption headers.
          MINIO_KMS_SECRET_KEY: kmsSecretKey,
          MINIO_BROWSER: 'off',
          MINIO_UPDATE: 'off',
        },
      },
    );
  let server = spawnServer();

  // If the test process ends without calling stop() (a crash, a forgotten
  // after()), the server and its data must not outlive it.
  const cleanUpOnExit = (): void => {
    server.child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  };
  process.once('exit', cleanUpOnExit);

  const clients: S3Client[] = [];
  const stop = async (): Promise<void> => {
    process.removeListener('exit', cleanUpOnExit);
    for (const client of clients.splice(0)) client.destroy();
    await server.stop();
    await rm(dataDir, { recursive: true, force: true });
  };

  const waitUntilLive = (): Promise<void> =>
    waitUntilReady(
      server,
      async () => {
        const response = await fetch(`${endpoint}/minio/health/live`, {
          signal: AbortSignal.timeout(1_000),
        });
        return response.ok;
      },
      START_TIMEOUT_MS,
    );
  const kill = async (): Promise<void> => {
    server.child.kill('SIGKILL');
    await server.exited;
  };
  const restart = async (): Promise<void> => {
    server = spawnServer();
    await waitUntilLive();
  };

  try {
    await waitUntilLive();
  } catch (error) {
    await stop();
    throw error;
  }

  const client = (): S3Client => {
    const created = new S3Client({
      endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId, secretAccessKey },
      // MinIO serves buckets as paths; virtual-host names would need DNS for 127.0.0.1.
      forcePathStyle: true,
    });
    clients.push(created);
    return created;
  };

  let admin: S3Client | undefined;
  const createBucket = async (name?: string): Promise<string> => {
    const bucket = name ?? `test-${randomBytes(6).toString('hex')}`;
    admin ??= client();
    await admin.send(new CreateBucketCommand({ Bucket: bucket }));
    return bucket;
  };

  return {
    endpoint,
    region: 'us-east-1',
    accessKeyId,
    secretAccessKey,
    kmsKeyName,
    dataDir,
    createBucket,
    client,
    stop,
    kill,
    restart,
  };
}
