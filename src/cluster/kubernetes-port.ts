/**
 * The port through which Driftless touches a cluster. Only the apply function
 * holds an implementation with credentials; everything else sees this
 * interface, and unit tests may fake it.
 */
import type { ResourceCatalog } from './discovery.ts';
import type { KubeObject, ManagedFieldsEntry, ObjectRef } from './kube-object.ts';

export interface ApplyOptions {
  readonly fieldManager: string;
  /** Take fields over from other managers instead of failing with a conflict. */
  readonly force: boolean;
  /** Ask the server what would happen (dryRun=All); nothing is persisted. */
  readonly dryRun?: boolean;
  /** Apply to the object's status subresource (a GitTrack's `.status`) instead of the object. */
  readonly subresource?: 'status';
}

export interface ApplyResult {
  /** The object as the server stored it (or would, on dry-run). */
  readonly object: KubeObject;
  /** True when the server created the object (HTTP 201). */
  readonly created: boolean;
}

export interface ListQuery {
  readonly apiVersion: string;
  readonly kind: string;
  /** Omit to list across all namespaces (or a cluster-scoped kind). */
  readonly namespace?: string | undefined;
  readonly labelSelector?: string | undefined;
  /** Only metadata (PartialObjectMetadata): far less to transfer when only names and versions matter. */
  readonly metadataOnly?: boolean;
}

export interface DeleteOptions {
  readonly propagationPolicy?: 'Background' | 'Foreground' | 'Orphan';
  /** Delete only this very object: refused (conflict) if it was replaced or changed meanwhile. */
  readonly preconditions?: { readonly uid?: string; readonly resourceVersion?: string };
  readonly dryRun?: boolean;
}

export interface KubernetesPort {
  /** What the API server serves; cached, re-read when `refresh` is true. */
  discover(refresh?: boolean): Promise<ResourceCatalog>;
  /**
   * Starts reading discovery ahead of need, for the discover() calls to come; cancelled when
   * `until` aborts before any came. Undefined for a port with nothing to read ahead.
   */
  prefetchDiscovery?(until: AbortSignal): void;
  /** The API server's version (`v1.36.3`): Helm's `.Capabilities.KubeVersion`. */
  serverVersion(): Promise<string>;
  /** Server-side apply of `object` exactly as given. */
  apply(object: KubeObject, options: ApplyOptions): Promise<ApplyResult>;
  /** The object, or undefined when it does not exist. */
  get(ref: ObjectRef): Promise<KubeObject | undefined>;
  /** Every object matching the query, following the server's paging. */
  list(query: ListQuery): Promise<KubeObject[]>;
  /** Deletes the object; 'not-found' when it was already gone. */
  delete(ref: ObjectRef, options?: DeleteOptions): Promise<'deleted' | 'not-found'>;
  /**
   * Replaces the object's `metadata.managedFields` if it is still at
   * `resourceVersion` (a JSON patch with a test): how drift correction takes
   * over fields people added by hand, so the next apply removes them.
   * Undefined for a port that cannot.
   */
  replaceManagedFields?(
    ref: ObjectRef,
    resourceVersion: string,
    entries: readonly ManagedFieldsEntry[],
  ): Promise<void>;
  /**
   * The same cluster, every request made as `user` in `groups` (Kubernetes
   * impersonation: the credentials need the `impersonate` verb). Undefined
   * for a port that cannot impersonate.
   */
  impersonate?(user: string, groups: readonly string[]): KubernetesPort;
  /**
   * The same cluster, every request it sends ended when `signal` aborts: the
   * request is cancelled on its connection and rejects with the signal's
   * reason (a track's deadline: bounded-cluster.ts). Undefined for a port
   * whose requests cannot be cancelled; bounded-cluster.ts then only stops
   * waiting for them.
   */
  withSignal?(signal: AbortSignal): KubernetesPort;
}
