/**
 * An API server that never answers, for the tests of what the CLI and the local context do
 * against one: a loopback TCP server that takes connections and never finishes the TLS handshake,
 * and the driftless.yaml and kubeconfig that reach it as a user's would.
 */
import { writeFile } from 'node:fs/promises';
import net, { type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { generateServingCertificate } from '../../harness/certificates.ts';

/** A TCP server that takes connections and sends nothing: the TLS handshake never ends. */
export interface SilentServer {
  readonly port: number;
  /** Connections opened and not yet closed by the client. */
  open(): number;
  opened(): number;
  stop(): void;
}

export async function silentServer(): Promise<SilentServer> {
  let opened = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    opened++;
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    // Read what the client sends (its ClientHello), so its closing is seen.
    socket.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    open: () => sockets.size,
    opened: () => opened,
    stop: () => {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

/**
 * Writes `dir`/driftless.yaml (an fs store in `dir`/store, the cluster `hung` at `port` through
 * `dir`/kubeconfig, and `track`, a flow-style track entry) and that kubeconfig; returns the
 * driftless.yaml's path.
 */
export async function writeHungClusterConfig(
  dir: string,
  port: number,
  track: string,
): Promise<string> {
  // Any CA will do: the handshake never gets as far as the certificate.
  const { caCert } = await generateServingCertificate(dir);
  await writeFile(
    join(dir, 'kubeconfig'),
    [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{name: hung, cluster: {server: "https://127.0.0.1:${port}", certificate-authority: ${caCert}}}]`,
      'users: [{name: admin, user: {token: not-a-secret}}]',
      'contexts: [{name: hung, context: {cluster: hung, user: admin}}]',
      'current-context: hung',
      '',
    ].join('\n'),
  );
  const config = join(dir, 'driftless.yaml');
  await writeFile(
    config,
    [
      `store: {type: fs, path: ${join(dir, 'store')}}`,
      `clusters: [{name: hung, kubeconfig: ${join(dir, 'kubeconfig')}}]`,
      `tracks: [${track}]`,
      '',
    ].join('\n'),
  );
  return config;
}
