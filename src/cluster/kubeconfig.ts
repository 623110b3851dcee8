/**
 * Reads kubeconfig files: parses them, merges a `$KUBECONFIG` list the way
 * kubectl does, and resolves one context to what a connection needs.
 *
 * Why not client-node's KubeConfig: it imports the whole generated
 * Kubernetes API (about 70 MB of memory and 0.9 MB of every bundle that
 * connects to a cluster, measured by `npm run bench`), and we only need the
 * file format. What is supported is what kubectl supports without plugins
 * compiled in: server, CA (file or data), insecure-skip-tls-verify,
 * tls-server-name, client certificates (file or data), token, tokenFile,
 * basic auth, impersonation and exec credential plugins. `auth-provider`
 * (which kubectl itself dropped for gcp and azure in 1.26) and `proxy-url`
 * are refused with a message saying so, never silently ignored.
 */
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join, resolve } from 'node:path';
import { CORE_SCHEMA, load, YAMLException } from 'js-yaml';
import { KubeconfigError } from './errors.ts';

/** An exec credential plugin (`users[].user.exec`). */
export interface ExecPluginConfig {
  readonly apiVersion: string;
  /** Absolute when the kubeconfig gave a relative path with a separator (kubectl resolves those). */
  readonly command: string;
  readonly args: readonly string[];
  readonly env: readonly { readonly name: string; readonly value: string }[];
  readonly interactiveMode?: string;
  readonly provideClusterInfo: boolean;
  readonly installHint?: string;
}

/** `users[].user` with file paths made absolute. */
export interface KubeUser {
  readonly token?: string;
  readonly tokenFile?: string;
  readonly username?: string;
  readonly password?: string;
  readonly clientCertificateData?: Buffer;
  readonly clientCertificateFile?: string;
  readonly clientKeyData?: Buffer;
  readonly clientKeyFile?: string;
  readonly exec?: ExecPluginConfig;
  readonly impersonate?: {
    readonly user?: string;
    readonly uid?: string;
    readonly groups: readonly string[];
    readonly extra: Readonly<Record<string, readonly string[]>>;
  };
}

/** `clusters[].cluster` with file paths made absolute. */
export interface KubeClusterInfo {
  readonly server: string;
  readonly certificateAuthorityData?: Buffer;
  readonly certificateAuthorityFile?: string;
  readonly insecureSkipTlsVerify: boolean;
  readonly tlsServerName?: string;
  /** `extensions[name=client.authentication.k8s.io/exec].extension`, handed to exec plugins. */
  readonly execExtension?: unknown;
}

/** A parsed (possibly merged) kubeconfig. */
export interface Kubeconfig {
  /** Where it came from, for messages: a path, or the secret it was read from. */
  readonly source: string;
  readonly currentContext?: string;
  /**
   * Clusters and users, each read when a context is resolved to it: an entry no chosen context
   * uses (an OIDC user, a proxy-url cluster) fails nothing, as kubectl reads the same file.
   */
  readonly clusters: ReadonlyMap<string, () => KubeClusterInfo>;
  readonly users: ReadonlyMap<string, () => KubeUser>;
  readonly contexts: ReadonlyMap<string, { readonly cluster: string; readonly user?: string }>;
}

/** One context, resolved: the cluster and the credentials to reach it with. */
export interface KubeContext {
  readonly name: string;
  readonly clusterName: string;
  readonly cluster: KubeClusterInfo;
  readonly userName?: string;
  readonly user: KubeUser;
  /** Where the kubeconfig came from, for messages. */
  readonly source: string;
}

type Json = Record<string, unknown>;

const EXEC_API_VERSIONS = [
  'client.authentication.k8s.io/v1',
  'client.authentication.k8s.io/v1beta1',
];
const EXEC_EXTENSION = 'client.authentication.k8s.io/exec';

/** Checks field types and names the offending field; one instance per kubeconfig read. */
class Reader {
  constructor(readonly source: string) {}

  fail(where: string, message: string): never {
    throw new KubeconfigError(`kubeconfig ${this.source}: ${where}: ${message}`);
  }

  object(value: unknown, where: string): Json {
    if (value === undefined || value === null) return {};
    if (typeof value !== 'object' || Array.isArray(value)) this.fail(where, 'must be a mapping');
    return value as Json;
  }

  list(value: unknown, where: string): unknown[] {
    if (value === undefined || value === null) return [];
    if (!Array.isArray(value)) this.fail(where, 'must be a list');
    return value;
  }

  string(value: unknown, where: string): string | undefined {
    if (value === undefined || value === null || value === '') return undefined;
    if (typeof value !== 'string') this.fail(where, 'must be a string');
    return value;
  }

