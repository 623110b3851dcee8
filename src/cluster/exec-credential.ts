/**
 * Runs an exec credential plugin (kubelogin, aws eks get-token,
 * gke-gcloud-auth-plugin, ...) the way kubectl does: KUBERNETES_EXEC_INFO in
 * its environment, an ExecCredential JSON on its stdout. Driftless never runs
 * interactively, so plugins are told `interactive: false` and one that
 * insists on a terminal is refused.
 *
 * The plugin's environment is ours plus `exec.env`, built per call: the
 * process environment itself is never changed (it holds the function's own
 * AWS credentials).
 */
import { CredentialError } from './errors.ts';
import type { ExecPluginConfig, KubeClusterInfo } from './kubeconfig.ts';

/** What a plugin answered: a bearer token and/or a client certificate. */
export interface ExecCredential {
  readonly token?: string;
  readonly clientCertificateData?: string;
  readonly clientKeyData?: string;
  /** When kubectl would run the plugin again; never when the plugin gave none. */
  readonly expiresAt?: Date;
}

const TIMEOUT_MS = 60_000;
const OUTPUT_LIMIT = 1024 * 1024;

/** KUBERNETES_EXEC_INFO: what kubectl tells a plugin about the call. */
function execInfo(exec: ExecPluginConfig, cluster: KubeClusterInfo | undefined): string {
  const spec: Record<string, unknown> = { interactive: false };
  if (exec.provideClusterInfo && cluster) {
    spec.cluster = {
      server: cluster.server,
      ...(cluster.tlsServerName ? { 'tls-server-name': cluster.tlsServerName } : {}),
      ...(cluster.insecureSkipTlsVerify ? { 'insecure-skip-tls-verify': true } : {}),
      ...(cluster.certificateAuthorityData
        ? { 'certificate-authority-data': cluster.certificateAuthorityData.toString('base64') }
        : {}),
      ...(cluster.execExtension === undefined ? {} : { config: cluster.execExtension }),
    };
  }
  return JSON.stringify({ apiVersion: exec.apiVersion, kind: 'ExecCredential', spec });
}

/** Checks the plugin's answer; messages never quote it (it holds the credential). */
function parseAnswer(stdout: string, exec: ExecPluginConfig, label: string): ExecCredential {
  let answer: unknown;
  try {
    answer = JSON.parse(stdout);
  } catch {
    throw new CredentialError(`${label}: the plugin's output is not JSON`);
  }
  const { kind, apiVersion, status } = (answer ?? {}) as Record<string, unknown>;
  if (kind !== 'ExecCredential' || apiVersion !== exec.apiVersion) {
    throw new CredentialError(
      `${label}: the plugin answered ${String(apiVersion)} ${String(kind)}, expected ${exec.apiVersion} ExecCredential`,
    );
  }
  const fields = (status ?? {}) as Record<string, unknown>;
  const text = (name: string): string | undefined => {
    const value = fields[name];
    if (value === undefined || value === null || value === '') return undefined;
    if (typeof value !== 'string')
      throw new CredentialError(`${label}: status.${name} is not a string`);
    return value;
  };
  const token = text('token');
  const clientCertificateData = text('clientCertificateData');
  const clientKeyData = text('clientKeyData');
  const expiration = text('expirationTimestamp');
  if (Boolean(clientCertificateData) !== Boolean(clientKeyData)) {
    throw new CredentialError(
      `${label}: status has a client certificate without its key, or a key without its certificate`,
    );
  }
  if (!token && !clientCertificateData) {
    throw new CredentialError(`${label}: status has neither a token nor a client certificate`);
  }
  let expiresAt: Date | undefined;
  if (expiration !== undefined) {
    expiresAt = new Date(expiration);
    if (Number.isNaN(expiresAt.getTime()))
      throw new CredentialError(
        `${label}: status.expirationTimestamp "${expiration}" is not a time`,
      );
  }
  return {
    ...(token ? { token } : {}),
    ...(clientCertificateData ? { clientCertificateData, clientKeyData: clientKeyData! } : {}),
    ...(expiresAt ? { expiresAt } : {}),
  };
}

