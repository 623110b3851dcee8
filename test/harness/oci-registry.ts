/**
 * Starts a real OCI registry (CNCF distribution, built from the pinned Go
 * module by `test/testbin/build.sh registry`) for Helm OCI chart tests: one
 * per test file, on a free loopback port, with TLS from a throwaway CA (real
 * registries speak HTTPS; helm and Driftless trust the CA through
 * `--ca-file` / `SSL_CERT_FILE`), filesystem storage and no auth.
 */
import { readFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { get } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateServingCertificate } from './certificates.ts';
import { freePort, startProcess, waitUntilReady } from './processes.ts';
import { buildComponents, isExecutable } from './testbin.ts';

const START_TIMEOUT_MS = 30_000;

export interface OciRegistry {
  /** `127.0.0.1:<port>`: `oci://<host>/charts` names a repository in it. */
  readonly host: string;
  /** The CA that signed the registry's certificate (PEM file). */
  readonly caFile: string;
  stop(): Promise<void>;
}

async function registryBinary(): Promise<string> {
  const dir = (await buildComponents(['registry'])).get('registry');
  const binary = join(dir ?? '', 'registry');
  if (!dir || !isExecutable(binary)) {
    throw new Error(
      `test/testbin/build.sh registry reported ${dir ?? 'no directory'}, but ${binary} is missing`,
    );
  }
  return binary;
}

/** GET /v2/ over TLS with the test CA: 200 once the registry serves. */
function answers(host: string, ca: string): Promise<boolean> {
  return new Promise((resolve) => {
    const request = get(`https://${host}/v2/`, { ca, timeout: 1_000 }, (response) => {
      response.resume();
      resolve(response.statusCode === 200);
    });
    request.on('error', () => resolve(false));
    request.on('timeout', () => request.destroy());
  });
}

/** Starts the registry and waits until `/v2/` answers; throws (with its output) when it cannot. */
export async function startOciRegistry(): Promise<OciRegistry> {
  const binary = await registryBinary();
  const dir = await mkdtemp(join(tmpdir(), 'driftless-registry-'));
  const { caCert, cert, key } = await generateServingCertificate(dir);
  const host = `127.0.0.1:${await freePort()}`;
  const config = join(dir, 'config.yml');
  await writeFile(
    config,
    [
      'version: 0.1',
      'log: {level: warn}',
      `storage: {filesystem: {rootdirectory: ${join(dir, 'data')}}}`,
      `http: {addr: "${host}", tls: {certificate: ${cert}, key: ${key}}}`,
      '',
    ].join('\n'),
  );
  const server = startProcess('registry', binary, ['serve', config], {
    env: { ...process.env, OTEL_TRACES_EXPORTER: 'none' },
  });
  const stop = async (): Promise<void> => {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const ca = await readFile(caCert, 'utf8');
    await waitUntilReady(server, () => answers(host, ca), START_TIMEOUT_MS);
  } catch (error) {
    await stop();
    throw error;
  }
  return { host, caFile: caCert, stop };
}
