/**
 * Drift detection: which of a track's objects are missing, and which fields
 * driftless owns were changed in the cluster — nothing else.
 *
 * Cheap first, exact second. One request per kind and namespace reads the
 * live objects; each is checked locally against the manifest and our
 * managedFields entry (a manifest field we no longer own, or whose value
 * differs, makes it a suspect). Only suspects cost a request more: a server
 * dry-run of our apply, whose result — normalised and defaulted by the same
 * server as the live object — is compared with the live object on the fields
 * our apply claims. A no-op check of N objects in K kinds and one namespace
 * therefore costs about K requests (plus discovery).
 *
 * Fields people added by hand to an object the track owns (hand-edits.ts)
 * are drift too: found from managedFields in the same cheap pass, reported
 * as removals, and undone by correction.
 */
import type { Operation } from 'fast-json-patch';
import {
  FIELD_MANAGER,
  TRACK_LABEL,
  isReconcileDisabled,
  updateStrategyOf,
} from '../apply/ownership.ts';
import { mapWithLimit } from '../map-with-limit.ts';
import {
  objectKey,
  refOf,
  subjectOf,
  type KubeObject,
  type ObjectRef,
} from '../cluster/kube-object.ts';
import type { KubernetesPort } from '../cluster/kubernetes-port.ts';
import type { Track } from '../config/types.ts';
import { describeDrift } from './describe-drift.ts';
import { desiredObject, type DesiredObject } from './desired-objects.ts';
import { appliedFieldSet } from '../apply/field-set.ts';
import { DEFAULT_HAND_EDIT_MANAGERS, handAddedFields, removalPatch } from './hand-edits.ts';
import { ignoredPointers } from './ignore-rules.ts';
import { suspectReason } from '../apply/manifest-fields.ts';
import { planApply } from './plan-apply.ts';
import { readLive, type LiveObjects } from '../apply/read-live.ts';
import { fieldSetAsStored, manifestAsStored } from '../apply/secret-string-data.ts';
import { messageAbout } from '../errors.ts';

/** One object whose fields drifted. */
export interface DriftedObject {
  /** `Kind/namespace/name` or `Kind/name`. */
  readonly subject: string;
  readonly ref: ObjectRef;
  /** RFC 6902 operations taking the live object to the desired one, on our fields only. */
  readonly patch: Operation[];
  /** Managers that own drifted fields now (`kubectl-edit`, `kubectl-client-side-apply`, ...). */
  readonly changedBy: string[];
}

/** An object drift could not check (listing forbidden, dry-run refused, ...). */
export interface DriftError {
  readonly subject: string;
  /** Starts with the subject. */
  readonly error: string;
}

export interface DriftReport {
  readonly drifted: DriftedObject[];
  /** Subjects of desired objects that do not exist in the cluster. */
  readonly missing: string[];
  readonly errors: DriftError[];
  /** Objects compared (reconcile-disabled and update-strategy-never objects are not). */
  readonly checked: number;
  /** Objects the cheap check suspected, each confirmed or cleared by a server dry-run. */
  readonly suspects: number;
}

export interface DetectDriftOptions {
  /** Dry-runs in flight at once. */
  readonly concurrency?: number;
  /** Called with each suspect and why, for debugging a check that costs more than expected. */
  readonly onSuspect?: (subject: string, reason: string) => void;
  /** The live objects, when the caller read them already (`status --objects` judges health too). */
  readonly live?: LiveObjects;
}

/**
 * What correction re-applies for a drifted object: the object that was
 * dry-run, computed against the live object. Kept beside the report rather
 * than in it, so reports stay plain data that can be printed or stored.
 */
const plans = new WeakMap<DriftedObject, KubeObject>();

/** For a drifted object with fields added by hand: whose managers' fields correction takes over. */
const handEdits = new WeakMap<DriftedObject, readonly string[]>();

/** The hand-edit managers whose fields correction must take over for `drifted`, if any. */
export function handEditManagersOf(drifted: DriftedObject): readonly string[] | undefined {
  return handEdits.get(drifted);
}

/** The default hand-edit managers plus the track's own. */
export function handManagersOf(track: Partial<Pick<Track, 'handEditManagers'>>): string[] {
  return [...new Set([...DEFAULT_HAND_EDIT_MANAGERS, ...(track.handEditManagers ?? [])])];
}

/** The object detection dry-ran for `drifted`, if this process detected it. */
export function plannedApply(drifted: DriftedObject): KubeObject | undefined {
  return plans.get(drifted);
}

