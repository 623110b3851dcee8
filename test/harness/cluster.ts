/**
 * A real Kubernetes control plane for tests, started envtest-style: etcd and
 * kube-apiserver on loopback ports with generated certificates and RBAC, and
 * kube-controller-manager so garbage collection and namespace deletion happen.
 */
import { request } from 'node:https';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminKubeconfig, generateCertificates, type ClusterCertificates } from './certificates.ts';
import { freePort, startProcess, waitUntilReady, type ManagedProcess } from './processes.ts';
import { controlPlaneBinaries, type ControlPlaneBinaries } from './testbin.ts';

/** envtest's variable for how long the control plane may take to start, e.g. "60s". */
function startTimeoutMs(env: NodeJS.ProcessEnv): number {
  const value = env.KUBEBUILDER_CONTROLPLANE_START_TIMEOUT;
  const match = value ? /^(\d+)(ms|s|m)?$/.exec(value) : null;
  if (!match) return 60_000;
  const unit = match[2] === 'ms' ? 1 : match[2] === 'm' ? 60_000 : 1000;
  return Number(match[1]) * unit;
}

export interface TestClusterOptions {
  /** Where certificates, data and logs go; a fresh temp dir when omitted (and removed on stop). */
  readonly dir?: string;
  /** Let the processes outlive this one (`npm run cluster:up`). */
  readonly detached?: boolean;
  readonly binaries?: ControlPlaneBinaries;
}

export interface TestCluster {
  /** https://127.0.0.1:<port> */
  readonly server: string;
  readonly kubeconfigPath: string;
  readonly kubeconfig: string;
  readonly binaries: ControlPlaneBinaries;
  readonly processes: readonly ManagedProcess[];
  /** Stops controller-manager, API server and etcd, in that order. */
  stop(): Promise<void>;
  /**
   * Kills the API server with SIGKILL (a crash, not a shutdown) and resolves once it is gone;
   * etcd and the controller-manager keep running. For fault tests.
   */
  killApiServer(): Promise<void>;
  /** Starts the API server again on the same port, certificates and etcd; resolves once ready. */
  restartApiServer(): Promise<void>;
}

/** GET `path` on the API server with the admin certificate; true on HTTP 200 with body "ok". */
export async function probeApiServer(
  server: string,
  path: string,
  certs: ClusterCertificates,
): Promise<boolean> {
  const [ca, cert, key] = await Promise.all([
    readFile(certs.caCert),
    readFile(certs.adminCert),
    readFile(certs.adminKey),
  ]);
  return httpsGetOk(new URL(path, server), { ca, cert, key });
}

function httpsGetOk(
  url: URL,
  tls: { ca?: Buffer; cert?: Buffer; key?: Buffer; rejectUnauthorized?: boolean },
): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(url, { ...tls, timeout: 2000 }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve(res.statusCode === 200 && body.trim() === 'ok'));
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

