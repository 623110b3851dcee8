/**
 * A repository reached over smart HTTP: refs are listed with one ls-refs
 * call, commits are fetched shallow (depth 1, one ref or sha, no tags) into a
 * bare cache repository that later fetches reuse, and trees are read from
 * the cache's objects.
 *
 * Cache layout (`<cacheDir>/<cacheKey>/`, a bare repository):
 * - `refs/driftless/tracks/<track>`: the last commit read for a track, and
 *   `refs/driftless/last`: the last commit fetched at all. The next fetch
 *   names one of them as a `have`, so the server sends only what changed.
 * - every fetch adds a pack, possibly thin (see thin-pack.ts); nothing is
 *   garbage-collected, so past commits stay readable until the cache holds
 *   {@link MAX_PACKS} packs and is started over.
 */
import fs from 'node:fs';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import git, { type HttpClient } from 'isomorphic-git';
import type { RevisionFile } from '../render/types.ts';
import type { ResolvedRevision } from './ports.ts';
import type { BasicCredentials } from './credentials.ts';
import { GitFetchError, GitRefNotFoundError, type GitErrorContext } from './errors.ts';
import { translateGitError } from './git-errors.ts';
import { objectReader, peelObject, type GitDir, type PeeledObject } from './git-objects.ts';
import type { KeyQueue } from './key-queue.ts';
import { readTreeFiles } from './read-tree-files.ts';
import type { RemoteLocation } from './repository-location.ts';
import { selectRefOrThrow, type RefEntry, type RefRequest } from './select-ref.ts';

/** Packs a cache may hold before it is started over (see openCache). */
const MAX_PACKS = 100;

const LAST_FETCHED_REF = 'refs/driftless/last';
const TRACK_REF_PREFIX = 'refs/driftless/tracks/';
// Track names are DNS labels; anything else gets no per-track ref rather than a malformed one.
const TRACK_REF_NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;

export interface RemoteRepositoryOptions {
  readonly location: RemoteLocation;
  readonly cacheDir: string;
  readonly http: HttpClient;
  readonly queue: KeyQueue;
  readonly credentials: BasicCredentials | undefined;
  readonly context: GitErrorContext;
  /** The track name, for its per-track `have` ref. */
  readonly track: string;
}

/** One track's view of a remote repository and its cache; cheap, made per call. */
export class RemoteRepository {
  private readonly gitdir: string;

  constructor(private readonly options: RemoteRepositoryOptions) {
    this.gitdir = join(options.cacheDir, options.location.cacheKey);
  }

  /** Resolves `request` against the server's refs; a commit sha is verified by fetching it. */
  async resolve(request: RefRequest): Promise<ResolvedRevision> {
    if (request.kind === 'commit') {
      await this.ensureCommit(request.sha);
      return { revision: request.sha, ref: request.sha };
    }
    const refs = await this.listRefs();
    const entry = selectRefOrThrow(
      refs,
      request,
      this.options.location.display,
      this.options.context,
    );
    return { revision: entry.peeled ?? entry.oid, ref: entry.target ?? entry.ref };
  }

  /** Fetches `revision` unless the cache has it, then reads its files under `subPath`. */
  async readFiles(revision: string, subPath: string | undefined): Promise<RevisionFile[]> {
    const sha = revision.toLowerCase();
    return this.options.queue.run(this.gitdir, async () => {
      const dir = await this.openCache();
      const commit = await this.fetchCommit(dir, sha);
      return readTreeFiles(objectReader(dir), commit.tree, subPath, sha, this.options.context);
    });
  }

  /** Fetches `sha` into the cache, or throws {@link GitRefNotFoundError} when the server does not have it. */
  private async ensureCommit(sha: string): Promise<void> {
    await this.options.queue.run(this.gitdir, async () => {
      await this.fetchCommit(await this.openCache(), sha);
    });
  }

