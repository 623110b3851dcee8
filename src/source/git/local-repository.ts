/**
 * A repository on this machine (a local path or a file:// URL), read in
 * place: no clone, no cache, nothing written. Only committed content
 * counts; the work tree is never read. Refs are listed and resolved from
 * their files (refs-on-disk.ts, which says why not isomorphic-git); objects
 * are read by object-reader.ts, as for a cache.
 */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { DriftlessError, messageOf } from '../../errors.ts';
import type { RevisionFile } from '../../render/types.ts';
import type { ReadScope, ResolvedRevision } from '../ports.ts';
import {
  GitFetchError,
  GitRefNotFoundError,
  GitRepositoryError,
  type GitErrorContext,
} from './errors.ts';
import { ObjectReader } from './object-reader.ts';
import { readTreeFiles } from './read-tree-files.ts';
import type { LocalLocation } from './repository-location.ts';
import { listRefNames, readRef, resolveRef } from './refs-on-disk.ts';
import { selectRefOrThrow, type RefEntry, type RefRequest } from './select-ref.ts';

/** A local repository, opened per call. */
export class LocalRepository {
  private constructor(
    private readonly gitdir: string,
    private readonly location: LocalLocation,
    private readonly context: GitErrorContext,
  ) {}

  /** Finds the repository at `location`: a work tree with a `.git` directory, or a bare repository. */
  static async open(location: LocalLocation, context: GitErrorContext): Promise<LocalRepository> {
    const gitdir = await findGitdir(location.path, location.display, context);
    if (await usesSha256(gitdir)) {
      // Its object ids are 64 hex digits and its trees hold 32-byte ids: read as SHA-1,
      // every commit would be "not found", which hides the cause.
      throw new GitRepositoryError(
        `${location.display} is a SHA-256 repository (extensions.objectformat = sha256); SHA-256 repositories are not supported yet`,
        context,
      );
    }
    return new LocalRepository(gitdir, location, context);
  }

  async resolve(request: RefRequest): Promise<ResolvedRevision> {
    if (request.kind === 'commit') {
      await this.commit(request.sha);
      return { revision: request.sha, ref: request.sha };
    }
    // Names only: resolving every ref of a repository with many tags would be wasted work.
    const refs = await this.listRefNames();
    const entry = await selectRefOrThrow(
      refs,
      request,
      this.location.display,
      this.context,
      // Only for tags of one version under two names: the listing has no commits.
      async (tag) =>
        (await this.commit(await this.guard(() => resolveRef(this.gitdir, tag.ref)), tag.ref)).oid,
    );
    const oid = await this.guard(() => resolveRef(this.gitdir, entry.ref));
    const commit = await this.commit(oid, entry.ref);
    return { revision: commit.oid, ref: entry.target ?? entry.ref };
  }

  async readFiles(
    revision: string,
    subPath: string | undefined,
    scope: ReadScope = 'manifests',
  ): Promise<RevisionFile[]> {
    const sha = revision.toLowerCase();
    const objects = new ObjectReader(this.gitdir);
    const commit = await this.commit(sha, sha, objects);
    if (commit.oid !== sha) {
      throw new GitRefNotFoundError(
        `${sha} in ${this.location.display} is a tag, not a commit`,
        this.context,
      );
    }
    return this.guard(() => readTreeFiles(objects, commit.tree, subPath, sha, this.context, scope));
  }

  /** The commit object `sha` as stored, for signature checks. */
  async readCommit(revision: string): Promise<Uint8Array> {
    const sha = revision.toLowerCase();
    const objects = new ObjectReader(this.gitdir);
    await this.commit(sha, sha, objects);
    const found = await this.guard(() => objects.read(sha));
    if (found?.type !== 'commit') {
      throw new GitRefNotFoundError(
        `${sha} in ${this.location.display} is not a commit`,
        this.context,
      );
    }
    return found.object;
  }