  required(value: unknown, where: string): string {
    return this.string(value, where) ?? this.fail(where, 'is missing');
  }

  boolean(value: unknown, where: string): boolean {
    if (value === undefined || value === null) return false;
    if (typeof value !== 'boolean') this.fail(where, 'must be true or false');
    return value;
  }

  strings(value: unknown, where: string): string[] {
    return this.list(value, where).map((item, i) => this.required(item, `${where}[${i}]`));
  }

  base64(value: unknown, where: string): Buffer | undefined {
    const text = this.string(value, where);
    if (text === undefined) return undefined;
    if (!/^[A-Za-z0-9+/=\s]*$/.test(text)) this.fail(where, 'is not base64');
    return Buffer.from(text, 'base64');
  }
}

/** A path relative to the kubeconfig's directory, as kubectl resolves it. */
function absolute(path: string | undefined, baseDir: string): string | undefined {
  return path === undefined || isAbsolute(path) ? path : resolve(baseDir, path);
}

function parseCluster(r: Reader, raw: Json, where: string, baseDir: string): KubeClusterInfo {
  const server = r.required(raw.server, `${where}.server`);
  try {
    const url = new URL(server);
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error(url.protocol);
  } catch {
    r.fail(`${where}.server`, `"${server}" is not an http(s) URL`);
  }
  if (r.string(raw['proxy-url'], `${where}.proxy-url`) !== undefined) {
    r.fail(`${where}.proxy-url`, 'is not supported; reach the API server directly');
  }
  const certificateAuthorityData = r.base64(
    raw['certificate-authority-data'],
    `${where}.certificate-authority-data`,
  );
  const certificateAuthorityFile = absolute(
    r.string(raw['certificate-authority'], `${where}.certificate-authority`),
    baseDir,
  );
  const insecureSkipTlsVerify = r.boolean(
    raw['insecure-skip-tls-verify'],
    `${where}.insecure-skip-tls-verify`,
  );
  if (insecureSkipTlsVerify && (certificateAuthorityData || certificateAuthorityFile)) {
    // kubectl refuses this combination too: it is never what was meant.
    r.fail(where, 'insecure-skip-tls-verify cannot be combined with a certificate authority');
  }
  const tlsServerName = r.string(raw['tls-server-name'], `${where}.tls-server-name`);
  const extensions = r
    .list(raw.extensions, `${where}.extensions`)
    .map((item, i) => r.object(item, `${where}.extensions[${i}]`));
  const execExtension = extensions.find((e) => e.name === EXEC_EXTENSION)?.extension;
  return {
    server: server.replace(/\/$/, ''),
    insecureSkipTlsVerify,
    ...(certificateAuthorityData ? { certificateAuthorityData } : {}),
    ...(certificateAuthorityFile ? { certificateAuthorityFile } : {}),
    ...(tlsServerName ? { tlsServerName } : {}),
    ...(execExtension === undefined ? {} : { execExtension }),
  };
}

function parseExec(r: Reader, raw: Json, where: string, baseDir: string): ExecPluginConfig {
  const apiVersion = r.required(raw.apiVersion, `${where}.apiVersion`);
  if (!EXEC_API_VERSIONS.includes(apiVersion)) {
    r.fail(`${where}.apiVersion`, `"${apiVersion}" is not one of ${EXEC_API_VERSIONS.join(', ')}`);
  }
  const command = r.required(raw.command, `${where}.command`);
  const env = r.list(raw.env, `${where}.env`).map((item, i) => {
    const entry = r.object(item, `${where}.env[${i}]`);
    return {
      name: r.required(entry.name, `${where}.env[${i}].name`),
      value: r.string(entry.value, `${where}.env[${i}].value`) ?? '',
    };
  });
  const interactiveMode = r.string(raw.interactiveMode, `${where}.interactiveMode`);
  if (
    interactiveMode !== undefined &&
    !['Never', 'IfAvailable', 'Always'].includes(interactiveMode)
  )
    r.fail(`${where}.interactiveMode`, 'must be Never, IfAvailable or Always');
  const installHint = r.string(raw.installHint, `${where}.installHint`);
  return {
    apiVersion,
    // kubectl resolves a relative command with a separator against the kubeconfig's directory.
    command: command.includes('/') ? (absolute(command, baseDir) ?? command) : command,
    args: r.strings(raw.args, `${where}.args`),
    env,
    provideClusterInfo: r.boolean(raw.provideClusterInfo, `${where}.provideClusterInfo`),
    ...(interactiveMode === undefined ? {} : { interactiveMode }),
    ...(installHint === undefined ? {} : { installHint }),
  };
}