  /** The commit `sha` from the cache, fetched first when missing. Runs inside the queue. */
  private async fetchCommit(dir: GitDir, sha: string): Promise<{ tree: string }> {
    let found = await peelObject(dir, sha);
    if (found.kind === 'missing') found = await this.fetchSha(dir, sha);
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
   * reachable from a ref by sha; a server that does not answers without it
   * (isomorphic-git reports no error), and then the ref whose tip is `sha`,
   * if there is one, is fetched instead.
   */
  private async fetchSha(dir: GitDir, sha: string): Promise<PeeledObject> {
    await this.fetch(dir, sha);
    const found = await peelObject(dir, sha);
    if (found.kind !== 'missing') return found;
    const tip = (await this.listRefs()).find((entry) => (entry.peeled ?? entry.oid) === sha);
    if (!tip) return found;
    await this.fetch(dir, tip.ref);
    return peelObject(dir, sha);
  }

  /** One shallow, single-ref fetch of `remoteRef` (a full ref or a sha), offering our last commit as a `have`. */
  private async fetch(dir: GitDir, remoteRef: string): Promise<void> {
    const have = await this.haveRef(dir);
    try {
      await git.fetch({
        fs,
        http: this.options.http,
        gitdir: dir.gitdir,
        cache: dir.cache,
        url: this.options.location.url,
        remote: 'origin',
        remoteRef,
        // With singleBranch, isomorphic-git sends `ref` (a local ref) as its only `have`.
        ...(have ? { ref: have } : {}),
        singleBranch: true,
        depth: 1,
        tags: false,
        ...this.auth(),
      });
    } catch (error) {
      throw translateGitError(error, this.options.context, this.authenticated);
    }
  }

  /** The best local commit to offer as common history: this track's last, else the cache's last. */
  private async haveRef(dir: GitDir): Promise<string | undefined> {
    const candidates = [this.trackRef, LAST_FETCHED_REF].filter((ref): ref is string => !!ref);
    for (const ref of candidates) {
      const exists = await git.resolveRef({ fs, gitdir: dir.gitdir, ref }).then(
        () => true,
        () => false,
      );
      if (exists) return ref;
    }
    return undefined;
  }

  private async rememberFetched(sha: string): Promise<void> {
    const gitdir = this.gitdir;
    await git.writeRef({ fs, gitdir, ref: LAST_FETCHED_REF, value: sha, force: true });
    if (this.trackRef)
      await git.writeRef({ fs, gitdir, ref: this.trackRef, value: sha, force: true });
  }

  private get trackRef(): string | undefined {
    return TRACK_REF_NAME.test(this.options.track)
      ? `${TRACK_REF_PREFIX}${this.options.track}`
      : undefined;
  }

  /** The server's refs with annotated tags peeled and HEAD's target: one ls-refs exchange. */
  private async listRefs(): Promise<RefEntry[]> {
    try {
      const refs = await git.listServerRefs({
        http: this.options.http,
        url: this.options.location.url,
        peelTags: true,
        symrefs: true,
        ...this.auth(),
      });
      return refs.map((ref) => ({
        ref: ref.ref,
        oid: ref.oid,
        ...(ref.peeled ? { peeled: ref.peeled } : {}),
        ...(ref.target ? { target: ref.target } : {}),
      }));
    } catch (error) {
      throw translateGitError(error, this.options.context, this.authenticated);
    }
  }

  /**
   * Opens the cache repository, creating it on first use. Idempotent, so a
   * run that died half-way through creating it is repaired by the next.
   */
  private async openCache(): Promise<GitDir> {
    const gitdir = this.gitdir;
    try {
      if ((await packCount(gitdir)) > MAX_PACKS) {
        // Every fetch adds a pack and isomorphic-git scans every pack index per
        // object lookup; starting over costs one full depth-1 fetch.
        await rm(gitdir, { recursive: true, force: true });
      }
      await mkdir(gitdir, { recursive: true });
      if (!fs.existsSync(join(gitdir, 'HEAD'))) await git.init({ fs, gitdir, bare: true });
      const fetchSpec = await git.getConfig({ fs, gitdir, path: 'remote.origin.fetch' });
      if (!fetchSpec) {
        // isomorphic-git's fetch needs a refspec; the URL itself is passed on every fetch.
        await git.setConfig({
          fs,
          gitdir,
          path: 'remote.origin.fetch',
          value: '+refs/heads/*:refs/remotes/origin/*',
        });
      }
    } catch (error) {
      throw new GitFetchError(`cannot prepare the Git cache ${gitdir}: ${messageOf(error)}`, {
        ...this.options.context,
        cause: error,
      });
    }
    return { gitdir, cache: {} };
  }

  private get authenticated(): boolean {
    return this.options.credentials !== undefined;
  }

  /**
   * isomorphic-git's auth callbacks: credentials are sent only when the
   * server asks (401), and a second 401 fails instead of retrying forever.
   */
  private auth(): { onAuth?: () => BasicCredentials } {
    const credentials = this.options.credentials;
    return credentials ? { onAuth: () => ({ ...credentials }) } : {};
  }
}

async function packCount(gitdir: string): Promise<number> {
  const names = await readdir(join(gitdir, 'objects', 'pack')).catch(() => []);
  return names.filter((name) => name.endsWith('.idx')).length;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
