/**
 * `writeBack.include: true`: objects people made in the cluster that a
 * `syncTo: git` rule claims but Git does not have yet, cleaned to what a
 * person wrote — the fields field managers people use own (kubectl's, and a
 * track's `handEditManagers`), never server defaults, status or
 * server-set metadata. Objects a controller made (owner references, no
 * field set by a person) and objects of any Driftless track are left out.
 */
import { TRACK_LABEL } from '../apply/ownership.ts';
import { project, type FieldSet } from '../apply/field-set.ts';
import type { ResourceCatalog } from '../cluster/discovery.ts';
import { subjectOf, type KubeObject } from '../cluster/kube-object.ts';
import type { KubernetesPort } from '../cluster/kubernetes-port.ts';
import type { SyncRule, Track } from '../config/types.ts';
import { DEFAULT_HAND_EDIT_MANAGERS, unionFieldSets } from './hand-edits.ts';

/** An object to add to Git, as a person would have written it. */
export interface ObjectNotInGit {
  readonly subject: string;
  readonly namespace?: string;
  readonly kind: string;
  readonly name: string;
  readonly object: Record<string, unknown>;
}

/** Where the rules' decision is taken (sync/sync-rules.ts), passed in: drift sits below sync. */
export type IsWrittenBack = (object: KubeObject, resource: string) => boolean;

/**
 * The cluster's objects of the track's `syncTo: git` rules that are not in
 * `inGit` (subjects), in the track's namespace when it is restricted to it.
 */
export async function objectsNotInGit(
  cluster: KubernetesPort,
  track: Pick<Track, 'rules' | 'restrictNamespace' | 'namespace' | 'handEditManagers'>,
  catalog: ResourceCatalog,
  inGit: ReadonlySet<string>,
  writtenBack: IsWrittenBack,
): Promise<ObjectNotInGit[]> {
  const managers = new Set([...DEFAULT_HAND_EDIT_MANAGERS, ...(track.handEditManagers ?? [])]);
  const found = new Map<string, ObjectNotInGit>();
  for (const rule of track.rules.filter((r) => r.syncTo === 'git')) {
    for (const resource of resourcesOf(rule, catalog)) {
      const namespace = track.restrictNamespace ? track.namespace : undefined;
      const listed = await cluster.list({
        apiVersion: resource.group ? `${resource.group}/${resource.version}` : resource.version,
        kind: resource.kind,
        namespace: resource.namespaced ? namespace : undefined,
        labelSelector: rule.labels
          ? Object.entries(rule.labels)
              .map(([key, value]) => `${key}=${value}`)
              .join(',')
          : undefined,
      });
      for (const object of listed) {
        const subject = subjectOf({
          apiVersion: object.apiVersion,
          kind: object.kind,
          name: object.metadata.name,
          namespace: object.metadata.namespace,
        });
        if (inGit.has(subject) || found.has(subject)) continue;
        if (object.metadata.labels?.[TRACK_LABEL] !== undefined) continue;
        if (Array.isArray(object.metadata['ownerReferences'])) continue;
        if (!writtenBack(object, resource.plural)) continue;
        const cleaned = asWritten(object, managers);
        if (cleaned === undefined) continue;
        found.set(subject, {
          subject,
          ...(object.metadata.namespace ? { namespace: object.metadata.namespace } : {}),
          kind: object.kind,
          name: object.metadata.name,
          object: cleaned,
        });
      }
    }
  }
  return [...found.values()];
}

/** The resources a rule names (`resources` is required with `include: true`). */
function resourcesOf(rule: SyncRule, catalog: ResourceCatalog) {
  return (rule.resources ?? []).flatMap((plural) => catalog.named(plural, rule.apiGroups));
}

/** The object as people wrote it, or undefined when no person wrote any of it. */
function asWritten(
  object: KubeObject,
  managers: ReadonlySet<string>,
): Record<string, unknown> | undefined {
  const byPeople = (object.metadata.managedFields ?? []).filter(
    (entry) => managers.has(entry.manager ?? '') && !entry.subresource && entry.fieldsV1,
  );
  if (byPeople.length === 0) return undefined;
  const fields = byPeople
    .map((entry) => entry.fieldsV1 as FieldSet)
    .reduce((all, set) => unionFieldSets(all, set), {} as FieldSet);
  const written = project(object, fields) as Record<string, unknown>;
  const metadata = (written['metadata'] ?? {}) as Record<string, unknown>;
  const annotations = { ...((metadata['annotations'] ?? {}) as Record<string, string>) };
  delete annotations['kubectl.kubernetes.io/last-applied-configuration'];
  return {
    apiVersion: object.apiVersion,
    kind: object.kind,
    ...written,
    metadata: {
      name: object.metadata.name,
      ...(object.metadata.namespace ? { namespace: object.metadata.namespace } : {}),
      ...(metadata['labels'] ? { labels: metadata['labels'] } : {}),
      ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
    },
  };
}
