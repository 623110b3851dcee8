/**
 * `driftless status --objects`: each object of the track's desired (or
 * pinned) revision as the cluster has it now — in sync, out of sync,
 * missing, or failed in the last sync — and how healthy it is, as Argo CD's
 * resource tree shows it. Reads the cluster and the store; changes nothing.
 */
import { healthOf } from '../apply/health.ts';
import { exprHealth } from '../apply/health-exprs.ts';
import { readLive, type LiveObjects } from '../apply/read-live.ts';
import { objectKey, refOf, type KubeObject } from '../cluster/kube-object.ts';
import type { Track } from '../config/types.ts';
import { untilInterrupted } from '../errors.ts';
import { detectDrift, type DriftedObject, type DriftReport } from '../drift/index.ts';
import type { RenderedObject } from '../render/types.ts';
import { redactAlongside, redactDeep } from '../redact.ts';
import type { ApplyDeps } from './apply-revision.ts';
import { loadDesiredBundle } from './load-stored-revision.ts';
import { selectObjects } from './select-objects.ts';
import { actingAs } from './track-cluster.ts';
import { readTrackState } from './track-state.ts';
import {
  MASKED_VALUE,
  type ObjectHealth,
  type ObjectStatus,
  type ObjectSync,
  type ObservedObject,
} from './observed-object.ts';

export type { ObjectHealth, ObjectStatus, ObjectSync, ObservedObject };

const HEALTH: Record<ReturnType<typeof healthOf>['state'], ObjectHealth> = {
  Current: 'Healthy',
  InProgress: 'Progressing',
  Failed: 'Degraded',
};

/** What {@link judgeObjects} needs: the objects, what the cluster has, and the drift found. */
export interface ObjectsSeen {
  readonly selected: readonly RenderedObject[];
  readonly live: LiveObjects;
  readonly report: DriftReport;
  /** Objects that failed in the last sync, with why. */
  readonly failed: Readonly<Record<string, string>>;
}

/**
 * Each object's sync and health from one reading of the cluster: shared by
 * `status --objects`, the dashboard and the drift check (which records it).
 */
export async function judgeObjects(track: Track, seen: ObjectsSeen): Promise<ObservedObject[]> {
  const { selected, live, report, failed } = seen;
  const drifted = new Map(report.drifted.map((d) => [d.subject, d]));
  const missing = new Set(report.missing);
  const unreadable = new Map(report.errors.map((e) => [e.subject, e.error]));
  const custom = await exprHealth(track.healthCheckExprs);
  const observed = selected.map((object): ObservedObject => {
    const manifest = object.manifest as KubeObject;
    const { subject } = object;
    const current = live.found.get(objectKey(refOf(manifest)));
    const judged = current ? healthOf(current, custom) : undefined;
    const health = judged ? HEALTH[judged.state] : 'Unknown';
    const change = drifted.get(subject);
    const [sync, message]: [ObjectSync, string] =
      failed[subject] !== undefined
        ? ['Failed', failed[subject]]
        : missing.has(subject)
          ? ['Missing', 'not in the cluster']
          : unreadable.has(subject)
            ? ['OutOfSync', unreadable.get(subject)!]
            : change
              ? [
                  'OutOfSync',
                  `changed by ${change.changedBy.join(', ') || 'another manager'}: ${change.patch.map((op) => op.path).join(', ')}`,
                ]
              : ['InSync', judged?.message ?? ''];
    const base = {
      subject,
      apiVersion: manifest.apiVersion,
      kind: manifest.kind,
      sync,
      health,
      message,
    };
    return change && sync === 'OutOfSync'
      ? { ...base, patch: shownPatch(manifest, current, change.patch), changedBy: change.changedBy }
      : base;
  });
  // Messages and patches may quote a decrypted or substituted value (src/redact.ts).
  return redactDeep(observed);
}

