/**
 * Staged apply order (as Flux's kustomize-controller): definitions that other
 * objects need — CRDs, Namespaces, cluster-wide roles and classes — go first,
 * so the rest can be applied concurrently without ordering failures.
 */
import type { KubeObject } from '../cluster/kube-object.ts';

const FIRST_STAGE_KINDS = new Set([
  'apiextensions.k8s.io/CustomResourceDefinition',
  '/Namespace',
  'rbac.authorization.k8s.io/ClusterRole',
  'rbac.authorization.k8s.io/ClusterRoleBinding',
  'scheduling.k8s.io/PriorityClass',
  'storage.k8s.io/StorageClass',
  'networking.k8s.io/IngressClass',
  'node.k8s.io/RuntimeClass',
]);

function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

/** True for objects applied in the first stage. */
export function isClusterDefinition(object: Pick<KubeObject, 'apiVersion' | 'kind'>): boolean {
  return FIRST_STAGE_KINDS.has(`${groupOf(object.apiVersion)}/${object.kind}`);
}

/** True for a CustomResourceDefinition, which must be Established before its resources apply. */
export function isCustomResourceDefinition(
  object: Pick<KubeObject, 'apiVersion' | 'kind'>,
): boolean {
  return (
    groupOf(object.apiVersion) === 'apiextensions.k8s.io' &&
    object.kind === 'CustomResourceDefinition'
  );
}

/** Splits objects into [first stage, second stage], keeping their order inside each. */
export function splitStages<T extends { object: Pick<KubeObject, 'apiVersion' | 'kind'> }>(
  items: readonly T[],
): [T[], T[]] {
  const first: T[] = [];
  const second: T[] = [];
  for (const item of items) (isClusterDefinition(item.object) ? first : second).push(item);
  return [first, second];
}
