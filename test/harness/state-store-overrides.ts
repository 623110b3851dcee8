/**
 * A StateStore that passes every call to `store` except the ones `overrides`
 * replaces: for tests that watch or interleave with some calls (counting
 * reads, running a sync in the middle of one) and leave the rest alone.
 */
import type { StateStore } from '../../src/store/ports.ts';

export function withStateOverrides(store: StateStore, overrides: Partial<StateStore>): StateStore {
  return {
    read: (track) => store.read(track),
    write: (track, value, version) => store.write(track, value, version),
    appendHistory: (track, entry) => store.appendHistory(track, entry),
    listHistory: (track, limit) => store.listHistory(track, limit),
    listTracks: () => store.listTracks(),
    listVersions: () => store.listVersions(),
    remove: (track) => store.remove(track),
    ...overrides,
  };
}

/**
 * `store`, running `interleave` once, right after the first read of `track`'s state and before
 * the caller gets it: another job that acts between a use-case's read and its write.
 */
export function afterFirstRead(
  store: StateStore,
  track: string,
  interleave: () => Promise<void>,
): StateStore {
  let done = false;
  return withStateOverrides(store, {
    read: async <T>(name: string) => {
      const read = await store.read<T>(name);
      if (!done && name === track) {
        done = true;
        await interleave();
      }
      return read;
    },
  });
}
