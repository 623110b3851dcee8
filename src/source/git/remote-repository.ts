/**
 * A repository reached over smart HTTP: refs are read from one ref
 * advertisement (GET info/refs), commits are fetched shallow (depth 1, one
 * sha, no tags; see upload-pack.ts) into a bare cache repository that later
 * fetches reuse, and trees are read from the cache's objects
 * (object-reader.ts). A resolve followed by a fetch costs two requests: the
 * fetch reuses the capabilities the resolve's advertisement listed (see
 * {@link CapabilityCache}).
 *
 * Cache layout (`<cacheDir>/<cacheKey>/`, a bare repository):
 * - `refs/driftless/tracks/<track>`: the last commit read for a track, and
 *   `refs/driftless/last`: the last commit fetched at all. The next fetch
 *   names one of them as a `have`, so the server sends only what changed.
 * - every fetch adds a pack, possibly thin, indexed by pack-index.ts;
 *   nothing is garbage-collected, so past commits stay readable until the
 *   cache holds {@link MAX_PACKS} packs and is started over.
 * - `shallow`: the commits whose parents the cache lacks, as git keeps it;
 *   the server is told of it on every fetch.
 * - `driftless-blobs/<track>`: the blobs of the tree the track read last,
 *   so the next read inflates only what changed (see blob-memo.ts).
 *
 * Basic credentials, when the track has some, are sent with the first
 * request of each exchange: no round trip is spent on a 401 challenge.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import git, { type HttpClient } from 'isomorphic-git';
import type { RevisionFile } from '../../render/types.ts';
import type { JobScope } from '../job-scope.ts';
import type { ReadScope, ResolvedRevision } from '../ports.ts';
import type { BasicCredentials } from './credentials.ts';
import { GitFetchError, GitRefNotFoundError, type GitErrorContext } from './errors.ts';
import { translateGitError } from './git-errors.ts';
import { BlobMemo } from './blob-memo.ts';
import { ObjectReader, type PeeledObject } from './object-reader.ts';
import type { KeyQueue } from './key-queue.ts';
import { storePack } from './pack-index.ts';
import { readTreeFiles } from './read-tree-files.ts';
import { resolveRef } from './refs-on-disk.ts';
import type { RemoteLocation } from './repository-location.ts';
import { selectRefOrThrow, type RefEntry, type RefRequest } from './select-ref.ts';
import { fetchPack, readAdvertisement, UnknownWantError } from './upload-pack.ts';
import type { SshTransport } from './ssh-transport.ts';
import { DriftlessError, messageOf } from '../../errors.ts';

/** Packs a cache may hold before it is started over (see openCache). */
const MAX_PACKS = 100;

/** Commits of history fetched: the tree of one commit is all a track reads. */
const DEPTH = 1;

const LAST_FETCHED_REF = 'refs/driftless/last';
const TRACK_REF_PREFIX = 'refs/driftless/tracks/';
/** Per track, the blobs of the last tree it read (see blob-memo.ts). */
const BLOB_MEMO_DIR = 'driftless-blobs';
// Track names are DNS labels; anything else gets no per-track ref rather than a malformed one.
const TRACK_REF_NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;

/** How long a server's advertised capabilities are reused instead of asked for again. */
const CAPABILITIES_TTL_MS = 60_000;

/**
 * Capabilities per repository URL from the last advertisement read, shared
 * by one Git source: the fetch right after a resolve skips its own GET.
 */
