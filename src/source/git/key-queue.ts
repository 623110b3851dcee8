/**
 * Runs tasks one at a time per key, in call order; tasks of different keys
 * run concurrently. Guards a cache directory: isomorphic-git writes refs,
 * the shallow file and packs without locks of its own, so two fetches into
 * one directory at once could corrupt it (the local server syncs several
 * tracks of one repository at a time). In-process only; separate processes
 * need separate cache directories.
 */
export class KeyQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

  /** Runs `task` after every task queued earlier for `key` has settled. */
  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    // A failed task must not stop the ones queued after it.
    const result = previous.then(task, task);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    // Forget the key once its last task is done, so the map does not grow forever.
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }
}
