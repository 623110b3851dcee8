/**
 * Counts the HTTP requests an S3 client sends, by operation (GetObject,
 * PutObject, ListObjectsV2...), with an SDK middleware in the deserialize
 * step: it runs once per attempt, inside the retry loop, so a retried
 * request counts twice, as S3 bills it.
 */
import type { S3Client } from '@aws-sdk/client-s3';

export interface S3Counts {
  readonly byOperation: Record<string, number>;
  readonly total: number;
}

export interface CountingS3 {
  /** Requests sent so far. */
  snapshot(): S3Counts;
}

/** Adds the counter to `client` (once per client). */
export function countS3Requests(client: S3Client): CountingS3 {
  const counts: Record<string, number> = {};
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const operation = (context.commandName ?? 'unknown').replace(/Command$/, '');
      counts[operation] = (counts[operation] ?? 0) + 1;
      return next(args);
    },
    { step: 'deserialize', name: 'benchS3RequestCounter' },
  );
  return {
    snapshot: () => ({
      byOperation: { ...counts },
      total: Object.values(counts).reduce((sum, n) => sum + n, 0),
    }),
  };
}

/** What was sent between two snapshots. */
export function s3Since(before: S3Counts, after: S3Counts): S3Counts {
  const byOperation: Record<string, number> = {};
  for (const [operation, n] of Object.entries(after.byOperation)) {
    const delta = n - (before.byOperation[operation] ?? 0);
    if (delta > 0) byOperation[operation] = delta;
  }
  return { byOperation, total: after.total - before.total };
}
