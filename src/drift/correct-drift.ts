/**
 * Drift correction: re-apply only what drifted, recreate what is missing.
 * Goes through the sync's own apply (staged SSA, force, field manager
 * `driftless`, ownership label, update strategies), so a correction is
 * exactly a partial sync of the applied revision.
 */
import { applyObjects } from '../apply/apply-objects.ts';
import type { ChangeSetEntry } from '../apply/changeset.ts';
import { objectKey, refOf, subjectOf, type KubeObject } from '../cluster/kube-object.ts';
import type { KubernetesPort } from '../cluster/kubernetes-port.ts';
import type { Track } from '../config/types.ts';
import { desiredObject, type DesiredObject } from './desired-objects.ts';
import {
  handEditManagersOf,
  plannedApply,
  type DriftedObject,
  type DriftReport,
} from './detect-drift.ts';
import { handAddedFields, takeOverHandFields } from './hand-edits.ts';
import { messageOf } from '../errors.ts';
import { KubernetesApiError } from '../cluster/errors.ts';
import { ignoredPointers } from './ignore-rules.ts';
import { planApply } from './plan-apply.ts';

export interface CorrectDriftOptions {
  readonly concurrency?: number;
  readonly timeoutMs?: number;
  /** The track's inventory keys: unlabelled objects in it are still the track's. */
  readonly owned?: ReadonlySet<string>;
  /** Aborted when the caller is asked to stop: nothing more is put back (errors.ts). */
  readonly signal?: AbortSignal;
}

/**
 * Re-applies the drifted objects of `report` (ignored fields that others own
 * left out, as detection dry-ran them) and recreates the missing ones.
 * Returns one changeset entry per object touched: `configured`, `created`,
 * `recreated`, `skipped` or `failed`.
 */
export async function correctDrift(
  cluster: KubernetesPort,
  track: Pick<Track, 'name' | 'ignore'> & Partial<Pick<Track, 'adopt' | 'force'>>,
  report: Pick<DriftReport, 'drifted' | 'missing'>,
  desired: readonly DesiredObject[],
  options: CorrectDriftOptions = {},
): Promise<ChangeSetEntry[]> {
  const objects = desired.map((object) => desiredObject(object, track.name));
  const byKey = new Map(objects.map((object) => [objectKey(refOf(object)), object]));
  const toApply: KubeObject[] = [];
  const refused: ChangeSetEntry[] = [];
  for (const drifted of report.drifted) {
    const object = byKey.get(objectKey(drifted.ref));
    if (!object) continue; // no longer desired: pruning's business, not drift's
    const managers = handEditManagersOf(drifted);
    if (managers !== undefined) {
      // Fields added by hand: hand them to our apply entry, so the apply below removes them.
      const failure = await takeOver(cluster, drifted, object, managers, track.ignore);
      if (failure !== undefined) {
        refused.push(failure);
        continue;
      }
      // Planned against the object before the take-over: plan again against what is there now.
      toApply.push(
        planApply(object, await cluster.get(drifted.ref), ignoredPointers(track.ignore, object)),
      );
      continue;
    }
    // A report from elsewhere (or copied) has no plan: work it out from the live object again.
    toApply.push(
      plannedApply(drifted) ??
        planApply(object, await cluster.get(drifted.ref), ignoredPointers(track.ignore, object)),
    );
  }
  const missing = new Set(report.missing);
  toApply.push(...objects.filter((object) => missing.has(subjectOf(refOf(object)))));
  if (toApply.length === 0) return refused;
  const { changeset } = await applyObjects(cluster, toApply, {
    track: track.name,
    adopt: track.adopt === true,
    force: track.force === true,
    ...(options.owned === undefined ? {} : { owned: options.owned }),
    ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
  return [...refused, ...changeset];
}

/** Reads and patches of one object before a take-over gives up on an object that keeps changing. */
const TAKE_OVER_ATTEMPTS = 5;

/**
 * Takes the fields only hand-edit managers own on the live object over into
 * our apply entry; a changeset entry saying why when that cannot be done.
 */
async function takeOver(
  cluster: KubernetesPort,
  drifted: DriftedObject,
  desired: KubeObject,
  managers: readonly string[],
  ignore: Track['ignore'],
): Promise<ChangeSetEntry | undefined> {
  const { subject } = drifted;
  try {
    if (cluster.replaceManagedFields === undefined) {
      throw new Error('this cluster connection cannot rewrite managedFields');
    }
    // Controllers write status all the time: a patch that met a newer object reads it again.
    for (let attempt = 1; ; attempt++) {
      const live = await cluster.get(drifted.ref);
      // The fields detection reported, as they are now: ignored ones and Git's own stay out.
      const hand = live
        ? handAddedFields(live, desired, managers, ignoredPointers(ignore, desired))
        : undefined;
      if (!live || !hand) return undefined;
      try {
        await cluster.replaceManagedFields(
          drifted.ref,
          live.metadata.resourceVersion ?? '',
          takeOverHandFields(live, managers, hand.fields),
        );
        return undefined;
      } catch (error) {
        const changed =
          error instanceof KubernetesApiError &&
          (error.httpStatus === 422 || error.httpStatus === 409);
        if (!changed || attempt >= TAKE_OVER_ATTEMPTS) throw error;
      }
    }
  } catch (error) {
    return {
      subject,
      action: 'failed',
      error: `${subject}: fields added by hand could not be taken over: ${messageOf(error)}`,
    };
  }
}
