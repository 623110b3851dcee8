/**
 * The track states a long-lived scheduler (the warm drift function) read at
 * earlier ticks, kept with their versions. Each tick lists the versions
 * (one S3 request per 1,000 tracks) and reads again only the documents that
 * changed since: those of the tracks that ran since the last tick, about the
 * due ones, rather than every track's every minute. A kept document whose
 * version is unchanged is the document a read would return: compare-and-swap
 * writes rely on the same version.
 */
import type { HistoryEntry, StateStore, VersionedValue } from '../store/ports.ts';

export class KeptTrackStates {
  readonly #kept = new Map<string, VersionedValue<unknown>>();

  /**
   * A view of `store` for one tick: `read` answers from the kept document
   * while its version is the listed one, and `listTracks` from the listing.
   */
  async forTick(store: StateStore): Promise<StateStore> {
    const versions = await store.listVersions();
    // Tracks deleted since: forget them, so memory follows the store.
    for (const track of this.#kept.keys()) if (!versions.has(track)) this.#kept.delete(track);
    return new ListedStateStore(store, versions, this.#kept);
  }
}

/** Reads through the kept documents; everything else goes to the store. */
class ListedStateStore implements StateStore {
  constructor(
    private readonly store: StateStore,
    private readonly versions: ReadonlyMap<string, string>,
    private readonly kept: Map<string, VersionedValue<unknown>>,
  ) {}

  async read<T>(track: string): Promise<VersionedValue<T> | undefined> {
    const kept = this.kept.get(track);
    const listed = this.versions.get(track);
    if (kept !== undefined && listed !== undefined && kept.version === listed) {
      return kept as VersionedValue<T>;
    }
    // Changed, never read, or not listed (written since the listing, or never): read it.
    const current = await this.store.read<T>(track);
    if (current === undefined) this.kept.delete(track);
    else this.kept.set(track, current);
    return current;
  }

  write<T>(track: string, value: T, expectedVersion: string | undefined) {
    return this.store.write(track, value, expectedVersion);
  }

  appendHistory(track: string, entry: HistoryEntry): Promise<void> {
    return this.store.appendHistory(track, entry);
  }

  listHistory(track: string, limit?: number): Promise<HistoryEntry[]> {
    return this.store.listHistory(track, limit);
  }

  listTracks(): Promise<string[]> {
    return Promise.resolve([...this.versions.keys()].sort());
  }

  listVersions(): Promise<Map<string, string>> {
    return Promise.resolve(new Map(this.versions));
  }

  remove(track: string): Promise<void> {
    this.kept.delete(track);
    return this.store.remove(track);
  }
}