async function startEtcd(
  bin: string,
  dir: string,
  detached: boolean,
  timeoutMs: number,
): Promise<{ process: ManagedProcess; url: string }> {
  const [clientPort, peerPort] = [await freePort(), await freePort()];
  const url = `http://127.0.0.1:${clientPort}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  const process = startProcess(
    'etcd',
    bin,
    [
      `--data-dir=${join(dir, 'etcd-data')}`,
      `--listen-client-urls=${url}`,
      `--advertise-client-urls=${url}`,
      `--listen-peer-urls=${peer}`,
      `--initial-advertise-peer-urls=${peer}`,
      `--initial-cluster=default=${peer}`,
      // Tests throw their data away: skipping fsync makes etcd several times faster.
      '--unsafe-no-fsync=true',
      '--log-level=warn',
    ],
    { detached, logFile: join(dir, 'etcd.log') },
  );
  await waitUntilReady(process, async () => (await fetch(`${url}/health`)).ok, timeoutMs);
  return { process, url };
}

async function startApiServer(
  bin: string,
  dir: string,
  etcdUrl: string,
  certs: ClusterCertificates,
  detached: boolean,
  timeoutMs: number,
  port?: number,
): Promise<{ process: ManagedProcess; server: string }> {
  port ??= await freePort();
  const server = `https://127.0.0.1:${port}`;
  const process = startProcess(
    'kube-apiserver',
    bin,
    [
      `--etcd-servers=${etcdUrl}`,
      `--secure-port=${port}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      `--tls-cert-file=${certs.servingCert}`,
      `--tls-private-key-file=${certs.servingKey}`,
      `--client-ca-file=${certs.caCert}`,
      '--authorization-mode=RBAC',
      '--service-cluster-ip-range=10.0.0.0/24',
      '--allow-privileged=true',
      // As envtest: no service-account admission, so pods need no token controller.
      '--disable-admission-plugins=ServiceAccount',
      `--service-account-issuer=${server}/`,
      `--service-account-key-file=${certs.serviceAccountPublicKey}`,
      `--service-account-signing-key-file=${certs.serviceAccountKey}`,
      `--cert-dir=${join(dir, 'apiserver-certs')}`,
    ],
    { detached, logFile: join(dir, 'kube-apiserver.log') },
  );
  await waitUntilReady(process, () => probeApiServer(server, '/readyz', certs), timeoutMs);
  return { process, server };
}

async function startControllerManager(
  bin: string,
  dir: string,
  kubeconfigPath: string,
  certs: ClusterCertificates,
  detached: boolean,
  timeoutMs: number,
): Promise<ManagedProcess> {
  const port = await freePort();
  const process = startProcess(
    'kube-controller-manager',
    bin,
    [
      `--kubeconfig=${kubeconfigPath}`,
      `--authentication-kubeconfig=${kubeconfigPath}`,
      `--authorization-kubeconfig=${kubeconfigPath}`,
      `--service-account-private-key-file=${certs.serviceAccountKey}`,
      `--root-ca-file=${certs.caCert}`,
      '--bind-address=127.0.0.1',
      `--secure-port=${port}`,
      `--cert-dir=${join(dir, 'controller-manager-certs')}`,
      // One controller-manager per cluster: leader election only slows its start.
      '--leader-elect=false',
    ],
    { detached, logFile: join(dir, 'kube-controller-manager.log') },
  );
  // /healthz is always allowed; the serving certificate is self-signed.
  await waitUntilReady(
    process,
    () => httpsGetOk(new URL(`https://127.0.0.1:${port}/healthz`), { rejectUnauthorized: false }),
    timeoutMs,
  );
  return process;
}

/** Starts etcd, kube-apiserver and kube-controller-manager; throws (never skips) if any cannot start. */
export async function startTestCluster(options: TestClusterOptions = {}): Promise<TestCluster> {
  const binaries = options.binaries ?? (await controlPlaneBinaries());
  const ownsDir = options.dir === undefined;
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), 'driftless-cluster-')));
  await mkdir(dir, { recursive: true });
  const detached = options.detached ?? false;
  const timeoutMs = startTimeoutMs(process.env);
  const started: ManagedProcess[] = [];
  const stop = async (): Promise<void> => {
    for (const p of [...started].reverse()) await p.stop();
    if (ownsDir) await rm(dir, { recursive: true, force: true });
  };
  try {
    const certs = await generateCertificates(dir);
    const etcd = await startEtcd(binaries.etcd, dir, detached, timeoutMs);
    started.push(etcd.process);
    // The same API server at start and at a fault test's restart (on the port it had).
    const launchApiServer = (port?: number) =>
      startApiServer(binaries.kubeApiserver, dir, etcd.url, certs, detached, timeoutMs, port);
    const api = await launchApiServer();
    started.push(api.process);
    const kubeconfig = await adminKubeconfig(api.server, certs);
    const kubeconfigPath = join(dir, 'kubeconfig');
    await writeFile(kubeconfigPath, kubeconfig, { mode: 0o600 });
    started.push(
      await startControllerManager(
        binaries.kubeControllerManager,
        dir,
        kubeconfigPath,
        certs,
        detached,
        timeoutMs,
      ),
    );
    const apiIndex = started.indexOf(api.process);
    const apiPort = Number(new URL(api.server).port);
    const killApiServer = async (): Promise<void> => {
      const current = started[apiIndex]!;
      current.child.kill('SIGKILL');
      await current.exited;
    };
    const restartApiServer = async (): Promise<void> => {
      started[apiIndex] = (await launchApiServer(apiPort)).process;
    };
    return {
      server: api.server,
      kubeconfigPath,
      kubeconfig,
      binaries,
      processes: started,
      stop,
      killApiServer,
      restartApiServer,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
