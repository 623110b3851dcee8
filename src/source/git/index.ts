/**
 * The Git source: the {@link GitSource} port, the entry of src/source/git/.
 * Which path each operation takes, and why, is in docs/git-source.md: in
 * short, refs and commits travel over our own smart-HTTP client
 * (upload-pack.ts, pack-index.ts), every object is read by one reader
 * (object-reader.ts), every ref on disk by refs-on-disk.ts, and
 * isomorphic-git provides the HTTP client and writes the cache's refs.
 *
 * - https/http repositories: refs read from one ref advertisement; commits
 *   fetched shallow into a cache under `cacheDir` (one bare repository per
 *   normalised URL, reused between runs so the next commit is an incremental
 *   fetch); one operation at a time per cache directory in this process.
 * - file:// URLs and local paths: read in place, nothing cloned or written.
 * - SSH is refused (isomorphic-git has no SSH transport).
 *
 * Credentials come from `readSecret` for each call and go only into the
 * `Authorization` header of requests to the repository: never into URLs,
 * cache keys, logs or messages.
 */
import { createHash } from 'node:crypto';
import type { HttpClient } from 'isomorphic-git';
import type {
  CommitInfo,
  CommitRequest,
  CommitResult,
  GitSource,
  ReadScope,
  ResolvedRevision,
  SourceCall,
  TrackSource,
} from '../ports.ts';
import type { RevisionFile } from '../../render/types.ts';
import type { SecretReader } from './credentials.ts';
import {
  GitAuthError,
  GitRefNotFoundError,
  GitRepositoryError,
  type GitErrorContext,
} from './errors.ts';
import { parseCommitInfo } from './commit-info.ts';
import { KeyQueue } from './key-queue.ts';
import type { SshSessionPool } from './ssh-transport.ts';
import { LocalRepository } from './local-repository.ts';
import type { PushRemote } from './push-commit.ts';
import { addSecretValues } from '../../redact.ts';
import type { CapabilityCache, RemoteRepository } from './remote-repository.ts';
import { GIT_HTTP_IDLE_TIMEOUT_MS, withIdleTimeout, withSignal } from './http-idle-timeout.ts';
import { displayUrl, locateRepository, type RepositoryLocation } from './repository-location.ts';
import { classifyReference } from './select-ref.ts';
import { isFullCommitId } from '../../object-id.ts';

export interface GitSourceOptions {
  /** Directory holding one cache repository per remote repository; created when missing. */
  readonly cacheDir: string;
  /** Reads the secret of a track's `auth`. */
  readonly readSecret: SecretReader;
  /** HTTP client (isomorphic-git's shape), for ref listing and fetches; default `isomorphic-git/http/node`. */
  readonly http?: HttpClient;
  /** How long an HTTP exchange or SSH session may stay silent before it fails (a hung host); default 60 s. */
  readonly idleTimeoutMs?: number;
  /** Base of relative local repository paths; default the process' working directory. */
  readonly cwd?: string;
}

/**
 * `credentials`, their password (a token, an App's installation token) added to the values no
 * output may hold: a Git server may quote it back (`ERR access denied for x-access-token:...`).
 */
function hidden<T extends { readonly password: string } | undefined>(credentials: T): T {
  if (credentials !== undefined) addSecretValues([credentials.password]);
  return credentials;
}

/**
 * Where a call's contact with the server is recorded in its job's scope, and looked up: the
 * track, the URL and the credentials, so that one track's contact never counts for another
 * track, nor for other credentials (a password changed mid-job is shown to the server again).
 * The credentials only as a digest: the scope holds no secret.
 */
function jobKey(track: TrackSource, url: string, credentials: object | undefined): string {
  const digest = createHash('sha256')
    .update(JSON.stringify(credentials ?? null))
    .digest('hex');
  return JSON.stringify([track.name, url, digest]);
}

/** Creates the Git source; see the module comment for what it does with each kind of repository. */

