/**
 * The local store (DESIGN.md `store: {type: fs, path}`, default
 * `.driftless/store`): the layout of `keys.ts` as files under one directory.
 *
 * Every file appears complete or not at all: content is written to a
 * temporary file and then linked (create-only: link() fails with EEXIST when
 * the name exists, atomically, also across processes) or renamed (replace)
 * into place. State writes compare versions under a lock file, since the
 * read-compare-rename sequence is not atomic by itself.
 *
 * An artifact file is one JSON header line (`{"digest","storedAt","size",
 * "track","revision"}`) followed by the artifact's bytes.
 *
 * The small steps (open, write, link, rename, unlink, reading a state or lock
 * file) are synchronous calls; only fsync, which waits for the disk, and
 * reading whole artifacts and listings go through the thread pool. Each
 * promise-based step is a round trip through the pool that also waits behind
 * whatever the event loop has queued: a state write took ~20 of them, 3-11 ms
 * in a fresh process, where the synchronous calls take microseconds each.
 */
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  fsync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { open, readdir, readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { dirname, join, resolve } from 'node:path';
import {
  ArtifactConflictError,
  ArtifactCorruptError,
  ArtifactNotFoundError,
  ConcurrentUpdateError,
  JobBodyNotFoundError,
  StateCorruptError,
  StoreUnavailableError,
} from './errors.ts';
import { DriftlessError, messageOf } from '../errors.ts';
import { ignoreFailure, withFileLock, type FileLockOptions } from './fs-lock.ts';
import {
  artifactDir,
  artifactKey,
  checkedJobBody,
  jobBodyDigest,
  jobBodyKey,
  misplacedArtifact,
  newestFirst,
  assertHistoryEntry,
  deliveryKey,
  digestOf,
  historyDir,
  historyEntryName,
  historyEntryProblem,
  HISTORY_SUFFIX,
  isDigest,
  publishedKey,
  STATE_DIR,
  stateKey,
  trackOfStateName,
} from './keys.ts';
import type {
  ArtifactInfo,
  ArtifactStore,
  DeliveryLog,
  Digest,
  HistoryEntry,
  JobBodyStore,
  ListedRevision,
  PublishedTrackStore,
  PutArtifactResult,
  StateStore,
  VersionedValue,
} from './ports.ts';

/** Options of {@link FsStore}. */
export interface FsStoreOptions {
  /** Root directory of the store; created when missing. */
  readonly path: string;
  /** Bounds of the per-track state lock. */
  readonly lock?: FileLockOptions;
  /** Time source for `storedAt` and delivery records. */
  readonly now?: () => Date;
}

interface ArtifactHeader {
  readonly digest: Digest;
  readonly storedAt: string;
  readonly size: number;
  /** The key it was stored under (see misplacedArtifact); absent in older artifacts. */
  readonly track?: string;
  readonly revision?: string;
}

/** The header line is small; reading this much is enough to list an artifact. */
const HEADER_READ_BYTES = 1024;

const NEWLINE = 0x0a;

interface StateFile {
  readonly version: string;
  readonly value: unknown;
}

const fsyncAsync = promisify(fsync);

function errorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error
    ? String((error as { code: unknown }).code)
    : undefined;
}

/** Lets typed errors through and turns every other failure into StoreUnavailableError. */
function unavailable(path: string, error: unknown): never {
  if (error instanceof DriftlessError) throw error;
  const reason = messageOf(error);
  throw new StoreUnavailableError(`${path}: ${reason}`, { cause: error });
}

function parseHeader(bytes: Uint8Array): { header: ArtifactHeader; body: Uint8Array } | undefined {
  const end = bytes.indexOf(NEWLINE);
  if (end < 0) return undefined;
  try {
    const header: unknown = JSON.parse(Buffer.from(bytes.subarray(0, end)).toString('utf8'));
    if (
      typeof header !== 'object' ||
      header === null ||
      !isDigest((header as ArtifactHeader).digest) ||
      typeof (header as ArtifactHeader).storedAt !== 'string'
    ) {
      return undefined;
    }
    return { header: header as ArtifactHeader, body: bytes.subarray(end + 1) };
  } catch {
    return undefined;
  }
}

