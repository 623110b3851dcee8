/**
 * What the transport needs to reach one API server: its URL, how to trust
 * it, and where credentials for each request come from. Built from a
 * kubeconfig context here, or from EKS (src/aws/eks-endpoint.ts).
 *
 * Credentials that expire are refreshed the way kubectl refreshes them: a
 * token file is re-read every minute (projected service-account tokens
 * rotate), an exec plugin runs again when its answer expires, and after a
 * 401 the transport asks for fresh credentials once.
 */
import { readFileSync } from 'node:fs';
import { runExecPlugin, type ExecCredential } from './exec-credential.ts';
import { CredentialError, KubeconfigError } from './errors.ts';
import type { KubeContext, KubeUser } from './kubeconfig.ts';

/** A client certificate and its key, PEM. */
export interface ClientCertificate {
  readonly cert: Buffer | string;
  readonly key: Buffer | string;
}

/** What to send with a request. */
export interface RequestCredentials {
  readonly headers: Readonly<Record<string, string | readonly string[]>>;
  /** Kept the same object while unchanged: the transport keys its TLS agent on it. */
  readonly clientCertificate?: ClientCertificate;
}

export interface CredentialSource {
  /** Credentials for the next request; cheap when nothing expired. */
  current(): Promise<RequestCredentials>;
  /** The server answered 401: forget what is cached so `current` fetches anew. */
  invalidate(): void;
}

export interface ClusterEndpoint {
  /** `https://host:port[/path]`, no trailing slash. */
  readonly server: string;
  readonly ca?: Buffer;
  readonly insecureSkipTlsVerify: boolean;
  readonly tlsServerName?: string;
  readonly credentials: CredentialSource;
  /** Names the endpoint in messages: context and kubeconfig. */
  readonly label: string;
}

const TOKEN_FILE_TTL_MS = 60_000;
/** An exec credential this close to its expiry is replaced before use. */
const EXEC_EXPIRY_MARGIN_MS = 10_000;

export interface EndpointOptions {
  readonly now?: () => number;
  /** Runs exec plugins; replaced in tests. */
  readonly runExec?: typeof runExecPlugin;
}

function readPem(path: string, what: string, label: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new KubeconfigError(
      `${label}: cannot read ${what} ${path}: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
}

/** Headers that do not change: basic auth, impersonation. */
function staticHeaders(user: KubeUser): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  if (user.username !== undefined || user.password !== undefined) {
    const pair = `${user.username ?? ''}:${user.password ?? ''}`;
    headers.authorization = `Basic ${Buffer.from(pair).toString('base64')}`;
  }
  const as = user.impersonate;
  if (as) {
    if (as.user !== undefined) headers['impersonate-user'] = as.user;
    if (as.uid !== undefined) headers['impersonate-uid'] = as.uid;
    if (as.groups.length > 0) headers['impersonate-group'] = [...as.groups];
    for (const [key, values] of Object.entries(as.extra)) {
      headers[`impersonate-extra-${encodeURIComponent(key)}`] = [...values];
    }
  }
  return headers;
}

/** The credentials of a kubeconfig user; see the module comment for refreshing. */
export function userCredentials(
  context: KubeContext,
  label: string,
  options: EndpointOptions = {},
): CredentialSource {
  const now = options.now ?? Date.now;
  const runExec = options.runExec ?? runExecPlugin;
  const { user } = context;
  const fixed = staticHeaders(user);

  const certificate = user.clientCertificateData ?? user.clientCertificateFile;
  const staticCertificate: ClientCertificate | undefined = certificate
    ? {
        cert:
          user.clientCertificateData ??
          readPem(user.clientCertificateFile!, 'client-certificate', label),
        key: user.clientKeyData ?? readPem(user.clientKeyFile!, 'client-key', label),
      }
    : undefined;

  let fileToken: { value: string; readAt: number } | undefined;
  const tokenFromFile = (path: string): string => {
    if (fileToken === undefined || now() - fileToken.readAt > TOKEN_FILE_TTL_MS) {
      let value: string;
      try {
        value = readFileSync(path, 'utf8').trim();
      } catch (error) {
        throw new CredentialError(
          `${label}: cannot read tokenFile ${path}: ${(error as Error).message}`,
          {
            cause: error,
          },
        );
      }
      fileToken = { value, readAt: now() };
    }
    return fileToken.value;
  };

  let execAnswer: { credential: ExecCredential; certificate?: ClientCertificate } | undefined;
  let execPending: Promise<void> | undefined;
  const execCredential = async (): Promise<NonNullable<typeof execAnswer>> => {
    const expiresAt = execAnswer?.credential.expiresAt?.getTime();
    if (
      execAnswer === undefined ||
      (expiresAt !== undefined && expiresAt - now() < EXEC_EXPIRY_MARGIN_MS)
    ) {
      // One plugin run at a time, however many requests are waiting for it.
      execPending ??= runExec(user.exec!, context.cluster, `${label}: exec plugin`)
        .then((credential) => {
          execAnswer = {
            credential,
            ...(credential.clientCertificateData
              ? {
                  certificate: {
                    cert: credential.clientCertificateData,
                    key: credential.clientKeyData!,
                  },
                }
              : {}),
          };
        })
        .finally(() => (execPending = undefined));
      await execPending;
    }
    return execAnswer!;
  };

  return {
    async current() {
      const headers = { ...fixed };
      let clientCertificate = staticCertificate;
      // kubectl's precedence: a token (or token file) wins over an exec plugin.
      const token = user.token ?? (user.tokenFile ? tokenFromFile(user.tokenFile) : undefined);
      if (token) {
        headers.authorization = `Bearer ${token}`;
      } else if (user.exec) {
        const answer = await execCredential();
        if (answer.credential.token) headers.authorization = `Bearer ${answer.credential.token}`;
        clientCertificate = answer.certificate ?? clientCertificate;
      }
      return clientCertificate ? { headers, clientCertificate } : { headers };
    },
    invalidate() {
      fileToken = undefined;
      execAnswer = undefined;
    },
  };
}

/** The endpoint of a kubeconfig context. */
export function endpointFromContext(
  context: KubeContext,
  options: EndpointOptions = {},
): ClusterEndpoint {
  const label = `context "${context.name}" of kubeconfig ${context.source}`;
  const { cluster } = context;
  const ca =
    cluster.certificateAuthorityData ??
    (cluster.certificateAuthorityFile
      ? readPem(cluster.certificateAuthorityFile, 'certificate-authority', label)
      : undefined);
  return {
    server: cluster.server,
    insecureSkipTlsVerify: cluster.insecureSkipTlsVerify,
    ...(ca ? { ca } : {}),
    ...(cluster.tlsServerName ? { tlsServerName: cluster.tlsServerName } : {}),
    credentials: userCredentials(context, label, options),
    label,
  };
}
