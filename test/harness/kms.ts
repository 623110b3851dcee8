/**
 * A local AWS KMS for SOPS' AWS KMS path: moto's server (PyPI, pinned in
 * test/testbin/python/requirements.txt and installed outside the checkout by
 * test/testbin/python/install.sh), one per test file, on a free loopback port.
 *
 * sops reaches it as it would reach AWS, through aws-sdk-go-v2's own
 * settings: `AWS_ENDPOINT_URL_KMS`, a region and (throwaway) credentials —
 * {@link KmsServer.env}. Keys are created with KMS's JSON API; moto accepts
 * any credentials, so requests are not signed.
 */
import { join } from 'node:path';
import { freePort, startProcess, waitUntilReady } from './processes.ts';
import { REPO_ROOT, runBuildScript } from './testbin.ts';

const START_TIMEOUT_MS = 60_000;

export interface KmsServer {
  /** `http://127.0.0.1:<port>` */
  readonly endpoint: string;
  /** What the AWS SDK in sops (or in Driftless) needs to use this server instead of AWS. */
  readonly env: Readonly<Record<string, string>>;
  /** A new symmetric key; its ARN. */
  createKey(): Promise<string>;
  stop(): Promise<void>;
}

/** The venv with moto's server, installed once per pin. */
async function pythonTools(): Promise<string> {
  const printed = await runBuildScript(join(REPO_ROOT, 'test/testbin/python/install.sh'), []);
  const dir = printed.get('python');
  if (dir === undefined) throw new Error('test/testbin/python/install.sh printed no venv');
  return dir;
}

/** Starts moto's server; throws with its output when it cannot start (tests fail, never skip). */
export async function startKms(): Promise<KmsServer> {
  const venv = await pythonTools();
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const server = startProcess(
    'moto',
    join(venv, 'bin', 'moto_server'),
    ['-H', '127.0.0.1', '-p', String(port)],
    { env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp' } },
  );
  const kill = (): void => {
    server.child.kill('SIGKILL');
  };
  process.once('exit', kill);
  try {
    await waitUntilReady(
      server,
      async () => (await fetch(`${endpoint}/moto-api/`, { signal: AbortSignal.timeout(1_000) })).ok,
      START_TIMEOUT_MS,
    );
  } catch (error) {
    kill();
    throw error;
  }
  const env = {
    AWS_ENDPOINT_URL_KMS: endpoint,
    AWS_REGION: 'eu-west-1',
    AWS_ACCESS_KEY_ID: 'testing',
    AWS_SECRET_ACCESS_KEY: 'testing',
  };
  return {
    endpoint,
    env,
    async createKey() {
      const response = await fetch(endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-amz-json-1.1',
          'x-amz-target': 'TrentService.CreateKey',
          // moto reads the region from the credential scope.
          authorization:
            'AWS4-HMAC-SHA256 Credential=testing/20260101/eu-west-1/kms/aws4_request, SignedHeaders=host, Signature=0',
        },
        body: JSON.stringify({ Description: 'driftless test key' }),
      });
      if (!response.ok)
        throw new Error(`KMS CreateKey: ${response.status} ${await response.text()}`);
      const body = (await response.json()) as { KeyMetadata: { Arn: string } };
      return body.KeyMetadata.Arn;
    },
    async stop() {
      process.removeListener('exit', kill);
      await server.stop();
    },
  };
}
