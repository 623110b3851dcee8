/**
 * Faros' filters: `restrictNamespace` keeps only objects in the track's
 * namespace; `ignoreResources` skips whole resource types; and the two-way
 * sync rules (sync-rules.ts): `syncTo: ignore` leaves an object out, `syncTo:
 * git` marks it for write-back. Every object left out is named with its
 * reason (status `ignoredObjects`). An object left out is left alone, not
 * pruned: a filter turned on for a track that applied it before must not
 * delete it (a Namespace, and everything in it, among them). Only leaving Git
 * prunes it, as it stays in the inventory.
 */
import { formatResourceType } from '../config/resource-type.ts';
import type { Track } from '../config/types.ts';
import type { ResourceCatalog } from '../cluster/discovery.ts';
import type { RenderedObject } from '../render/types.ts';
import { ruleIndexOf, syncToOf, type RuleSubject } from './sync-rules.ts';

export interface Selection {
  readonly selected: RenderedObject[];
  readonly ignored: Record<string, string>;
  /** Subjects of selected objects whose rule says `syncTo: git`: drift is written back. */
  readonly toGit: ReadonlySet<string>;
  /** Subjects left out, by a rule or a filter: never pruned while they are in Git. */
  readonly ruledOut: ReadonlySet<string>;
}

/** The plural resource name of an object: from discovery, else from a CRD in the same revision. */
function pluralOf(
  object: RenderedObject,
  catalog: ResourceCatalog,
  bundle: readonly RenderedObject[],
): string {
  const known = catalog.find(object.group, object.version, object.kind);
  if (known) return known.plural;
  for (const candidate of bundle) {
    if (candidate.kind !== 'CustomResourceDefinition') continue;
    const spec = candidate.manifest.spec as
      { group?: string; names?: { kind?: string; plural?: string } } | undefined;
    if (spec?.group === object.group && spec.names?.kind === object.kind && spec.names.plural)
      return spec.names.plural;
  }
  return `${object.kind.toLowerCase()}s`;
}

/** Splits the revision's objects into those to apply and those the track ignores. */
export function selectObjects(
  track: Pick<Track, 'namespace' | 'restrictNamespace' | 'ignoreResources' | 'rules'>,
  objects: readonly RenderedObject[],
  catalog: ResourceCatalog,
): Selection {
  const selected: RenderedObject[] = [];
  const ignored: Record<string, string> = {};
  const toGit = new Set<string>();
  const ruledOut = new Set<string>();
  for (const object of objects) {
    const subject: RuleSubject = {
      group: object.group,
      resource: pluralOf(object, catalog, objects),
      namespace: object.namespace,
      name: object.name,
      labels: labelsOf(object),
    };
    const syncTo = syncToOf(track, subject);
    if (syncTo === 'ignore') {
      ignored[object.subject] = `rules[${ruleIndexOf(track, subject)}]: syncTo: ignore`;
      ruledOut.add(object.subject);
      continue;
    }
    const ignoredType = track.ignoreResources.find(
      (type) =>
        type.group === object.group &&
        type.version === object.version &&
        type.resource === pluralOf(object, catalog, objects),
    );
    if (ignoredType) {
      ignored[object.subject] = `resource ${formatResourceType(ignoredType)} is ignored`;
      ruledOut.add(object.subject);
    } else if (track.restrictNamespace && object.namespace !== track.namespace) {
      ignored[object.subject] =
        object.namespace === undefined
          ? `cluster-scoped objects are ignored: the track is restricted to namespace ${track.namespace}`
          : `namespace ${object.namespace} is outside the track's namespace ${track.namespace}`;
      ruledOut.add(object.subject);
    } else {
      selected.push(object);
      if (syncTo === 'git') toGit.add(object.subject);
    }
  }
  return { selected, ignored, toGit, ruledOut };
}

function labelsOf(object: RenderedObject): Record<string, string> {
  const metadata = object.manifest['metadata'] as { labels?: Record<string, string> } | undefined;
  return metadata?.labels ?? {};
}
