/**
 * `driftless status --objects`: each object of the track's desired (or
 * pinned) revision as the cluster has it now — in sync, out of sync,
 * missing, or failed in the last sync — and how healthy it is, as Argo CD's
 * resource tree shows it. Reads the cluster and the store; changes nothing.
 */
import { healthOf } from '../apply/health.ts';
import { exprHealth } from '../apply/health-exprs.ts';
import { readLive } from '../apply/read-live.ts';
import { objectKey, refOf, type KubeObject } from '../cluster/kube-object.ts';
import type { Track } from '../config/types.ts';
import { detectDrift } from '../drift/index.ts';
import { redactDeep } from '../redact.ts';
import type { ApplyDeps } from './apply-revision.ts';
import { loadDesiredBundle } from './load-stored-revision.ts';
import { selectObjects } from './select-objects.ts';
import { actingAs } from './track-cluster.ts';
import { readTrackState } from './track-state.ts';

export type ObjectSync = 'InSync' | 'OutOfSync' | 'Missing' | 'Failed';
export type ObjectHealth = 'Healthy' | 'Progressing' | 'Degraded' | 'Unknown';

/** DESIGN.md `status --objects -o json`: one per object. */
export interface ObjectStatus {
  readonly subject: string;
  readonly apiVersion: string;
  readonly sync: ObjectSync;
  readonly health: ObjectHealth;
  readonly message: string;
}

const HEALTH: Record<ReturnType<typeof healthOf>['state'], ObjectHealth> = {
  Current: 'Healthy',
  InProgress: 'Progressing',
  Failed: 'Degraded',
};

/** The objects of the track's current revision with their sync and health; [] before a first fetch. */
export async function objectStatuses(
  track: Track,
  given: Pick<ApplyDeps, 'cluster' | 'artifacts' | 'state' | 'readSecret'>,
): Promise<ObjectStatus[]> {
  const deps = { ...given, cluster: actingAs(given.cluster, track) };
  const state = await readTrackState(deps.state, track.name);
  // What the track should have now, as Argo CD compares with its target revision: the pin, or
  // the newest revision fetched (also when its sync failed), else the last applied.
  const revision = state.pinned ?? state.desiredRevision ?? state.appliedRevision;
  if (!revision) return [];
  const bundle = await loadDesiredBundle(track, revision, deps);
  const { selected } = selectObjects(track, bundle.objects, await deps.cluster.discover());
  const manifests = selected.map((object) => object.manifest as KubeObject);
  // Read once: drift compares them, health judges them.
  const live = await readLive(deps.cluster, manifests);
  const report = await detectDrift(deps.cluster, track, selected, { live });
  const drifted = new Map(report.drifted.map((d) => [d.subject, d]));
  const missing = new Set(report.missing);
  const unreadable = new Map(report.errors.map((e) => [e.subject, e.error]));
  const failed = state.failedObjects ?? {};
  const custom = exprHealth(track.healthCheckExprs);
  const statuses = selected.map((object): ObjectStatus => {
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
    return { subject, apiVersion: manifest.apiVersion, sync, health, message };
  });
  // Messages may quote a decrypted or substituted value (src/redact.ts).
  return redactDeep(statuses);
}