/** The value at a JSON pointer of `object`, or undefined when there is none. */
function valueAt(object: unknown, pointer: string): unknown {
  let value = object;
  for (const token of pointer.split('/').slice(1)) {
    const key = token.replaceAll('~1', '/').replaceAll('~0', '~');
    if (typeof value !== 'object' || value === null || !(key in value)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/**
 * The patch as people see it: each replaced or removed field preceded by a
 * `test` of what the cluster has (an invertible patch, still RFC 6902), so
 * the dashboard shows both sides. A Secret shows neither side's value.
 */
function shownPatch(
  manifest: KubeObject,
  live: KubeObject | undefined,
  patch: DriftedObject['patch'],
): DriftedObject['patch'] {
  const secret = manifest.kind === 'Secret';
  return patch.flatMap((operation) => {
    const shown =
      secret && 'value' in operation ? { ...operation, value: MASKED_VALUE } : operation;
    if (operation.op !== 'replace' && operation.op !== 'remove') return [shown];
    const was = valueAt(live, operation.path);
    if (was === undefined) return [shown];
    // What the cluster has where Git has a secret value (decrypted, substituted) is one too:
    // the value before a rotation, which the redaction no longer knows.
    const shownWas = secret
      ? MASKED_VALUE
      : redactAlongside(was, 'value' in operation ? operation.value : undefined);
    return [{ op: 'test' as const, path: operation.path, value: shownWas }, shown];
  });
}

/**
 * An object of the track's current revision that its `ignoreResources`, `restrictNamespace` or
 * a `syncTo: ignore` rule leaves out: never applied nor read, so it has no sync or health.
 */
export interface IgnoredObject {
  readonly subject: string;
  readonly apiVersion: string;
  /** Which filter or rule left it out. */
  readonly reason: string;
}

/** Every object of the track's current revision: those it applies, as seen, and those it leaves out. */
export interface TrackObjects<T extends ObjectStatus = ObjectStatus> {
  readonly objects: T[];
  readonly ignored: IgnoredObject[];
}

type ObserveDeps = Pick<ApplyDeps, 'cluster' | 'artifacts' | 'state' | 'readSecret'> & {
  /**
   * The reading's deadline (track-cluster.ts readWithinTimeout): the secrets a revision names
   * are read until then too, as the cluster's requests are through `cluster`.
   */
  readonly signal?: AbortSignal;
};

/** The objects of the track's current revision, those it applies as the cluster has them now. */
async function observeTrack(
  track: Track,
  given: ObserveDeps,
): Promise<TrackObjects<ObservedObject>> {
  const deps = { ...given, cluster: actingAs(given.cluster, track) };
  const state = await untilInterrupted(readTrackState(deps.state, track.name), deps.signal);
  // What the track should have now, as Argo CD compares with its target revision: the pin, or
  // the newest revision fetched (also when its sync failed), else the last applied.
  const revision = state.pinned ?? state.desiredRevision ?? state.appliedRevision;
  if (!revision) return { objects: [], ignored: [] };
  const bundle = await loadDesiredBundle(track, revision, deps);
  const { selected, ignored } = selectObjects(track, bundle.objects, await deps.cluster.discover());
  const manifests = selected.map((object) => object.manifest as KubeObject);
  // Read once: drift compares them, health judges them.
  const live = await readLive(deps.cluster, manifests);
  const report = await detectDrift(deps.cluster, track, selected, { live });
  const failed = state.failedObjects ?? {};
  return {
    objects: await judgeObjects(track, { selected, live, report, failed }),
    // In the revision's order, as the objects are.
    ignored: bundle.objects.flatMap((object) => {
      const reason = ignored[object.subject];
      const { apiVersion } = object.manifest as KubeObject;
      return reason === undefined ? [] : [{ subject: object.subject, apiVersion, reason }];
    }),
  };
}

/** The objects of the track's current revision as the cluster has them now; [] before a first fetch. */
export async function observeObjects(track: Track, deps: ObserveDeps): Promise<ObservedObject[]> {
  return (await observeTrack(track, deps)).objects;
}

/**
 * `status --objects`: the DESIGN.md shape of each object the track applies, and the objects
 * its filters and rules leave out, with why (both empty before a first fetch).
 */
export async function trackObjects(track: Track, deps: ObserveDeps): Promise<TrackObjects> {
  const { objects, ignored } = await observeTrack(track, deps);
  return {
    objects: objects.map(({ subject, apiVersion, sync, health, message }) => ({
      subject,
      apiVersion,
      sync,
      health,
      message,
    })),
    ignored,
  };
}

/** `status --objects -o json`'s `objects`: the DESIGN.md shape of each object applied. */
export async function objectStatuses(track: Track, deps: ObserveDeps): Promise<ObjectStatus[]> {
  return (await trackObjects(track, deps)).objects;
}
