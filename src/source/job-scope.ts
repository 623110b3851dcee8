/**
 * One job's record of the repositories its track reached with its credentials, passed with
 * each source call of the job ({@link SourceCall.job}). A Git cache is shared by every track
 * of a URL, so a cached commit is read only once the track has shown the server its
 * credentials; within one job, the resolve's ref advertisement already did, and the job's
 * later reads of the commit need not ask for another (docs/git-source.md).
 *
 * Made by the job and dropped with it, never kept: the next job starts empty and reaches the
 * server again, so a credential revoked or a repository made private fails that job.
 */
export class JobScope {
  /** Opaque keys the source builds (track, URL and a digest of the credentials; no secret). */
  readonly #reached = new Set<string>();

  /** Whether the server at `key` answered this job with its credentials. */
  hasReached(key: string): boolean {
    return this.#reached.has(key);
  }

  /** Records that the server at `key` answered this job with its credentials. */
  recordReached(key: string): void {
    this.#reached.add(key);
  }
}