/** Artifacts, state, history, deliveries and published track lists in a local directory. */
export class FsStore
  implements ArtifactStore, StateStore, DeliveryLog, PublishedTrackStore, JobBodyStore
{
  readonly root: string;
  readonly #lock: FileLockOptions;
  readonly #now: () => Date;

  constructor(options: FsStoreOptions) {
    this.root = resolve(options.path);
    this.#lock = options.lock ?? {};
    this.#now = options.now ?? (() => new Date());
  }

  #path(key: string): string {
    return join(this.root, ...key.split('/'));
  }

  /**
   * Writes `content` to a temporary file next to `path` (synced, so a crash
   * cannot leave a named but empty file) and returns its name.
   */
  async #writeTemporary(path: string, content: Uint8Array | string): Promise<string> {
    mkdirSync(dirname(path), { recursive: true });
    const temporary = join(dirname(path), `.tmp-${randomBytes(8).toString('hex')}`);
    const fd = openSync(temporary, 'wx');
    try {
      writeFileSync(fd, content);
      await fsyncAsync(fd);
    } finally {
      closeSync(fd);
    }
    return temporary;
  }

  /** Creates `path` with `content` unless it exists; `false` when it did. */
  async #createOnly(path: string, content: Uint8Array | string): Promise<boolean> {
    const temporary = await this.#writeTemporary(path, content);
    try {
      linkSync(temporary, path);
      return true;
    } catch (error) {
      if (errorCode(error) === 'EEXIST') return false;
      throw error;
    } finally {
      ignoreFailure(() => unlinkSync(temporary));
    }
  }

  /** Replaces `path` with `content` atomically. */
  async #replace(path: string, content: Uint8Array | string): Promise<void> {
    const temporary = await this.#writeTemporary(path, content);
    try {
      renameSync(temporary, path);
    } catch (error) {
      ignoreFailure(() => unlinkSync(temporary));
      throw error;
    }
  }

  async put(track: string, revision: string, bytes: Uint8Array): Promise<PutArtifactResult> {
    const path = this.#path(artifactKey(track, revision));
    const digest = digestOf(bytes);
    const header: ArtifactHeader = {
      digest,
      storedAt: this.#now().toISOString(),
      size: bytes.byteLength,
      track,
      revision,
    };
    try {
      const content = Buffer.concat([Buffer.from(`${JSON.stringify(header)}\n`, 'utf8'), bytes]);
      if (await this.#createOnly(path, content)) return { digest, created: true };
      // Already stored: never replaced. Read it verified, so a corrupt one is reported.
      const storedDigest = digestOf(await this.get(track, revision));
      if (storedDigest !== digest) {
        throw new ArtifactConflictError(track, revision, storedDigest, digest);
      }
      return { digest, created: false };
    } catch (error) {
      return unavailable(path, error);
    }
  }

  async get(track: string, revision: string): Promise<Uint8Array> {
    const path = this.#path(artifactKey(track, revision));
    let bytes: Uint8Array;
    try {
      bytes = await readFile(path);
    } catch (error) {
      if (errorCode(error) === 'ENOENT') throw new ArtifactNotFoundError(track, revision);
      return unavailable(path, error);
    }
    const parsed = parseHeader(bytes);
    if (parsed === undefined) {
      throw new ArtifactCorruptError(track, revision, undefined, undefined, 'unreadable header');
    }
    const actual = digestOf(parsed.body);
    if (actual !== parsed.header.digest) {
      throw new ArtifactCorruptError(track, revision, parsed.header.digest, actual);
    }
    const misplaced = misplacedArtifact(track, revision, parsed.header);
    if (misplaced !== undefined) {
      throw new ArtifactCorruptError(track, revision, parsed.header.digest, actual, misplaced);
    }
    // A copy, detached from the file buffer, so callers may keep or change it.
    return new Uint8Array(parsed.body);
  }

  async has(track: string, revision: string): Promise<boolean> {
    return this.#exists(this.#path(artifactKey(track, revision)));
  }

  #exists(path: string): boolean {
    try {
      statSync(path);
      return true;
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return false;
      return unavailable(path, error);
    }
  }

  async #readHeader(track: string, revision: string, path: string): Promise<ArtifactHeader> {
    const handle = await open(path, 'r');
    try {
      const buffer = new Uint8Array(HEADER_READ_BYTES);
      const { bytesRead } = await handle.read(buffer, 0, HEADER_READ_BYTES, 0);
      const parsed = parseHeader(buffer.subarray(0, bytesRead));
      if (parsed === undefined) {
        throw new ArtifactCorruptError(track, revision, undefined, undefined, 'unreadable header');
      }
      return parsed.header;
    } finally {
      await handle.close();
    }
  }

  async list(track: string): Promise<ArtifactInfo[]> {
    const dir = this.#path(artifactDir(track));
    try {
      const names = await readdir(dir).catch((error: unknown) => {
        if (errorCode(error) === 'ENOENT') return [];
        throw error;
      });
      const infos: ArtifactInfo[] = [];
      for (const revision of names) {
        if (revision.startsWith('.')) continue; // temporary files
        const header = await this.#readHeader(track, revision, join(dir, revision));
        infos.push({ revision, digest: header.digest, storedAt: header.storedAt });
      }
      return infos.sort(newestFirst);
    } catch (error) {
      return unavailable(dir, error);
    }
  }

  async listRevisions(track: string): Promise<ListedRevision[]> {
    // The time is in each artifact's header line, as for list(): on a local disk reading it
    // costs little.
    return (await this.list(track)).map(({ revision, storedAt }) => ({ revision, storedAt }));
  }

  async #readState(track: string, path: string): Promise<StateFile | undefined> {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return undefined;
      throw error;
    }
    try {
      const parsed: unknown = JSON.parse(text);
      if (
        typeof parsed === 'object' &&
        parsed !== null &&
        typeof (parsed as StateFile).version === 'string' &&
        'value' in parsed
      ) {
        return parsed as StateFile;
      }
    } catch {
      // reported below
    }
    throw new StateCorruptError(`${track}: state document ${path} is not valid`);
  }

  async read<T>(track: string): Promise<VersionedValue<T> | undefined> {
    const path = this.#path(stateKey(track));
    try {
      const state = await this.#readState(track, path);
      return state === undefined ? undefined : { value: state.value as T, version: state.version };
    } catch (error) {
      return unavailable(path, error);
    }
  }

  async write<T>(
    track: string,
    value: T,
    expectedVersion: string | undefined,
  ): Promise<{ version: string }> {
    const path = this.#path(stateKey(track));
    const json = JSON.stringify(value);
    if (json === undefined) throw new TypeError(`${track}: state value is not JSON-serialisable`);
    try {
      mkdirSync(dirname(path), { recursive: true });
      return await withFileLock(
        `${path}.lock`,
        async () => {
          const current = await this.#readState(track, path);
          if (current?.version !== expectedVersion) {
            throw new ConcurrentUpdateError(track, expectedVersion);
          }
          // A counter, not a hash of the content: a value written back
          // unchanged still gets a new version, so no ABA.
          const version = String((current === undefined ? 0 : Number(current.version)) + 1);
          await this.#replace(path, `{"version":${JSON.stringify(version)},"value":${json}}\n`);
          return { version };
        },
        this.#lock,
      );
    } catch (error) {
      return unavailable(path, error);
    }
  }

  async appendHistory(track: string, entry: HistoryEntry): Promise<void> {
    const dir = this.#path(historyDir(track));
    assertHistoryEntry(entry);
    try {
      // The name is unique (random part), so create-only never collides.
      const path = join(dir, historyEntryName(entry));
      if (!(await this.#createOnly(path, `${JSON.stringify(entry)}\n`))) {
        throw new StoreUnavailableError(`${path}: history entry name collision`);
      }
    } catch (error) {
      return unavailable(dir, error);
    }
  }

  async listHistory(track: string, limit?: number): Promise<HistoryEntry[]> {
    const dir = this.#path(historyDir(track));
    if (limit !== undefined && limit <= 0) return [];
    try {
      const names = await readdir(dir).catch((error: unknown) => {
        if (errorCode(error) === 'ENOENT') return [];
        throw error;
      });
      const selected = names
        .filter((name) => !name.startsWith('.') && name.endsWith(HISTORY_SUFFIX))
        .sort()
        .slice(0, limit);
      const entries: HistoryEntry[] = [];
      for (const name of selected) {
        const text = await readFile(join(dir, name), 'utf8');
        let entry: unknown;
        try {
          entry = JSON.parse(text);
        } catch {
          entry = undefined;
        }
        const problem = historyEntryProblem(entry);
        if (problem !== undefined) {
          throw new StateCorruptError(`${track}: history entry ${name}: ${problem}`);
        }
        entries.push(entry as HistoryEntry);
      }
      return entries;
    } catch (error) {
      return unavailable(dir, error);
    }
  }

  async remove(track: string): Promise<void> {
    const path = this.#path(stateKey(track));
    try {
      // Under the state's lock, so a concurrent write sees either the document or none.
      mkdirSync(dirname(path), { recursive: true });
      await withFileLock(
        `${path}.lock`,
        async () => {
          try {
            unlinkSync(path);
          } catch (error) {
            if (errorCode(error) !== 'ENOENT') throw error;
          }
        },
        this.#lock,
      );
    } catch (error) {
      return unavailable(path, error);
    }
  }

  async listTracks(): Promise<string[]> {
    const dir = this.#path(STATE_DIR.slice(0, -1));
    try {
      const names = await readdir(dir).catch((error: unknown) => {
        if (errorCode(error) === 'ENOENT') return [];
        throw error;
      });
      return names
        .map(trackOfStateName)
        .filter((track) => track !== undefined)
        .sort();
    } catch (error) {
      return unavailable(dir, error);
    }
  }

  async listVersions(): Promise<Map<string, string>> {
    // A version lives inside its file: reading them is the listing (local, so cheap).
    const versions = new Map<string, string>();
    for (const track of await this.listTracks()) {
      const current = await this.read(track);
      if (current !== undefined) versions.set(track, current.version);
    }
    return versions;
  }

  async markDelivery(id: string): Promise<boolean> {
    const path = this.#path(deliveryKey(id));
    try {
      return await this.#createOnly(
        path,
        `${JSON.stringify({ id, markedAt: this.#now().toISOString() })}\n`,
      );
    } catch (error) {
      return unavailable(path, error);
    }
  }

  async isDelivered(id: string): Promise<boolean> {
    return this.#exists(this.#path(deliveryKey(id)));
  }

  async publish(source: string, document: unknown): Promise<void> {
    const path = this.#path(publishedKey(source));
    const json = JSON.stringify(document);
    if (json === undefined) {
      throw new TypeError(`${source}: published document is not JSON-serialisable`);
    }
    try {
      // Replaced whole by a rename: readers see the old document or the new one.
      await this.#replace(path, `${json}\n`);
    } catch (error) {
      return unavailable(path, error);
    }
  }

  async readPublished<T>(source: string): Promise<T | undefined> {
    const path = this.#path(publishedKey(source));
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return undefined;
      return unavailable(path, error);
    }
    try {
      return JSON.parse(text) as T;
    } catch (error) {
      throw new StateCorruptError(`${source}: published document ${path} is not JSON`, {
        cause: error,
      });
    }
  }

  async putJobBody(body: string): Promise<string> {
    const digest = jobBodyDigest(body);
    const path = this.#path(jobBodyKey(digest));
    try {
      // Named by its content: one already there is this body.
      await this.#createOnly(path, body);
    } catch (error) {
      return unavailable(path, error);
    }
    return digest;
  }

  async readJobBody(digest: string): Promise<string> {
    const path = this.#path(jobBodyKey(digest));
    let body: string;
    try {
      body = await readFile(path, 'utf8');
    } catch (error) {
      if (errorCode(error) === 'ENOENT') throw new JobBodyNotFoundError(`no job body ${path}`);
      return unavailable(path, error);
    }
    return checkedJobBody(digest, body, path);
  }
}
