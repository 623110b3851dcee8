/**
 * What deleting a Namespace or a CustomResourceDefinition would take with it.
 * The API server deletes everything in a Namespace, and every custom resource
 * of a CRD, whoever made it: pruning one of those would delete objects this
 * track does not own, or objects the revision still applies. Prune and
 * `delete` ask here first and leave such a definition in place (prune.ts).
 */
import type { ApiResource } from '../cluster/discovery.ts';
import { KubernetesApiError } from '../cluster/errors.ts';
import { refOf, splitApiVersion, subjectOf, type KubeObject } from '../cluster/kube-object.ts';
import type { KubernetesPort } from '../cluster/kubernetes-port.ts';
import { mapWithLimit } from '../map-with-limit.ts';
import { messageOf } from '../errors.ts';
import { isPruneDisabled, TRACK_LABEL } from './ownership.ts';

export interface CascadeOptions {
  readonly track: string;
  /**
   * Subjects of the objects the revision holds — applied, or left alone by a filter or a
   * `syncTo: ignore` rule while in Git: never deleted by a prune.
   */
  readonly inRevision?: ReadonlySet<string>;
}

/** How many objects a reason names before it counts the rest. */
const NAMED = 3;

/**
 * Kinds whose objects stand for others or are records (events, metrics, a
 * Service's Endpoints, which the endpoints controller keeps without an owner
 * reference): they go with a Namespace without being anyone's loss, and are
 * not even listed.
 */
function recordKind(resource: ApiResource): boolean {
  return (
    resource.kind === 'Event' ||
    resource.group === 'metrics.k8s.io' ||
    (resource.group === '' && resource.kind === 'Endpoints')
  );
}

/** Objects the API server makes in every Namespace. */
function madeByTheCluster(object: KubeObject): boolean {
  const { group } = splitApiVersion(object.apiVersion);
  const { name } = object.metadata;
  return (
    group === '' &&
    ((object.kind === 'ConfigMap' && name === 'kube-root-ca.crt') ||
      (object.kind === 'ServiceAccount' && name === 'default'))
  );
}

/**
 * Whether deleting would be a loss: an object owned by another (a ReplicaSet of a
 * Deployment, a Pod of a Job) goes with its owner; one labelled for this track is
 * the track's to delete, unless the revision still holds it or it is annotated
 * `driftless.dev/prune: disabled`.
 */
function wouldBeLost(object: KubeObject, options: CascadeOptions): boolean {
  if (madeByTheCluster(object)) return false;
  const owners = object.metadata['ownerReferences'];
  if (Array.isArray(owners) && owners.length > 0) return false;
  if (object.metadata.labels?.[TRACK_LABEL] !== options.track) return true;
  if (isPruneDisabled(object)) return true;
  return options.inRevision?.has(subjectOf(refOf(object))) ?? false;
}

/** The resources whose objects deleting `definition` deletes, or undefined when it is neither kind. */
function cascadeOf(
  definition: KubeObject,
  kinds: readonly ApiResource[],
): { resources: ApiResource[]; namespace?: string } | undefined {
  const { group } = splitApiVersion(definition.apiVersion);
  if (group === '' && definition.kind === 'Namespace') {
    return {
      resources: kinds.filter(
        (resource) => resource.namespaced && resource.listable && !recordKind(resource),
      ),
      namespace: definition.metadata.name,
    };
  }
  if (group === 'apiextensions.k8s.io' && definition.kind === 'CustomResourceDefinition') {
    const spec = definition.spec as { group?: string; names?: { kind?: string } } | undefined;
    return {
      resources: kinds.filter(
        (resource) => resource.group === spec?.group && resource.kind === spec.names?.kind,
      ),
    };
  }
  return undefined;
}

/**
 * Why `definition` (live) must not be deleted — the objects deleting it would
 * take that are not this track's to delete, or a kind that could not be
 * listed to know — or undefined when nothing would be lost.
 */
export async function cascadeRefusal(
  cluster: KubernetesPort,
  definition: KubeObject,
  options: CascadeOptions,
): Promise<string | undefined> {
  const cascade = cascadeOf(definition, (await cluster.discover()).kinds());
  if (cascade === undefined) return undefined;
  const lost: string[] = [];
  const unread: string[] = [];
  await mapWithLimit(cascade.resources, 8, async (resource) => {
    const apiVersion = resource.group ? `${resource.group}/${resource.version}` : resource.version;
    try {
      const items = await cluster.list({
        apiVersion,
        kind: resource.kind,
        namespace: cascade.namespace,
        metadataOnly: true,
      });
      for (const item of items) if (wouldBeLost(item, options)) lost.push(subjectOf(refOf(item)));
    } catch (error) {
      // Gone since discovery (a CRD deleted meanwhile): nothing of it to lose.
      if (error instanceof KubernetesApiError && error.httpStatus === 404) return;
      unread.push(`${resource.kind} (${messageOf(error)})`);
    }
  });
  if (lost.length > 0) {
    const more = lost.length > NAMED ? ` and ${lost.length - NAMED} more` : '';
    return `deleting it would also delete ${lost.length} object${lost.length === 1 ? '' : 's'} that ${lost.length === 1 ? 'is' : 'are'} not this track's to delete (${named(lost)}${more}); left in place: move or delete them, or delete it by hand`;
  }
  if (unread.length > 0) {
    const more = unread.length > NAMED ? ` and ${unread.length - NAMED} more kinds` : '';
    return `cannot tell what deleting it would delete, as these cannot be listed: ${named(unread)}${more}; left in place`;
  }
  return undefined;
}

/** The first few of `items`, sorted, for a message. */
function named(items: string[]): string {
  return items.sort().slice(0, NAMED).join('; ');
}
