/**
 * The shapes Driftless passes around for Kubernetes objects, and the one way
 * to name them for people (subjects) and for machines (object keys).
 */

/** Any Kubernetes object as plain JSON, kept as written: no typed model drops fields. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    uid?: string;
    resourceVersion?: string;
    managedFields?: ManagedFieldsEntry[];
    [field: string]: unknown;
  };
  [field: string]: unknown;
}

export interface ManagedFieldsEntry {
  manager?: string;
  operation?: 'Apply' | 'Update';
  apiVersion?: string;
  time?: string;
  fieldsType?: string;
  fieldsV1?: Record<string, unknown>;
  subresource?: string;
}

/** What identifies an object: group and kind, not version (one object, many versions). */
export interface ObjectRef {
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace?: string | undefined;
  readonly name: string;
}

/** Splits `apps/v1` into group `apps` and version `v1`; the core group is ''. */
export function splitApiVersion(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.indexOf('/');
  return slash < 0
    ? { group: '', version: apiVersion }
    : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

/** `Kind/namespace/name`, or `Kind/name` for cluster-scoped objects: for people. */
export function subjectOf(ref: ObjectRef): string {
  return ref.namespace ? `${ref.kind}/${ref.namespace}/${ref.name}` : `${ref.kind}/${ref.name}`;
}

/** A stable key by group, kind, namespace and name: for inventory, prune and drift. */
export function objectKey(ref: ObjectRef): string {
  const { group } = splitApiVersion(ref.apiVersion);
  return `${group}|${ref.kind}|${ref.namespace ?? ''}|${ref.name}`;
}

/** The reference of an object. */
export function refOf(object: KubeObject): ObjectRef {
  return {
    apiVersion: object.apiVersion,
    kind: object.kind,
    namespace: object.metadata.namespace,
    name: object.metadata.name,
  };
}
