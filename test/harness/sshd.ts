/**
 * A real OpenSSH server (Debian's openssh-server, `/usr/sbin/sshd`) on a free
 * loopback port, for Git over SSH: its own host key, an `authorized_keys`
 * holding the test deploy keys, logins as the user running the tests, and
 * `git-upload-pack` from the system's git serving the test Git server's bare
 * repositories by path. Deploy keys are made with the real ssh-keygen.
 */
import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, startProcess, waitUntilReady } from './processes.ts';
import { createConnection } from 'node:net';

const run = promisify(execFile);
const SSHD = process.env.DRIFTLESS_SSHD ?? '/usr/sbin/sshd';

export interface SshKey {
  readonly privateKey: string;
  readonly publicKey: string;
  readonly passphrase?: string;
}

/** A key pair from the real ssh-keygen. */
export async function sshKey(
  type: 'ed25519' | 'ecdsa' | 'rsa' = 'ed25519',
  passphrase?: string,
): Promise<SshKey> {
  const dir = await mkdtemp(join(tmpdir(), 'driftless-sshkey-'));
  try {
    const file = join(dir, 'key');
    await run('ssh-keygen', [
      '-q',
      '-t',
      type,
      '-N',
      passphrase ?? '',
      '-C',
      `driftless-${type}`,
      '-f',
      file,
    ]);
    return {
      privateKey: await readFile(file, 'utf8'),
      publicKey: (await readFile(`${file}.pub`, 'utf8')).trim(),
      ...(passphrase === undefined ? {} : { passphrase }),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export interface SshServer {
  readonly port: number;
  /** The login name (the user running the tests). */
  readonly user: string;
  /** The known_hosts line of this server (`[127.0.0.1]:<port> <type> <key>`). */
  readonly knownHostsLine: string;
  /** `ssh://<user>@127.0.0.1:<port><path>` of a bare repository at `path`. */
  urlOf(path: string): string;
  stop(): Promise<void>;
}

/** Starts sshd; throws with its log when it cannot start. */
export async function startSshd(authorizedKeys: readonly string[]): Promise<SshServer> {
  const dir = await mkdtemp(join(tmpdir(), 'driftless-sshd-'));
  const port = await freePort();
  const hostKey = join(dir, 'host_key');
  await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', hostKey]);
  const authorized = join(dir, 'authorized_keys');
  await writeFile(authorized, `${authorizedKeys.join('\n')}\n`);
  await chmod(authorized, 0o600);
  const config = join(dir, 'sshd_config');
  await writeFile(
    config,
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${hostKey}`,
      `AuthorizedKeysFile ${authorized}`,
      `PidFile ${join(dir, 'sshd.pid')}`,
      'UsePAM no',
      'StrictModes no',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PermitRootLogin prohibit-password',
      '',
    ].join('\n'),
  );
  // sshd wants its privilege-separation directory, as the Debian service creates it.
  await mkdir('/run/sshd', { recursive: true }).catch(() => undefined);
  const server = startProcess('sshd', SSHD, ['-D', '-e', '-f', config], { env: process.env });
  try {
    await waitUntilReady(
      server,
      () =>
        new Promise<boolean>((resolve) => {
          const socket = createConnection({ host: '127.0.0.1', port }, () => {
            socket.destroy();
            resolve(true);
          });
          socket.on('error', () => resolve(false));
        }),
      15_000,
    );
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  const [type, key] = (await readFile(`${hostKey}.pub`, 'utf8')).trim().split(/\s+/);
  const user = userInfo().username;
  return {
    port,
    user,
    knownHostsLine: `[127.0.0.1]:${port} ${type} ${key}`,
    urlOf: (path) => `ssh://${user}@127.0.0.1:${port}${path}`,
    async stop() {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