export function createGitSource(options: GitSourceOptions): GitSource {
  // The HTTP client, isomorphic-git and the remote-repository code load on the
  // first remote repository: a sync of a local repository whose revision is
  // stored already reads a few ref files and nothing else (refs-on-disk.ts).
  let httpClient: HttpClient | undefined;
  const http = async (): Promise<HttpClient> =>
    (httpClient ??= withIdleTimeout(
      options.http ?? (await import('isomorphic-git/http/node')).default,
      options.idleTimeoutMs ?? GIT_HTTP_IDLE_TIMEOUT_MS,
    ));
  const queue = new KeyQueue();
  let capabilities: CapabilityCache | undefined;
  const cwd = options.cwd ?? process.cwd();
  // A resolve's SSH session, kept for the fetch that follows (ssh-transport.ts).
  let sshSessions: SshSessionPool | undefined;

  const locate = (
    track: TrackSource,
  ): { location: RepositoryLocation; context: GitErrorContext } => {
    const located = locateRepository(track.repository, cwd);
    if ('error' in located) {
      throw new GitRepositoryError(located.error, {
        track: track.name,
        repository: displayUrl(track.repository),
      });
    }
    return { location: located, context: { track: track.name, repository: located.display } };
  };

  /**
   * The track's repository. `cachedOnly` is for reads of what a fetch just
   * brought into the cache: no credentials are asked for (a GitHub App token
   * near its expiry would otherwise be issued again), so a read that does
   * need the server goes to it without them, and no job's scope is used. `signal` cancels its
   * HTTP requests; `job`: see {@link SourceCall.job}.
   */
  const open = async (
    track: TrackSource,
    { cachedOnly = false, signal, job }: { cachedOnly?: boolean } & SourceCall = {},
  ): Promise<LocalRepository | RemoteRepository> => {
    const { location, context } = locate(track);
    if (location.kind === 'local') return LocalRepository.open(location, context);
    const [{ CapabilityCache, RemoteRepository }, { credentialsFor }] = await Promise.all([
      import('./remote-repository.ts'),
      import('./credentials.ts'),
    ]);
    capabilities ??= new CapabilityCache();
    const inJob = (credentials: object | undefined) =>
      job === undefined || cachedOnly
        ? {}
        : { job: { scope: job, key: jobKey(track, location.url, credentials) } };
    const remote = {
      location,
      cacheDir: options.cacheDir,
      http: withSignal(await http(), signal),
      queue,
      capabilities,
      context,
    };
    if (location.ssh === undefined) {
      const credentials = cachedOnly
        ? undefined
        : hidden(await credentialsFor(track.auth, options.readSecret, context));
      return new RemoteRepository({
        ...remote,
        credentials,
        track: track.name,
        checkAccess: !cachedOnly,
        ...inJob(credentials),
      });
    }
    if (track.auth?.type !== 'ssh') {
      throw new GitAuthError('an SSH repository needs auth: {type: ssh, ...}', context);
    }
    const { auth } = track;
    const [privateKey, knownHosts, passphrase] = await Promise.all([
      options.readSecret(auth.secret),
      options.readSecret(auth.knownHosts),
      auth.passphrase === undefined ? undefined : options.readSecret(auth.passphrase),
    ]);
    // A server or SSH library quoting one back in an error must not print it (src/redact.ts).
    addSecretValues([privateKey, ...(passphrase === undefined ? [] : [passphrase])]);
    // Loaded on first use: only SSH tracks pay for ssh2.
    const { SshTransport, SshSessionPool } = await import('./ssh-transport.ts');
    sshSessions ??= new SshSessionPool();
    const credentials = {
      privateKey,
      knownHosts,
      ...(passphrase === undefined ? {} : { passphrase }),
    };
    return new RemoteRepository({
      ...remote,
      credentials: undefined,
      checkAccess: !cachedOnly,
      ...inJob(credentials),
      ssh: new SshTransport(location.ssh, credentials, context, sshSessions, {
        idleTimeoutMs: options.idleTimeoutMs ?? GIT_HTTP_IDLE_TIMEOUT_MS,
        signal,
      }),
      track: track.name,
    });
  };

  /**
   * How write-back reaches the repository: HTTPS with the track's credentials, or SSH; its
   * requests cancelled when `call.signal` aborts.
   */
  const pushRemote = async (track: TrackSource, call: SourceCall): Promise<PushRemote> => {
    const { location, context } = locate(track);
    if (location.kind === 'local') {
      throw new GitRepositoryError(
        'write-back pushes to remote repositories only (https:// or SSH), not to a local one',
        context,
      );
    }
    if (location.ssh === undefined) {
      const { credentialsFor } = await import('./credentials.ts');
      const credentials = hidden(await credentialsFor(track.auth, options.readSecret, context));
      return {
        url: location.url,
        http: withSignal(await http(), call.signal),
        ...(credentials ? { onAuth: () => ({ ...credentials }) } : {}),
      };
    }
    const repository = await open(track, call);
    const transport = (repository as RemoteRepository).sshTransport();
    if (transport === undefined)
      throw new GitAuthError('an SSH repository needs auth: {type: ssh, ...}', context);
    // isomorphic-git takes HTTP(S) URLs only; the adapter carries its requests over SSH.
    return {
      url: `https://ssh.invalid/${encodeURIComponent(location.display)}`,
      http: transport.httpClient(),
    };
  };

  return {
    async resolve(track: TrackSource, call: SourceCall = {}): Promise<ResolvedRevision> {
      const request = classifyReference(track);
      return (await open(track, call)).resolve(request);
    },
    async readFiles(
      track: TrackSource,
      revision: string,
      scope: ReadScope = 'manifests',
      call: SourceCall = {},
    ): Promise<RevisionFile[]> {
      if (!isFullCommitId(revision)) {
        const { location, context } = locate(track);
        throw new GitRefNotFoundError(
          `revision "${revision}" of ${location.display} is not a full commit sha (resolve it first)`,
          context,
        );
      }
      return (await open(track, call)).readFiles(
        revision,
        scope === 'repository' ? undefined : track.subPath,
        scope,
      );
    },
    async commit(
      track: TrackSource,
      request: CommitRequest,
      call: SourceCall = {},
    ): Promise<CommitResult> {
      // Loaded on the first write-back: most tracks never push.
      const { pushCommit } = await import('./push-commit.ts');
      return pushCommit(await pushRemote(track, call), request, options.cacheDir, call.signal);
    },

    async describeCommit(track: TrackSource, revision: string): Promise<CommitInfo> {
      // Called after the fetch that brought `revision` into the cache.
      const repository = await open(track, { cachedOnly: true });
      return parseCommitInfo(await repository.readCommit(revision));
    },

    async verifyCommit(
      track: TrackSource,
      revision: string,
      call: SourceCall = {},
    ): Promise<string | undefined> {
      if (track.verify === undefined) return undefined;
      const raw = await (await open(track, call)).readCommit(revision);
      // Loaded by signed tracks only.
      const { parseTrustedKeys, verifyCommitSignature } = await import('../verify-signature.ts');
      const keys = await Promise.all(track.verify.keys.map((ref) => options.readSecret(ref)));
      const signed = await verifyCommitSignature(raw, parseTrustedKeys(keys), revision);
      return signed.signer;
    },
  };
}