/** True for objects drift leaves alone: reconcile disabled, or created once and never updated. */
function isExempt(object: KubeObject): boolean {
  return isReconcileDisabled(object) || updateStrategyOf(object) === 'never';
}

/**
 * Compares `desired` (the applied revision's objects) with the cluster.
 * Objects annotated `driftless.dev/reconcile: disabled` — in Git or by hand
 * on the live object — are neither reported nor counted missing; objects
 * with update strategy `never` are reported only when missing.
 */
export async function detectDrift(
  cluster: KubernetesPort,
  track: Pick<Track, 'name' | 'ignore'> & Partial<Pick<Track, 'handEditManagers'>>,
  desired: readonly DesiredObject[],
  options: DetectDriftOptions = {},
): Promise<DriftReport> {
  const objects = desired
    .map((object) => desiredObject(object, track.name))
    .filter((object) => !isReconcileDisabled(object));
  const live = options.live ?? (await readLive(cluster, objects));

  const missing: string[] = [];
  const errors: DriftError[] = [];
  const handOnly: DriftedObject[] = [];
  const suspects: { object: KubeObject; live: KubeObject; ignored: string[] }[] = [];
  const managers = handManagersOf(track);
  /** Objects with hand-added fields, by object key: their removal, and who added them. */
  const byHand = new Map<string, { patch: Operation[]; by: string[] }>();
  let checked = 0;
  for (const object of objects) {
    const key = objectKey(refOf(object));
    const subject = subjectOf(refOf(object));
    const readError = live.errors.get(key);
    if (readError !== undefined) {
      errors.push({ subject, error: messageAbout(subject, readError) });
      continue;
    }
    const current = live.found.get(key);
    if (!current) {
      missing.push(subject);
      continue;
    }
    try {
      if (isExempt(object) || isReconcileDisabled(current)) continue;
      const ignored = ignoredPointers(track.ignore, object);
      checked++;
      // Only on objects the track owns: another owner's object is an ownership matter.
      if (current.metadata.labels?.[TRACK_LABEL] === track.name) {
        const hand = handAddedFields(current, object, managers, ignored);
        const patch = hand ? removalPatch(current, hand.fields) : [];
        if (hand && patch.length > 0) byHand.set(key, { patch, by: hand.by });
      }
      const reason = suspectReason(
        manifestAsStored(object),
        fieldSetAsStored(object, appliedFieldSet(current, FIELD_MANAGER)),
        current,
        ignored,
      );
      if (reason === undefined) {
        const hand = byHand.get(key);
        if (hand) {
          // Nothing of ours changed: the hand-added fields are the whole drift, no dry-run needed.
          const drifted: DriftedObject = {
            subject,
            ref: refOf(object),
            patch: hand.patch,
            changedBy: hand.by,
          };
          handEdits.set(drifted, managers);
          handOnly.push(drifted);
        }
        continue;
      }
      options.onSuspect?.(subject, reason);
      suspects.push({ object, live: current, ignored });
    } catch (error) {
      errors.push({ subject, error: messageAbout(subject, error) });
    }
  }

  const confirmed = await mapWithLimit(suspects, options.concurrency ?? 8, async (suspect) => {
    const subject = subjectOf(refOf(suspect.object));
    try {
      const plan = planApply(suspect.object, suspect.live, suspect.ignored);
      const dryRun = await cluster.apply(plan, {
        fieldManager: FIELD_MANAGER,
        force: true,
        dryRun: true,
      });
      const described = describeDrift(suspect.live, dryRun.object, suspect.ignored);
      const hand = byHand.get(objectKey(refOf(suspect.object)));
      const patch = [...described.patch, ...(hand?.patch ?? [])];
      if (patch.length === 0) return undefined;
      const changedBy = [...new Set([...described.changedBy, ...(hand?.by ?? [])])].sort();
      const drifted: DriftedObject = { subject, ref: refOf(suspect.object), patch, changedBy };
      plans.set(drifted, plan);
      if (hand) handEdits.set(drifted, managers);
      return drifted;
    } catch (error) {
      errors.push({ subject, error: messageAbout(subject, error) });
      return undefined;
    }
  });

  return {
    drifted: [...confirmed.filter((d): d is DriftedObject => d !== undefined), ...handOnly],
    missing,
    errors,
    checked,
    suspects: suspects.length,
  };
}