  /** The commit `oid` names (annotated tags peeled), or a {@link GitRefNotFoundError}. */
  private async commit(
    oid: string,
    name = oid,
    objects = new ObjectReader(this.gitdir),
  ): Promise<{ oid: string; tree: string }> {
    if (oid.length === 64) {
      // The config accepts SHA-256 ids, but a SHA-1 repository (the only kind read) has none.
      throw new GitRefNotFoundError(
        `commit ${oid} not found in ${this.location.display}: a 64-hex id names a SHA-256 commit, and SHA-256 repositories are not supported yet`,
        this.context,
      );
    }
    const found = await this.guard(() => objects.peel(oid));
    if (found.kind === 'commit') return found;
    throw new GitRefNotFoundError(
      found.kind === 'missing'
        ? `commit ${oid} not found in ${this.location.display}`
        : `${name} in ${this.location.display} is a ${found.type}, not a commit`,
      this.context,
    );
  }

  /** Every ref's full name (loose and packed), plus HEAD with its target; oids are left empty. */
  private async listRefNames(): Promise<RefEntry[]> {
    const names = await this.guard(() => listRefNames(this.gitdir));
    const entries: RefEntry[] = names.map((ref) => ({ ref, oid: '' }));
    const head = await readRef(this.gitdir, 'HEAD').catch(() => undefined);
    if (head !== undefined) {
      entries.push({ ref: 'HEAD', oid: '', ...('target' in head ? { target: head.target } : {}) });
    }
    return entries;
  }

  /** Runs a read, turning unexpected failures (a corrupt repository) into a {@link GitFetchError}. */
  private async guard<T>(read: () => Promise<T>): Promise<T> {
    try {
      return await read();
    } catch (error) {
      if (error instanceof DriftlessError) throw error;
      throw new GitFetchError(`reading ${this.location.display} failed: ${messageOf(error)}`, {
        ...this.context,
        cause: error,
      });
    }
  }
}

/**
 * Whether the repository's config sets `extensions.objectformat = sha256`
 * (`git init --object-format=sha256`). Read loosely, as a line in the
 * `[extensions]` section: enough for what git writes there.
 */
async function usesSha256(gitdir: string): Promise<boolean> {
  const config = await readFile(join(gitdir, 'config'), 'utf8').catch(() => '');
  let section = '';
  for (const raw of config.split('\n')) {
    const line = raw.replace(/[#;].*$/, '').trim();
    const header = /^\[\s*([A-Za-z0-9.-]+)/.exec(line);
    if (header) section = header[1]!.toLowerCase();
    else if (section === 'extensions' && /^objectformat\s*=\s*"?sha256"?$/i.test(line)) return true;
  }
  return false;
}

/** The git directory of the repository at `path`, or a {@link GitRepositoryError}. */
async function findGitdir(
  path: string,
  display: string,
  context: GitErrorContext,
): Promise<string> {
  const dotGit = join(path, '.git');
  const dotGitStat = await stat(dotGit).catch(() => undefined);
  if (dotGitStat?.isDirectory()) return dotGit;
  if (dotGitStat?.isFile()) {
    // A linked work tree or a submodule: `.git` is a `gitdir: ...` pointer to a
    // directory whose objects and refs live elsewhere (commondir), which this source does not follow.
    const pointer = (await readFile(dotGit, 'utf8').catch(() => '')).trim();
    throw new GitRepositoryError(
      `${display} is a linked work tree or submodule (${pointer || '.git is a file'}); point the track at the main repository`,
      context,
    );
  }
  const isBare = await Promise.all(
    ['HEAD', 'objects', 'refs'].map((name) =>
      stat(join(path, name)).then(
        () => true,
        () => false,
      ),
    ),
  );
  if (isBare.every(Boolean)) return path;
  const exists = await stat(path).then(
    () => true,
    () => false,
  );
  throw new GitRepositoryError(
    exists
      ? `${display} is not a Git repository (no .git directory, and not a bare repository)`
      : `${display} does not exist`,
    context,
  );
}
