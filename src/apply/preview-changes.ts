/**
 * What `sync` would change, without changing anything: each object of the
 * revision goes through a server-side dry-run apply (so defaulting, admission
 * and field ownership are the server's, as in `kubectl diff`), and is compared
 * with the live object; inventory entries that left Git are what prune would
 * delete. Results are data — both forms of each changed object; how to show
 * the difference is the caller's business.
 */
import { KubernetesApiError } from '../cluster/errors.ts';
import { objectKey, refOf, subjectOf, type KubeObject } from '../cluster/kube-object.ts';
import type { KubernetesPort } from '../cluster/kubernetes-port.ts';
import type { Track } from '../config/types.ts';
import { messageAbout, messageOf } from '../errors.ts';
import { canonicalJson } from '../render/canonical-json.ts';
import type { RenderedObject } from '../render/types.ts';
import { ownershipConflict, skipReason, withOwnershipLabel } from './apply-objects.ts';
import { staleEntries, refOfEntry, type InventoryEntry } from './inventory.ts';
import { FIELD_MANAGER, TRACK_LABEL, isPruneDisabled, updateStrategyOf } from './ownership.ts';
import { mapWithLimit } from '../map-with-limit.ts';
import { cascadeRefusal } from './cascade.ts';

export type PlannedAction = 'create' | 'update' | 'prune';

/** One object sync would change, or refuse to. */
export type PlannedChange =
  | {
      readonly subject: string;
      readonly action: PlannedAction;
      /** The object now, as people compare it ({@link comparable}); absent for a creation. */
      readonly live?: KubeObject;
      /** The object as sync would leave it; absent for a prune. */
      readonly desired?: KubeObject;
      /** Something people should know about the change (e.g. it needs a recreate). */
      readonly note?: string;
    }
  | {
      readonly subject: string;
      readonly action: PlannedAction;
      /** Why the server refused the dry-run: sync would fail on this object. */
      readonly error: string;
    };

function isCustomResourceDefinitionObject(object: RenderedObject): boolean {
  return object.group === 'apiextensions.k8s.io' && object.kind === 'CustomResourceDefinition';
}

/** Requests in flight at once; dry-runs are cheap but each is a round trip. */
const CONCURRENCY = 8;

/**
 * The object as people compare it: without what the server maintains
 * (bookkeeping that changes on every write, and status, which sync never sets).
 */
export function comparable(object: KubeObject): KubeObject {
  const copy = structuredClone(object);
  delete copy.status;
  const metadata = copy.metadata as Record<string, unknown>;
  for (const field of [
    'managedFields',
    'resourceVersion',
    'generation',
    'uid',
    'creationTimestamp',
  ]) {
    delete metadata[field];
  }
  return copy;
}

/** As sync applies it: with the ownership label (else the dry-run would show it removed). */
function desiredObject(object: RenderedObject, track: string): KubeObject {
  return withOwnershipLabel(object.manifest as unknown as KubeObject, track);
}

/** The change from `live` to `desired`, or undefined when they compare equal. */
function change(
  subject: string,
  action: PlannedAction,
  live: KubeObject | undefined,
  desired: KubeObject | undefined,
  extra: { note?: string } = {},
): PlannedChange | undefined {
  const before = live && comparable(live);
  const after = desired && comparable(desired);
  if (before && after && canonicalJson(before) === canonicalJson(after)) return undefined;
  return {
    subject,
    action,
    ...(before ? { live: before } : {}),
    ...(after ? { desired: after } : {}),
    ...extra,
  };
}

async function previewObject(
  cluster: KubernetesPort,
  track: Track,
  object: RenderedObject,
  servedKinds: (object: RenderedObject) => boolean,
  namespacesCreated: ReadonlySet<string>,
  owned: ReadonlySet<string>,
  revisedKinds: ReadonlySet<string>,
  options: PreviewOptions,
): Promise<PlannedChange | undefined> {
  const desired = desiredObject(object, track.name);
  const subject = object.subject;
  // A kind whose CRD this very revision brings cannot be dry-run yet: it would be created.
  if (!servedKinds(object)) {
    return change(subject, 'create', undefined, desired, {
      note: 'its CustomResourceDefinition is applied first by this revision',
    });
  }
  const live = await cluster.get(refOf(desired));
  let strategy;
  try {
    strategy = updateStrategyOf(desired);
  } catch (error) {
    return {
      subject,
      action: live ? 'update' : 'create',
      error: `${subject}: ${messageOf(error)}`,
    };
  }
  // What sync leaves alone (reconcile disabled, `syncTo: git`, strategy never) it does not change.
  if (skipReason(subject, desired, live, strategy, { ...options, track: track.name })) {
    return undefined;
  }
  // Another owner's object: sync refuses to change it, and the preview says so.
  const conflict = ownershipConflict(subject, live, {
    track: track.name,
    owned,
    adopt: track.adopt,
  });
  if (conflict !== undefined) return { subject, action: 'update', error: conflict };
  try {
    const result = await cluster.apply(desired, {
      fieldManager: FIELD_MANAGER,
      force: true,
      dryRun: true,
    });
    return change(subject, live ? 'update' : 'create', live, result.object);
  } catch (error) {
    const apiError = error instanceof KubernetesApiError ? error : undefined;
    if (!live && apiError?.httpStatus === 404 && object.namespace !== undefined) {
      if (namespacesCreated.has(object.namespace)) {
        return change(subject, 'create', undefined, desired, {
          note: `its namespace ${object.namespace} is created by this revision`,
        });
      }
    }
    if (live && apiError?.isImmutableFieldChange && (strategy === 'recreate' || track.force)) {
      return change(subject, 'update', live, desired, {
        note: 'an immutable field changes: the object would be deleted and created again',
      });
    }
    const message = messageOf(error);
    // Checked against its CRD as the cluster has it, which this revision changes first (a
    // new field in the schema, say): the refusal may not hold, so it is a note, not an error.
    // 400/422 (invalid), or 500 for a field the schema does not declare (server-side apply).
    const schemaRefusal = [400, 422, 500].includes(apiError?.httpStatus ?? 0);
    if (schemaRefusal && revisedKinds.has(`${object.group}/${object.kind}`)) {
      return change(subject, live ? 'update' : 'create', live, desired, {
        note: `this revision changes its CustomResourceDefinition, which is applied first; against the one the cluster has now, the API server refuses it: ${message}`,
      });
    }
    return {
      subject,
      action: live ? 'update' : 'create',
      error: messageAbout(subject, error),
    };
  }
}