function parseUser(r: Reader, raw: Json, where: string, baseDir: string): KubeUser {
  const provider = raw['auth-provider'];
  if (provider !== undefined && provider !== null) {
    const name = r.object(provider, `${where}.auth-provider`).name;
    r.fail(
      `${where}.auth-provider`,
      `"${String(name)}" is not supported (kubectl itself dropped the gcp and azure providers); ` +
        'use an exec credential plugin such as kubelogin or gke-gcloud-auth-plugin',
    );
  }
  const token = r.string(raw.token, `${where}.token`);
  const tokenFile = absolute(r.string(raw.tokenFile, `${where}.tokenFile`), baseDir);
  const username = r.string(raw.username, `${where}.username`);
  const password = r.string(raw.password, `${where}.password`);
  if ((token || tokenFile) && (username || password)) {
    r.fail(where, 'has both a token and a username/password; keep one');
  }
  const clientCertificateData = r.base64(
    raw['client-certificate-data'],
    `${where}.client-certificate-data`,
  );
  const clientKeyData = r.base64(raw['client-key-data'], `${where}.client-key-data`);
  const clientCertificateFile = absolute(
    r.string(raw['client-certificate'], `${where}.client-certificate`),
    baseDir,
  );
  const clientKeyFile = absolute(r.string(raw['client-key'], `${where}.client-key`), baseDir);
  if (
    Boolean(clientCertificateData ?? clientCertificateFile) !==
    Boolean(clientKeyData ?? clientKeyFile)
  ) {
    r.fail(where, 'a client certificate needs its key and a key its certificate');
  }
  const exec =
    raw.exec === undefined || raw.exec === null
      ? undefined
      : parseExec(r, r.object(raw.exec, `${where}.exec`), `${where}.exec`, baseDir);
  const as = r.string(raw.as, `${where}.as`);
  const asUid = r.string(raw['as-uid'], `${where}.as-uid`);
  const asGroups = r.strings(raw['as-groups'], `${where}.as-groups`);
  const extraRaw = r.object(raw['as-user-extra'], `${where}.as-user-extra`);
  const extra = Object.fromEntries(
    Object.entries(extraRaw).map(([key, values]) => [
      key,
      r.strings(values, `${where}.as-user-extra.${key}`),
    ]),
  );
  const impersonating = as || asUid || asGroups.length > 0 || Object.keys(extra).length > 0;
  return {
    ...(token ? { token } : {}),
    ...(tokenFile ? { tokenFile } : {}),
    ...(username ? { username } : {}),
    ...(password ? { password } : {}),
    ...(clientCertificateData ? { clientCertificateData } : {}),
    ...(clientCertificateFile ? { clientCertificateFile } : {}),
    ...(clientKeyData ? { clientKeyData } : {}),
    ...(clientKeyFile ? { clientKeyFile } : {}),
    ...(exec ? { exec } : {}),
    ...(impersonating
      ? {
          impersonate: {
            ...(as ? { user: as } : {}),
            ...(asUid ? { uid: asUid } : {}),
            groups: asGroups,
            extra,
          },
        }
      : {}),
  };
}

/** `read`, called once: later calls give its value (or throw its error) again. */
function once<T>(read: () => T): () => T {
  let result: { value: T } | { error: unknown } | undefined;
  return () => {
    result ??= (() => {
      try {
        return { value: read() };
      } catch (error) {
        return { error };
      }
    })();
    if ('error' in result) throw result.error;
    return result.value;
  };
}

/** Reads `name: ..., <key>: {...}` entries; the first entry of a name wins, as in kubectl. */
function namedEntries<T>(
  r: Reader,
  raw: unknown,
  field: 'clusters' | 'users' | 'contexts',
  key: 'cluster' | 'user' | 'context',
  parse: (value: Json, where: string) => T,
): Map<string, T> {
  const entries = new Map<string, T>();
  r.list(raw, field).forEach((item, i) => {
    const entry = r.object(item, `${field}[${i}]`);
    const name = r.required(entry.name, `${field}[${i}].name`);
    const where = `${field}[${i}] ("${name}").${key}`;
    if (!entries.has(name)) entries.set(name, parse(r.object(entry[key], where), where));
  });
  return entries;
}

/**
 * Parses kubeconfig text. Relative file paths are resolved against `baseDir`
 * (the file's directory; the working directory for a kubeconfig from a secret).
 *
 * @throws {KubeconfigError} naming the source and the field.
 */