export class CapabilityCache {
  private readonly entries = new Map<string, { capabilities: ReadonlySet<string>; at: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  get(url: string): ReadonlySet<string> | undefined {
    const entry = this.entries.get(url);
    return entry && this.now() - entry.at < CAPABILITIES_TTL_MS ? entry.capabilities : undefined;
  }

  set(url: string, capabilities: ReadonlySet<string>): void {
    this.entries.set(url, { capabilities, at: this.now() });
  }
}

export interface RemoteRepositoryOptions {
  readonly location: RemoteLocation;
  readonly cacheDir: string;
  readonly http: HttpClient;
  readonly queue: KeyQueue;
  readonly capabilities: CapabilityCache;
  readonly credentials: BasicCredentials | undefined;
  /** Set for an SSH repository: fetches go over it instead of HTTP. */
  readonly ssh?: SshTransport;
  readonly context: GitErrorContext;
  /** The track name, for its per-track `have` ref. */
  readonly track: string;
  /**
   * Whether a commit found in the cache is read only once this track has reached the server
   * (its credentials shown to read the repository). The cache is shared by every track of the
   * URL: without this, a track with no or wrong credentials — a GitTrack naming a full sha —
   * would read a private commit another track fetched. Off for reads right after a fetch of
   * the same call (`cachedOnly`), which has just reached it.
   */
  readonly checkAccess?: boolean;
  /**
   * The job the call belongs to, and this track's key in it (its name, the URL and a digest
   * of its credentials): a contact of an earlier call of the job counts as this call's, and
   * this call's counts for the job's later calls (see {@link JobScope}).
   */
  readonly job?: { readonly scope: JobScope; readonly key: string };
}

/** One track's view of a remote repository and its cache; cheap, made per call. */
export class RemoteRepository {
  private readonly gitdir: string;
  /**
   * Set once the server answered this track with its credentials (a ref advertisement or a
   * fetch), in this call or in an earlier call of the same job.
   */
  private reachedServer: boolean;

  constructor(private readonly options: RemoteRepositoryOptions) {
    this.gitdir = join(options.cacheDir, options.location.cacheKey);
    const { job } = options;
    this.reachedServer = job !== undefined && job.scope.hasReached(job.key);
  }

  /** The SSH transport of an SSH repository (write-back pushes through it), else undefined. */
  sshTransport(): SshTransport | undefined {
    return this.options.ssh;
  }

  /**
   * Resolves `request` against the server's refs; a commit sha is verified by fetching it, or
   * when the cache has it, by reaching the server with the track's credentials.
   */
  async resolve(request: RefRequest): Promise<ResolvedRevision> {
    if (request.kind === 'commit') {
      await this.ensureCommit(request.sha);
      return { revision: request.sha, ref: request.sha };
    }
    const refs = await this.listRefs();
    const entry = await selectRefOrThrow(
      refs,
      request,
      this.options.location.display,
      this.options.context,
    );
    return { revision: entry.peeled ?? entry.oid, ref: entry.target ?? entry.ref };
  }

  /** Fetches `revision` unless the cache has it, then reads its files under `subPath`. */
  async readFiles(
    revision: string,
    subPath: string | undefined,
    scope: ReadScope = 'manifests',
  ): Promise<RevisionFile[]> {
    const sha = revision.toLowerCase();
    return this.options.queue.run(this.gitdir, async () => {
      await this.openCache();
      const objects = new ObjectReader(this.gitdir);
      const memoPath = this.blobMemoPath;
      // Read while the commit is fetched; load never fails (an unreadable memo is an empty one).
      const loadingMemo = memoPath ? BlobMemo.load(memoPath) : undefined;
      const commit = await this.fetchCommit(objects, sha);
      const memo = await loadingMemo;
      const files = await this.readCache(() =>
        readTreeFiles(
          memo ? memo.over(objects) : objects,
          commit.tree,
          subPath,
          sha,
          this.options.context,
          scope,
        ),
      );
      // The memo only saves time on the next read: failing to write it is no reason to fail this one.
      await memo?.save().catch(() => undefined);
      return files;
    });
  }

  /** Fetches `sha` into the cache, or throws {@link GitRefNotFoundError} when the server does not have it. */
  private async ensureCommit(sha: string): Promise<void> {
    await this.options.queue.run(this.gitdir, async () => {
      await this.openCache();
      await this.fetchCommit(new ObjectReader(this.gitdir), sha);
    });
  }

  /** The commit object `sha` as stored (fetched first if needed), for signature checks. */
  async readCommit(revision: string): Promise<Uint8Array> {
    const sha = revision.toLowerCase();
    return this.options.queue.run(this.gitdir, async () => {
      await this.openCache();
      const objects = new ObjectReader(this.gitdir);
      await this.fetchCommit(objects, sha);
      const found = await this.readCache(() => objects.read(sha));
      if (found?.type !== 'commit') {
        throw new GitRefNotFoundError(
          `commit ${sha} not found in ${this.options.location.display}`,
          this.options.context,
        );
      }
      return found.object;
    });
  }