/** Runs the plugin once and returns its credential. */
export async function runExecPlugin(
  exec: ExecPluginConfig,
  cluster: KubeClusterInfo | undefined,
  label: string,
): Promise<ExecCredential> {
  if (exec.interactiveMode === 'Always') {
    throw new CredentialError(
      `${label}: interactiveMode Always needs a terminal, and driftless has none`,
    );
  }
  // Imported here: child_process (with dgram and net's extras) costs every command ~2.5 ms
  // to load, and only kubeconfigs with an exec plugin need it.
  const { spawn } = await import('node:child_process');
  const env: NodeJS.ProcessEnv = { ...process.env, KUBERNETES_EXEC_INFO: execInfo(exec, cluster) };
  for (const { name, value } of exec.env) env[name] = value;
  return new Promise((resolve, reject) => {
    const child = spawn(exec.command, [...exec.args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    // Our own timer rather than spawn's: spawn's is not cleared when the command is missing.
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, TIMEOUT_MS);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      if (stdout.length < OUTPUT_LIMIT) stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      if (stderr.length < OUTPUT_LIMIT) stderr += chunk;
    });
    child.on('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      const hint =
        error.code === 'ENOENT' && exec.installHint ? `\n${exec.installHint.trim()}` : '';
      reject(
        new CredentialError(`${label}: cannot run ${exec.command}: ${error.message}${hint}`, {
          cause: error,
        }),
      );
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code !== 0) {
        const why = timedOut
          ? `gave no answer within ${TIMEOUT_MS / 1000} s`
          : signal
            ? `was stopped by ${signal}`
            : `exited with ${code}`;
        // The plugin's own explanation, shortened, for people; it ends up in status and history.
        const said = maskTokenLikeWords(stderr.trim().split('\n').slice(-5).join('\n'));
        reject(new CredentialError(`${label}: ${exec.command} ${why}${said ? `: ${said}` : ''}`));
        return;
      }
      try {
        resolve(parseAnswer(stdout, exec, label));
      } catch (error) {
        reject(error as Error);
      }
    });
  });
}

/** What {@link maskTokenLikeWords} puts in place of a word that looks like a credential. */
const MASKED = '***';

/**
 * `text` with every word that looks like a credential replaced by `***`.
 *
 * Why: a failing plugin's stderr is quoted in the error, which reaches status,
 * history and logs, and plugins in debug mode or with a bug print tokens
 * there (a JWT, `k8s-aws-v1.<base64>`, an AWS secret key, a kubeadm bootstrap
 * token). Nothing tells us which words are secret, so the values of settings
 * named like credentials are hidden ({@link CREDENTIAL_SETTING}), and so are
 * words shaped like one (see {@link looksLikeCredential}). What people need from the
 * message stays: words, paths, host names, URLs without tokens, exit reasons,
 * and request ids (UUIDs: short hex runs between dashes, no upper case).
 */
function maskTokenLikeWords(text: string): string {
  return text
    .replace(CREDENTIAL_SETTING, (_setting, key: string, separator: string) => {
      return `${key}${separator}${MASKED}`;
    })
    .replace(/[A-Za-z0-9+/=_.-]{20,}/g, (word) => (looksLikeCredential(word) ? MASKED : word));
}

/**
 * A value given to a key named like a credential (`password: …`, `client_secret=…`,
 * `refresh_token: …`, `X-Api-Key: …`): hidden whatever it looks like, up to the next space
 * (or its closing quote), since a chosen password need not look random.
 */
const CREDENTIAL_SETTING =
  /\b([\w-]*(?:passw(?:or)?d|secret|token|api[_-]?key|credential|authorization)[\w-]*)(\s*[:=]\s*)(?:"[^"]*"|'[^']*'|\S+)/gi;

/**
 * Runs of 20 or more base64/base64url/JWT characters mixing upper case, lower case and
 * digits; 32 or more hex digits; a kubeadm bootstrap token (`[a-z0-9]{6}.[a-z0-9]{16}`); and
 * 24 or more letters and digits, both, with no separator between them (a generated password
 * or key: host names and paths have dots, dashes or slashes every few characters).
 */
function looksLikeCredential(word: string): boolean {
  const mixesCases = /[A-Z]/.test(word) && /[a-z]/.test(word) && /[0-9]/.test(word);
  return (
    mixesCases ||
    /[0-9a-fA-F]{32,}/.test(word) ||
    /(?:^|[^a-z0-9])[a-z0-9]{6}\.[a-z0-9]{16}(?![a-z0-9])/.test(word) ||
    (word.match(/[A-Za-z0-9]{24,}/g) ?? []).some((run) => /[0-9]/.test(run) && /[a-z]/i.test(run))
  );
}
