/**
 * The source of every track: Git repositories through source/git, bucket
 * tracks (`bucket:`) through source/bucket. Both answer the same port, so
 * everything downstream (render, artifact, apply, drift, rollback, history)
 * is the same for both.
 */
import { createBucketSource, type BucketSourceOptions } from './bucket/bucket-source.ts';
import { createGitSource, type GitSourceOptions } from './git/index.ts';
import type { GitSource } from './ports.ts';

export type TrackSourceOptions = GitSourceOptions & Pick<BucketSourceOptions, 'client'>;

/** The source for every kind of track; see the module comment. */
export function createTrackSource(options: TrackSourceOptions): GitSource {
  const git = createGitSource(options);
  const bucket = createBucketSource({
    readSecret: options.readSecret,
    ...(options.client ? { client: options.client } : {}),
  });
  return {
    resolve: (track, call) =>
      track.bucket ? bucket.resolve(track, call) : git.resolve(track, call),
    readFiles: (track, revision, scope, call) =>
      track.bucket
        ? bucket.readFiles(track, revision, scope, call)
        : git.readFiles(track, revision, scope, call),
    // The config refuses verify on a bucket track: a listing has no signature.
    verifyCommit: (track, revision, call) =>
      track.bucket ? Promise.resolve(undefined) : git.verifyCommit!(track, revision, call),
    // A bucket listing has no commit to describe.
    describeCommit: (track, revision) =>
      track.bucket ? Promise.resolve(undefined) : git.describeCommit!(track, revision),
    // The config refuses syncTo: git on a bucket track: there is nothing to push to.
    commit: (track, request, call) => git.commit!(track, request, call),
  };
}