  private async fetchCommit(objects: ObjectReader, sha: string): Promise<{ tree: string }> {
    let found = await this.readCache(() => objects.peel(sha));
    if (found.kind === 'missing') found = await this.fetchSha(objects, sha);
    else if (this.options.checkAccess === true && !this.reachedServer) await this.listRefs();
    if (found.kind === 'missing') {
      throw new GitRefNotFoundError(
        `commit ${sha} not found in ${this.options.location.display}`,
        this.options.context,
      );
    }
    if (found.kind !== 'commit' || found.oid !== sha) {
      const type = found.kind === 'commit' ? 'tag' : found.type;
      throw new GitRefNotFoundError(
        `${sha} in ${this.options.location.display} is a ${type}, not a commit`,
        this.options.context,
      );
    }
    await this.rememberFetched(sha);
    return found;
  }

  /**
   * Fetches commit `sha`, depth 1. Git servers over HTTP serve any commit
   * reachable from a ref by sha; one that does not (`not our ref`) is asked
   * for the ref whose tip is `sha` instead, if there is one.
   */
  private async fetchSha(objects: ObjectReader, sha: string): Promise<PeeledObject> {
    const peel = (): Promise<PeeledObject> => this.readCache(() => objects.peel(sha));
    if (await this.fetch(objects, sha)) return peel();
    const tip = (await this.listRefs()).find((entry) => (entry.peeled ?? entry.oid) === sha);
    // The sha itself was refused, so only a different advertised oid is worth a try: an
    // annotated tag's, whose fetch brings the commit it points to.
    if (tip && tip.oid !== sha) await this.fetch(objects, tip.oid);
    return peel();
  }

  /**
   * One shallow fetch of commit or tag `want`, offering our last commit as a
   * `have`: the pack is indexed and stored, and the `shallow` file updated.
   * False when the server does not serve `want` by its sha.
   */
  private async fetch(objects: ObjectReader, want: string): Promise<boolean> {
    const gitdir = this.gitdir;
    const [have, shallow] = await Promise.all([this.haveCommit(), readShallow(gitdir)]);
    // While the server prepares the pack: read the pack holding `have`, where a thin
    // pack's bases are. Failing here costs nothing: indexing reads it again, and reports.
    const warming = have ? objects.peel(have).catch(() => undefined) : undefined;
    let result;
    try {
      const wanted = { want, have, shallow: [...shallow], depth: DEPTH };
      result = this.options.ssh
        ? await this.options.ssh.fetchPack(wanted)
        : await fetchPack({
            http: this.options.http,
            url: this.options.location.url,
            credentials: this.options.credentials,
            ...wanted,
            ...this.knownCapabilities(),
          });
    } catch (error) {
      if (error instanceof UnknownWantError) return false;
      throw translateGitError(error, this.options.context, this.authenticated);
    } finally {
      await warming;
    }
    this.markReached();
    try {
      if (result.pack.length > 0) await storePack(gitdir, result.pack, objects.read);
      // As git does: the server's new boundaries in, the commits it completed out.
      for (const oid of result.shallow) shallow.add(oid);
      for (const oid of result.unshallow) shallow.delete(oid);
      await Promise.all([objects.refresh(), writeShallow(gitdir, shallow)]);
    } catch (error) {
      throw new GitFetchError(
        `storing what ${this.options.location.display} sent failed: ${messageOf(error)}`,
        { ...this.options.context, cause: error },
      );
    }
    return true;
  }

  /** The best local commit to offer as common history: this track's last, else the cache's last. */
  private async haveCommit(): Promise<string | undefined> {
    const candidates = [this.trackRef, LAST_FETCHED_REF].filter((ref): ref is string => !!ref);
    for (const ref of candidates) {
      const oid = await resolveRef(this.gitdir, ref).catch(() => undefined);
      if (oid) return oid;
    }
    return undefined;
  }

