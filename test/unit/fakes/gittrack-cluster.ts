/**
 * The in-memory cluster as an API server treats a Faros GitTrack, for tests of the GitTrack
 * discovery and its collection (discover-git-tracks.ts): a status apply changes only `.status`;
 * Driftless' finalizer apply changes only its finalizer; a GitTrack deleted while it has
 * finalizers is held (deletionTimestamp) until the last is released. Deletes of ConfigMaps can
 * be refused (an admission webhook); `events` lists the deletes done and finalizers released, in
 * order, and `refusedDeletes` counts the deletes refused (each one reached the API server).
 */
import assert from 'node:assert/strict';
import {
  objectKey,
  refOf,
  type KubeObject,
  type ObjectRef,
} from '../../../src/cluster/kube-object.ts';
import type { ApplyOptions, ApplyResult, ListQuery } from '../../../src/cluster/kubernetes-port.ts';
import { GIT_TRACK_API_VERSION } from '../../../src/config/git-track.ts';
import { GC_FINALIZER, GIT_TRACK_MANAGER } from '../../../src/sync/discover-git-tracks.ts';
import { InMemoryCluster } from './in-memory-cluster.ts';

/** `apps/<name>`, as kubectl writes it, its objects deleted when it is. */
export function gitTrack(
  name: string,
  repository = `https://git.example.com/${name}.git`,
): KubeObject {
  return {
    apiVersion: GIT_TRACK_API_VERSION,
    kind: 'GitTrack',
    metadata: {
      name,
      namespace: 'apps',
      annotations: { 'driftless.dev/deletion-policy': 'Delete' },
    },
    spec: { repository, reference: 'main' },
  };
}

export const gitTrackRef = (name: string): ObjectRef => ({
  apiVersion: GIT_TRACK_API_VERSION,
  kind: 'GitTrack',
  namespace: 'apps',
  name,
});

export const configMapRef = (name: string): ObjectRef => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  namespace: 'apps',
  name,
});

export function finalizersOf(object: KubeObject): string[] {
  const finalizers = object.metadata['finalizers'];
  return Array.isArray(finalizers) ? (finalizers as string[]) : [];
}

export class GitTrackCluster extends InMemoryCluster {
  refuseDeletes = false;
  refusedDeletes = 0;
  readonly events: string[] = [];

  override async apply(object: KubeObject, options: ApplyOptions): Promise<ApplyResult> {
    const live = this.objects.get(objectKey(refOf(object)));
    if (object.kind !== 'GitTrack' || live === undefined) return super.apply(object, options);
    if (options.subresource === 'status') {
      return super.apply({ ...live, status: object['status'] }, options);
    }
    assert.equal(options.fieldManager, GIT_TRACK_MANAGER, 'only Driftless applies here');
    const others = finalizersOf(live).filter((f) => f !== GC_FINALIZER);
    const finalizers = [...others, ...finalizersOf(object)];
    if (finalizers.length === 0 && live.metadata['deletionTimestamp'] !== undefined) {
      this.events.push(`released GitTrack ${live.metadata.name}`);
      this.objects.delete(objectKey(refOf(live)));
      return { object: live, created: false };
    }
    return super.apply({ ...live, metadata: { ...live.metadata, finalizers } }, options);
  }

  /** Sorted by namespace, then name, as the API server lists: not in the order they were made. */
  override async list(query: ListQuery): Promise<KubeObject[]> {
    const key = (object: KubeObject): string =>
      `${object.metadata.namespace ?? ''}/${object.metadata.name}`;
    return (await super.list(query)).sort((a, b) => (key(a) < key(b) ? -1 : 1));
  }

  override async delete(ref: ObjectRef): Promise<'deleted' | 'not-found'> {
    if (ref.kind === 'ConfigMap' && this.refuseDeletes) {
      this.refusedDeletes += 1;
      throw new Error(`admission webhook "guard.example.com" denied the request: keep ${ref.name}`);
    }
    this.events.push(`deleted ${ref.kind} ${ref.name}`);
    return super.delete(ref);
  }

  /** `kubectl edit gittrack <name>`: a new spec, its finalizers and annotations kept. */
  editGitTrack(name: string, spec: Record<string, unknown>): void {
    const key = objectKey(gitTrackRef(name));
    const live = this.objects.get(key)!;
    this.objects.set(key, { ...live, spec });
  }

  /** `kubectl delete gittrack <name>`: held while it has finalizers. */
  deleteGitTrack(name: string): void {
    const key = objectKey(gitTrackRef(name));
    const live = this.objects.get(key)!;
    assert.ok(finalizersOf(live).includes(GC_FINALIZER), 'the discovery held its finalizer');
    const metadata = { ...live.metadata, deletionTimestamp: '2026-01-01T12:00:00Z' };
    this.objects.set(key, { ...live, metadata });
  }
}
