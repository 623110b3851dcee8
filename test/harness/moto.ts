/**
 * moto's server (PyPI, pinned in test/testbin/python/requirements.txt and
 * installed outside the checkout by test/testbin/python/install.sh): local
 * AWS APIs — KMS for SOPS, SNS, EventBridge and SQS for notifications, SQS
 * queues, Secrets Manager and SSM for the deployed functions — one
 * server per test file, on a free loopback port. moto accepts any
 * credentials; {@link MotoServer.env} points the AWS SDKs (Go's in sops,
 * JavaScript's in Driftless) at it through their own endpoint variables.
 */
import { join } from 'node:path';
import { freePort, startProcess, waitUntilReady } from './processes.ts';
import { REPO_ROOT, runBuildScript } from './testbin.ts';

const START_TIMEOUT_MS = 60_000;
export const MOTO_REGION = 'eu-west-1';

export interface MotoServer {
  /** `http://127.0.0.1:<port>` */
  readonly endpoint: string;
  /** Endpoint, region and throwaway credentials for the AWS SDKs. */
  readonly env: Readonly<Record<string, string>>;
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
export async function startMoto(): Promise<MotoServer> {
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
  return {
    endpoint,
    env: {
      AWS_ENDPOINT_URL_KMS: endpoint,
      AWS_ENDPOINT_URL_SNS: endpoint,
      AWS_ENDPOINT_URL_EVENTBRIDGE: endpoint,
      AWS_ENDPOINT_URL_SQS: endpoint,
      // The deployed functions' secret references (aws-secretsmanager:, aws-ssm:).
      AWS_ENDPOINT_URL_SECRETS_MANAGER: endpoint,
      AWS_ENDPOINT_URL_SSM: endpoint,
      AWS_REGION: MOTO_REGION,
      AWS_ACCESS_KEY_ID: 'testing',
      AWS_SECRET_ACCESS_KEY: 'testing',
    },
    async stop() {
      process.removeListener('exit', kill);
      await server.stop();
    },
  };
}