  private async rememberFetched(sha: string): Promise<void> {
    const gitdir = this.gitdir;
    const refs = [LAST_FETCHED_REF, ...(this.trackRef ? [this.trackRef] : [])];
    await Promise.all(
      refs.map((ref) => git.writeRef({ fs, gitdir, ref, value: sha, force: true })),
    );
  }

  private get blobMemoPath(): string | undefined {
    return TRACK_REF_NAME.test(this.options.track)
      ? join(this.gitdir, BLOB_MEMO_DIR, this.options.track)
      : undefined;
  }

  private get trackRef(): string | undefined {
    return TRACK_REF_NAME.test(this.options.track)
      ? `${TRACK_REF_PREFIX}${this.options.track}`
      : undefined;
  }

  /** The server's refs with annotated tags peeled and HEAD's target: one advertisement. */
  private async listRefs(): Promise<RefEntry[]> {
    const { url } = this.options.location;
    try {
      const advertisement = this.options.ssh
        ? await this.options.ssh.advertise()
        : await readAdvertisement(this.options.http, url, this.options.credentials);
      this.options.capabilities.set(url, advertisement.capabilities);
      this.markReached();
      return advertisement.refs;
    } catch (error) {
      throw translateGitError(error, this.options.context, this.authenticated);
    }
  }

  private markReached(): void {
    this.reachedServer = true;
    const { job } = this.options;
    job?.scope.recordReached(job.key);
  }

  private knownCapabilities(): { capabilities?: ReadonlySet<string> } {
    const known = this.options.capabilities.get(this.options.location.url);
    return known ? { capabilities: known } : {};
  }

  /**
   * Opens the cache repository, creating it on first use. Idempotent, so a
   * run that died half-way through creating it is repaired by the next.
   */
  private async openCache(): Promise<void> {
    const gitdir = this.gitdir;
    try {
      if ((await packCount(gitdir)) > MAX_PACKS) {
        // Every fetch adds a pack, and every read operation lists and indexes
        // them all; starting over costs one full depth-1 fetch.
        await rm(gitdir, { recursive: true, force: true });
      }
      await mkdir(gitdir, { recursive: true });
      if (!fs.existsSync(join(gitdir, 'HEAD'))) await git.init({ fs, gitdir, bare: true });
    } catch (error) {
      throw new GitFetchError(`cannot prepare the Git cache ${gitdir}: ${messageOf(error)}`, {
        ...this.options.context,
        cause: error,
      });
    }
  }

  /** Runs a read of the cache, turning a damaged cache (missing or corrupt objects) into a {@link GitFetchError}. */
  private async readCache<T>(read: () => Promise<T>): Promise<T> {
    try {
      return await read();
    } catch (error) {
      if (error instanceof DriftlessError) throw error;
      throw new GitFetchError(
        `reading the Git cache of ${this.options.location.display} failed: ${messageOf(error)}`,
        { ...this.options.context, cause: error },
      );
    }
  }

  private get authenticated(): boolean {
    return this.options.credentials !== undefined;
  }
}

async function packCount(gitdir: string): Promise<number> {
  const names = await readdir(join(gitdir, 'objects', 'pack')).catch(() => []);
  return names.filter((name) => name.endsWith('.idx')).length;
}

/** The commits of `gitdir`'s `shallow` file. */
async function readShallow(gitdir: string): Promise<Set<string>> {
  const text = await readFile(join(gitdir, 'shallow'), 'utf8').catch(() => '');
  return new Set(text.split('\n').filter((line) => /^[0-9a-f]{40}$/.test(line)));
}

/** Writes `gitdir`'s `shallow` file (sorted, as git writes it), removing it when empty. */
async function writeShallow(gitdir: string, oids: ReadonlySet<string>): Promise<void> {
  const path = join(gitdir, 'shallow');
  if (oids.size === 0) {
    await rm(path, { force: true });
    return;
  }
  // A name of its own, as storePack's: two fetches of one track sharing the cache (functions
  // under serverless-offline share /tmp) would rename each other's file away.
  const temporary = `${path}.tmp-${randomBytes(6).toString('hex')}`;
  await writeFile(temporary, [...oids].sort().join('\n') + '\n');
  await rename(temporary, path);
}
