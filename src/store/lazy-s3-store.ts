/**
 * The S3 store, loaded on first use. The AWS S3 client weighs about 25 MB of
 * memory and a good share of a function's start-up; commands and functions
 * on the filesystem store should not pay for it.
 */
import type {
  ArtifactInfo,
  ArtifactStore,
  DeliveryLog,
  HistoryEntry,
  JobBodyStore,
  ListedRevision,
  PublishedTrackStore,
  PutArtifactResult,
  StateStore,
  VersionedValue,
} from './ports.ts';
import type { S3Store, S3StoreOptions } from './s3-store.ts';

export class LazyS3Store
  implements ArtifactStore, StateStore, DeliveryLog, PublishedTrackStore, JobBodyStore
{
  #loaded: Promise<S3Store> | undefined;
  #store: S3Store | undefined;

  constructor(private readonly options: S3StoreOptions) {}

  #load(): Promise<S3Store> {
    this.#loaded ??= import('./s3-store.ts').then(({ S3Store }) => {
      this.#store = new S3Store(this.options);
      return this.#store;
    });
    return this.#loaded;
  }

  async put(track: string, revision: string, bytes: Uint8Array): Promise<PutArtifactResult> {
    return (await this.#load()).put(track, revision, bytes);
  }

  async get(track: string, revision: string): Promise<Uint8Array> {
    return (await this.#load()).get(track, revision);
  }

  async has(track: string, revision: string): Promise<boolean> {
    return (await this.#load()).has(track, revision);
  }

  async list(track: string): Promise<ArtifactInfo[]> {
    return (await this.#load()).list(track);
  }

  async listRevisions(track: string): Promise<ListedRevision[]> {
    return (await this.#load()).listRevisions(track);
  }

  async read<T>(track: string): Promise<VersionedValue<T> | undefined> {
    return (await this.#load()).read<T>(track);
  }

  async write<T>(
    track: string,
    value: T,
    expectedVersion: string | undefined,
  ): Promise<{ version: string }> {
    return (await this.#load()).write(track, value, expectedVersion);
  }

  async appendHistory(track: string, entry: HistoryEntry): Promise<void> {
    return (await this.#load()).appendHistory(track, entry);
  }

  async listHistory(track: string, limit?: number): Promise<HistoryEntry[]> {
    return (await this.#load()).listHistory(track, limit);
  }

  async listTracks(): Promise<string[]> {
    return (await this.#load()).listTracks();
  }

  async listVersions(): Promise<Map<string, string>> {
    return (await this.#load()).listVersions();
  }

  async remove(track: string): Promise<void> {
    return (await this.#load()).remove(track);
  }

  async markDelivery(id: string): Promise<boolean> {
    return (await this.#load()).markDelivery(id);
  }

  async isDelivered(id: string): Promise<boolean> {
    return (await this.#load()).isDelivered(id);
  }

  async publish(source: string, document: unknown): Promise<void> {
    return (await this.#load()).publish(source, document);
  }

  async readPublished<T>(source: string): Promise<T | undefined> {
    return (await this.#load()).readPublished<T>(source);
  }

  async putJobBody(body: string): Promise<string> {
    return (await this.#load()).putJobBody(body);
  }

  async readJobBody(digest: string): Promise<string> {
    return (await this.#load()).readJobBody(digest);
  }

  /** Releases the client if one was built. */
  close(): void {
    this.#store?.close();
  }
}