export function parseKubeconfig(text: string, source: string, baseDir: string): Kubeconfig {
  const r = new Reader(source);
  let document: unknown;
  try {
    document = load(text, { schema: CORE_SCHEMA });
  } catch (error) {
    if (!(error instanceof YAMLException)) throw error;
    // The reason only: a kubeconfig holds secrets, and the excerpt would quote them.
    const line = error.mark ? ` (line ${error.mark.line + 1})` : '';
    throw new KubeconfigError(`kubeconfig ${source}: invalid YAML${line}: ${error.reason}`);
  }
  const root = r.object(document, 'document');
  return {
    source,
    ...(r.string(root['current-context'], 'current-context') === undefined
      ? {}
      : { currentContext: root['current-context'] as string }),
    clusters: namedEntries(r, root.clusters, 'clusters', 'cluster', (value, where) =>
      once(() => parseCluster(r, value, where, baseDir)),
    ),
    users: namedEntries(r, root.users, 'users', 'user', (value, where) =>
      once(() => parseUser(r, value, where, baseDir)),
    ),
    contexts: namedEntries(r, root.contexts, 'contexts', 'context', (value, where) => {
      const user = r.string(value.user, `${where}.user`);
      return { cluster: r.required(value.cluster, `${where}.cluster`), ...(user ? { user } : {}) };
    }),
  };
}

/** Reads one kubeconfig file. */
export function readKubeconfigFile(path: string): Kubeconfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const reason =
      (error as NodeJS.ErrnoException).code === 'ENOENT'
        ? 'does not exist'
        : `cannot be read: ${(error as Error).message}`;
    throw new KubeconfigError(`kubeconfig ${path} ${reason}`, { cause: error });
  }
  return parseKubeconfig(text, path, dirname(resolve(path)));
}

/** Later kubeconfigs fill in what earlier ones do not define (kubectl's `$KUBECONFIG` merge). */
function mergeKubeconfigs(configs: readonly Kubeconfig[]): Kubeconfig {
  const merge = <T>(pick: (c: Kubeconfig) => ReadonlyMap<string, T>): Map<string, T> => {
    const merged = new Map<string, T>();
    for (const config of configs) {
      for (const [name, value] of pick(config)) if (!merged.has(name)) merged.set(name, value);
    }
    return merged;
  };
  const currentContext = configs.find((c) => c.currentContext !== undefined)?.currentContext;
  return {
    source: configs.map((c) => c.source).join(delimiter),
    ...(currentContext === undefined ? {} : { currentContext }),
    clusters: merge((c) => c.clusters),
    users: merge((c) => c.users),
    contexts: merge((c) => c.contexts),
  };
}

/**
 * The kubeconfig kubectl would use: the files listed in `$KUBECONFIG`
 * (missing ones skipped, as kubectl does), else `~/.kube/config`.
 */
export function readDefaultKubeconfig(
  env: Readonly<Record<string, string | undefined>> = process.env,
): Kubeconfig {
  const listed = (env.KUBECONFIG ?? '').split(delimiter).filter((path) => path !== '');
  const home = env.HOME ?? env.USERPROFILE ?? homedir();
  const candidates = listed.length > 0 ? listed : [join(home, '.kube', 'config')];
  const present = candidates.filter((path) => existsSync(path));
  if (present.length === 0) {
    throw new KubeconfigError(
      listed.length > 0
        ? `no kubeconfig: none of the files in KUBECONFIG exists (${listed.join(delimiter)})`
        : `no kubeconfig: KUBECONFIG is not set and ${candidates[0]} does not exist`,
    );
  }
  const configs = present.map(readKubeconfigFile);
  return configs.length === 1 ? configs[0]! : mergeKubeconfigs(configs);
}

/**
 * The context named `name`, or the current context.
 *
 * @throws {KubeconfigError} when it, its cluster or its user is not defined.
 */
export function resolveContext(config: Kubeconfig, name?: string): KubeContext {
  const contextName = name ?? config.currentContext;
  const available = [...config.contexts.keys()].join(', ') || 'none';
  if (contextName === undefined) {
    throw new KubeconfigError(
      `kubeconfig ${config.source}: no current-context; name one of its contexts (${available}) as the cluster's context`,
    );
  }
  const context = config.contexts.get(contextName);
  if (!context) {
    throw new KubeconfigError(
      `kubeconfig ${config.source}: no context "${contextName}" (contexts: ${available})`,
    );
  }
  const cluster = config.clusters.get(context.cluster)?.();
  if (!cluster) {
    throw new KubeconfigError(
      `kubeconfig ${config.source}: context "${contextName}" names cluster "${context.cluster}", which is not defined`,
    );
  }
  const user = context.user === undefined ? {} : config.users.get(context.user)?.();
  if (!user) {
    throw new KubeconfigError(
      `kubeconfig ${config.source}: context "${contextName}" names user "${context.user}", which is not defined`,
    );
  }
  return {
    name: contextName,
    clusterName: context.cluster,
    cluster,
    ...(context.user === undefined ? {} : { userName: context.user }),
    user,
    source: config.source,
  };
}
