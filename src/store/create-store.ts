/**
 * Builds the stores from DESIGN.md's `store:` config. The config module has
 * validated the shape; this only picks and wires the adapter.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { UsageError } from '../errors.ts';
import { FsStore } from './fs-store.ts';
import { DEFAULT_STORE_CONFIG, type Store, type StoreConfig } from './ports.ts';
import { LazyS3Store } from './lazy-s3-store.ts';

/** What {@link createStore} may be given instead of building it. */
export interface StoreDependencies {
  /** Used for an `s3` store instead of a client built from the config. */
  readonly s3Client?: S3Client;
  /** Time source for `storedAt` and delivery records. */
  readonly now?: () => Date;
}

/** A {@link Store} whose resources (an S3 client it built) `close()` releases. */
export interface ClosableStore extends Store {
  close(): void;
}

/** Every port of a {@link Store} over one adapter, which implements them all. */
function portsOf(store: FsStore | LazyS3Store, close: () => void): ClosableStore {
  return {
    artifacts: store,
    state: store,
    deliveries: store,
    published: store,
    jobBodies: store,
    close,
  };
}

/**
 * The artifact store, state store, delivery log and published-track store for
 * a `store:` config (default: the local filesystem at `.driftless/store`).
 * Throws UsageError for an unknown store type.
 */
export function createStore(
  config: StoreConfig = DEFAULT_STORE_CONFIG,
  dependencies: StoreDependencies = {},
): ClosableStore {
  const now = dependencies.now === undefined ? {} : { now: dependencies.now };
  switch (config.type) {
    case 'fs': {
      return portsOf(new FsStore({ path: config.path, ...now }), () => undefined);
    }
    case 's3': {
      const store = new LazyS3Store({
        bucket: config.bucket,
        prefix: config.prefix,
        endpoint: config.endpoint,
        region: config.region,
        encryption: config.encryption,
        kmsKeyId: config.kmsKeyId,
        client: dependencies.s3Client,
        ...now,
      });
      return portsOf(store, () => store.close());
    }
    default: {
      const type: unknown = (config as { type?: unknown }).type;
      throw new UsageError(`store.type ${JSON.stringify(type)} is not one of fs, s3`);
    }
  }
}