async function previewPrune(
  cluster: KubernetesPort,
  track: Track,
  entry: InventoryEntry,
  inRevision: ReadonlySet<string>,
): Promise<PlannedChange | undefined> {
  const live = await cluster.get(refOfEntry(entry));
  // Prune deletes only what is still there, labelled as ours and not protected, and no
  // Namespace or CRD that would take others' objects with it (cascade.ts).
  if (!live || live.metadata.labels?.[TRACK_LABEL] !== track.name || isPruneDisabled(live)) {
    return undefined;
  }
  if ((await cascadeRefusal(cluster, live, { track: track.name, inRevision })) !== undefined) {
    return undefined;
  }
  return change(subjectOf(refOfEntry(entry)), 'prune', live, undefined);
}

/** What sync is told besides the objects (reconcile-objects.ts), that the preview must know too. */
export interface PreviewOptions {
  /** `syncTo: git` objects sync creates when missing and leaves alone otherwise (apply-revision.ts). */
  readonly createOnly?: ReadonlySet<string>;
  /** Subjects left out by a rule or filter (select-objects.ts `ruledOut`): never pruned. */
  readonly keep?: ReadonlySet<string>;
}

/**
 * The changes a sync of `selected` (a revision's objects the track applies)
 * would make: creates and updates in the given order, then prunes (when the
 * track prunes) of `inventory` entries no longer among them and not kept.
 */
export async function previewChanges(
  cluster: KubernetesPort,
  track: Track,
  selected: readonly RenderedObject[],
  inventory: readonly InventoryEntry[],
  options: PreviewOptions = {},
): Promise<PlannedChange[]> {
  const catalog = await cluster.discover();
  const served = (o: RenderedObject): boolean =>
    catalog.find(o.group, o.version, o.kind) !== undefined;
  const namespacesCreated = new Set(
    selected.filter((o) => o.group === '' && o.kind === 'Namespace').map((o) => o.name),
  );
  const owned = new Set(inventory.map((entry) => objectKey(refOfEntry(entry))));
  const preview = (object: RenderedObject, revisedKinds: ReadonlySet<string>) =>
    previewObject(cluster, track, object, served, namespacesCreated, owned, revisedKinds, options);
  // CRDs first: the custom resources of one this revision changes are checked against the CRD
  // as it is now, so their refusal is told as such (previewObject) — when the CRD's own
  // change would go through.
  const crds = new Map(
    await mapWithLimit(
      selected.filter(isCustomResourceDefinitionObject),
      CONCURRENCY,
      async (o) => [o, await preview(o, new Set())] as const,
    ),
  );
  const revisedKinds = new Set(
    [...crds].flatMap(([object, planned]) => {
      if (planned === undefined || planned.action !== 'update' || 'error' in planned) return [];
      const spec = object.manifest.spec as { group?: string; names?: { kind?: string } };
      return [`${spec.group}/${spec.names?.kind}`];
    }),
  );
  const updates = await mapWithLimit(selected, CONCURRENCY, (object) =>
    crds.has(object) ? Promise.resolve(crds.get(object)) : preview(object, revisedKinds),
  );
  const refs = selected.map((o) => refOf(o.manifest as unknown as KubeObject));
  const keep = options.keep ?? new Set<string>();
  // As sync's prune (reconcile-objects.ts): what is kept counts as still in the revision.
  const inRevision = new Set([...selected.map((object) => object.subject), ...keep]);
  const stale = staleEntries(inventory, refs).filter((entry) => !keep.has(entry.subject));
  const prunes = track.prune
    ? await mapWithLimit(stale, CONCURRENCY, (entry) =>
        previewPrune(cluster, track, entry, inRevision),
      )
    : [];
  return [...updates, ...prunes].filter((c): c is PlannedChange => c !== undefined);
}
