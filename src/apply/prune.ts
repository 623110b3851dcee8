/**
 * Prune: delete what left Git — but only objects that carry this track's
 * ownership label and are not annotated `driftless.dev/prune: disabled`, and
 * never a Namespace or CRD whose deletion would take objects with it that the
 * track does not own or still applies (cascade.ts).
 * The caller prunes only after every object of the new revision applied.
 */
import { subjectOf } from '../cluster/kube-object.ts';
import { cascadeRefusal } from './cascade.ts';
import type { KubernetesPort } from '../cluster/kubernetes-port.ts';
import type { ChangeSetEntry, Interrupted } from './changeset.ts';
import { refOfEntry, type InventoryEntry } from './inventory.ts';
import { TRACK_LABEL, isPruneDisabled } from './ownership.ts';
import { mapWithLimit } from '../map-with-limit.ts';
import { interruptionOf, messageAbout } from '../errors.ts';

export interface PruneOptions {
  readonly track: string;
  readonly dryRun?: boolean;
  /**
   * Subjects of the objects the revision holds (applied, or left alone while in Git): a
   * Namespace or CRD whose deletion would take one of them is left in place (cascade.ts).
   */
  readonly inRevision?: ReadonlySet<string>;
  /** Aborted when the caller is asked to stop: no delete is sent after it (errors.ts). */
  readonly signal?: AbortSignal;
}

export interface PruneResult {
  /** One entry per object found, in the order given (an object already gone has none). */
  readonly changeset: ChangeSetEntry[];
  /**
   * Subjects left in place because deleting them would take what the track does not own
   * (cascade.ts): still the track's, to prune once that is gone.
   */
  readonly retained: string[];
  /** Set when the signal stopped the prune: why, and the objects no delete was sent for. */
  readonly interrupted?: Interrupted;
}

/** Deletes each stale object we own (background propagation). */
export async function pruneObjects(
  cluster: KubernetesPort,
  stale: readonly InventoryEntry[],
  options: PruneOptions,
): Promise<PruneResult> {
  const notSent: string[] = [];
  const retained: string[] = [];
  const entries = await mapWithLimit(
    stale,
    8,
    async (entry): Promise<ChangeSetEntry | undefined> => {
      const ref = refOfEntry(entry);
      const subject = subjectOf(ref);
      const interruption = interruptionOf(options.signal);
      if (interruption !== undefined) {
        notSent.push(subject);
        return {
          subject,
          action: 'failed',
          error: `${subject}: not deleted: ${interruption.message}`,
        };
      }
      try {
        const live = await cluster.get(ref);
        if (!live) return undefined; // already gone: nothing to report
        if (live.metadata.labels?.[TRACK_LABEL] !== options.track) {
          return {
            subject,
            action: 'skipped',
            reason: `not labelled ${TRACK_LABEL}=${options.track}; left in place`,
          };
        }
        if (isPruneDisabled(live)) {
          return { subject, action: 'skipped', reason: 'driftless.dev/prune: disabled' };
        }
        const refusal = await cascadeRefusal(cluster, live, {
          track: options.track,
          ...(options.inRevision ? { inRevision: options.inRevision } : {}),
        });
        if (refusal !== undefined) {
          retained.push(subject);
          return { subject, action: 'skipped', reason: refusal };
        }
        // The uid precondition makes sure we delete the object we inspected,
        // not one created anew under the same name in between.
        const result = await cluster.delete(ref, {
          propagationPolicy: 'Background',
          ...(live.metadata.uid ? { preconditions: { uid: live.metadata.uid } } : {}),
          ...(options.dryRun ? { dryRun: true } : {}),
        });
        return result === 'deleted' ? { subject, action: 'deleted' } : undefined;
      } catch (error) {
        return { subject, action: 'failed', error: messageAbout(subject, error) };
      }
    },
  );
  const changeset = entries.filter((entry): entry is ChangeSetEntry => entry !== undefined);
  // Also when every delete was sent: at the track's deadline those in flight were cancelled.
  const interruption = interruptionOf(options.signal);
  return interruption === undefined
    ? { changeset, retained }
    : { changeset, retained, interrupted: { reason: interruption.message, notSent } };
}
