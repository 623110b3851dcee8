/**
 * A small in-memory KubernetesPort for unit tests of the CLI and use-cases.
 * Apply replaces the object as server-side apply by one manager would, keeps
 * its uid, and bumps resourceVersion only when the content changed (so
 * "unchanged" can be told from "configured", as with a real API server).
 */
import { isDeepStrictEqual } from 'node:util';
import { ResourceCatalog, type ApiResource } from '../../../src/cluster/discovery.ts';
import {
  objectKey,
  refOf,
  type KubeObject,
  type ObjectRef,
} from '../../../src/cluster/kube-object.ts';
import type {
  ApplyOptions,
  ApplyResult,
  KubernetesPort,
  ListQuery,
} from '../../../src/cluster/kubernetes-port.ts';

const DEFAULT_KINDS: readonly ApiResource[] = [
  {
    group: '',
    version: 'v1',
    kind: 'ConfigMap',
    plural: 'configmaps',
    namespaced: true,
    listable: true,
  },
  {
    group: 'apps',
    version: 'v1',
    kind: 'Deployment',
    plural: 'deployments',
    namespaced: true,
    listable: true,
  },
];

export class InMemoryCluster implements KubernetesPort {
  readonly objects = new Map<string, KubeObject>();
  /** Kinds whose every request fails, as if forbidden. */
  readonly failingKinds = new Set<string>();
  /** When set, every apply is refused (an admission webhook says no). */
  refuseApply = false;
  private version = 1;

  constructor(private readonly kinds: readonly ApiResource[] = DEFAULT_KINDS) {}

  private check(kind: string): void {
    if (this.failingKinds.has(kind)) throw new Error(`${kind}: forbidden`);
  }

  async serverVersion(): Promise<string> {
    return 'v1.36.3';
  }

  async discover(): Promise<ResourceCatalog> {
    return new ResourceCatalog(this.kinds);
  }

  async apply(object: KubeObject, options: ApplyOptions): Promise<ApplyResult> {
    this.check(object.kind);
    if (this.refuseApply) throw new Error('admission webhook denied the request');
    const key = objectKey(refOf(object));
    const live = this.objects.get(key);
    const stored: KubeObject = {
      ...structuredClone(object),
      metadata: {
        ...structuredClone(object.metadata),
        uid: live?.metadata.uid ?? `uid-${key}`,
        resourceVersion: live?.metadata.resourceVersion ?? '0',
        managedFields: [{ manager: options.fieldManager, operation: 'Apply' }],
      },
    };
    if (!isDeepStrictEqual(stored, live)) stored.metadata.resourceVersion = String(++this.version);
    if (!options.dryRun) this.objects.set(key, stored);
    return { object: structuredClone(stored), created: live === undefined };
  }

  async get(ref: ObjectRef): Promise<KubeObject | undefined> {
    this.check(ref.kind);
    const live = this.objects.get(objectKey(ref));
    return live && structuredClone(live);
  }

  async list(query: ListQuery): Promise<KubeObject[]> {
    this.check(query.kind);
    return [...this.objects.values()].filter(
      (o) =>
        o.apiVersion === query.apiVersion &&
        o.kind === query.kind &&
        (query.namespace === undefined || o.metadata.namespace === query.namespace),
    );
  }

  async delete(ref: ObjectRef): Promise<'deleted' | 'not-found'> {
    return this.objects.delete(objectKey(ref)) ? 'deleted' : 'not-found';
  }
}
