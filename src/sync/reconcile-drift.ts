/**
 * The drift job: compare the cluster with the revision the track last applied
 * (its pin, after a rollback) and put back what was changed by hand — or, with
 * `drift: detect` or `--detect-only`, only report it.
 */
import { ownedKeys } from '../apply/inventory.ts';
import type { ChangeSetEntry } from '../apply/changeset.ts';
import type { Track } from '../config/types.ts';
import { untilInterrupted } from '../errors.ts';
import { correctDrift, detectDrift, type DriftReport } from '../drift/index.ts';
import type { ApplyDeps } from './apply-revision.ts';
import type { DriftJob } from './jobs.ts';
import { redactDeep, redactError } from '../redact.ts';
import { loadDesiredBundle } from './load-stored-revision.ts';
import { selectObjects } from './select-objects.ts';
import { writeBackChanges } from '../drift/write-back-changes.ts';
import { parseBundle } from '../render/parse-bundle.ts';
import { objectsNotInGit } from '../drift/objects-not-in-git.ts';
import type { ResourceCatalog } from '../cluster/discovery.ts';
import type { RenderedObject } from '../render/types.ts';
import { syncToOf } from './sync-rules.ts';
import type { WriteBackChange } from './jobs.ts';
import { actingAs, TrackDeadline } from './track-cluster.ts';
import { prefetchLists, readLive } from '../apply/read-live.ts';
import type { KubeObject } from '../cluster/kube-object.ts';
import { judgeObjects } from './object-statuses.ts';
import type { ObservedObject } from './observed-object.ts';
import {
  takeApplyLease,
  releaseApplyLease,
  unsyncedWriteBacks,
  updateTrackState,
} from './track-state.ts';
import type { ReencryptedFile } from './reencrypt-secret.ts';
import { recordRefusedWriteBack } from './write-back.ts';

export interface DriftResult {
  readonly track: string;
  /** The revision compared against; null when the track never applied one. */
  readonly revision: string | null;
  readonly drifted: DriftReport['drifted'];
  readonly missing: string[];
  readonly errors: DriftReport['errors'];
  /** True when drift was found and put back. */
  readonly corrected: boolean;
  readonly changeset: ChangeSetEntry[];
  /** Changes to `syncTo: git` objects, for the write-back job (not corrected). */
  readonly writeBack: WriteBackChange[];
  /** `syncTo: git` objects whose change may not be written back (a Secret), and why. */
  readonly writeBackRefused: { readonly subject: string; readonly error: string }[];
}

/** A check that found nothing: no revision applied yet, or one that could not run. */
export function noDriftFound(track: string, revision: string | null): DriftResult {
  return {
    track,
    revision,
    drifted: [],
    missing: [],
    errors: [],
    corrected: false,
    changeset: [],
    writeBack: [],
    writeBackRefused: [],
  };
}

/**
 * Checks (and unless told not to, corrects) drift of the track's applied revision. Its cluster
 * requests end at its start plus the track's `timeout` (track-cluster.ts TrackDeadline): a
 * check that reaches it fails naming the track and the timeout, its lease given back.
 */
export async function reconcileDrift(
  track: Track,
  job: DriftJob,
  given: ApplyDeps,
): Promise<DriftResult> {
  const deadline = new TrackDeadline(track, 'drift check', given.signal);
  try {
    // Read and correct as the track's service account, when it names one; the lease is taken
    // with the job's own signal, the rest stops at the deadline too.
    const cluster = actingAs(deadline.bound(given.cluster), track);
    return await checkDrift(track, job, { ...given, cluster }, deadline.signal);
  } finally {
    deadline.dispose();
  }
}

async function checkDrift(
  track: Track,
  job: DriftJob,
  deps: ApplyDeps,
  stop: AbortSignal,
): Promise<DriftResult> {
  const now = deps.now ?? (() => new Date());
  // The revision to enforce is read under the lease, never before it: a sync that finished
  // between that read and the lease would be reverted to the revision it replaced (seen in
  // the load test: a drift check wrote a track's previous push over its newest).
  const { holder, state: before } = await takeApplyLease(
    deps.state,
    track,
    'drift check',
    now(),
    deps.signal,
  );
  const revision = before.pinned ?? before.appliedRevision;
  let observed: ObservedObject[] | undefined;
  // Subjects the correction put back: in sync again when the observation is recorded.
  let putBack = new Set<string>();
  // Secrets encrypted again for write-back by this check, kept for the next (reencrypt-secret.ts).
  let reencrypted: Record<string, ReencryptedFile> | undefined;
  try {
    // Nothing applied yet, nothing to compare: still a check, so the schedule waits an interval.
    if (!revision) return noDriftFound(track.name, revision);
    // The kinds the revision applied: their LISTs run while its artifact is read (read-live.ts).
    const prefetched = prefetchLists(deps.cluster, before.inventory);
    // Its secrets' reads stop at the check's deadline too, as its cluster requests do.
    const bundle = await loadDesiredBundle(track, revision, { ...deps, signal: stop });
    const catalog = await deps.cluster.discover();
    const { selected, toGit } = selectObjects(track, bundle.objects, catalog);
    // Read once: drift compares them, and the observation the dashboard shows judges their health.
    const live = await readLive(
      deps.cluster,
      selected.map((object) => object.manifest as KubeObject),
      prefetched,
    );
    const report = await detectDrift(deps.cluster, track, selected, { live });
    observed = await judgeObjects(track, {
      selected,
      live,
      report,
      failed: before.failedObjects ?? {},
    });
    // syncTo: git objects changed in the cluster are written back, not put back (still
    // created from Git when missing).
    const toCorrect = { ...report, drifted: report.drifted.filter((d) => !toGit.has(d.subject)) };
    // A Secret, and any object of a SOPS-encrypted file, is written back only encrypted again,
    // here where the decryption keys are.
    const made: Record<string, ReencryptedFile> = {};
    const toGitDrifted = report.drifted.filter((d) => toGit.has(d.subject));
    let toWrite: Awaited<ReturnType<typeof writeBackChanges>> = { changes: [], refused: [] };
    if (!job.detectOnly && toGitDrifted.length > 0) {
      // The stored revision keeps its encrypted files as Git has them (the loaded one does not).
      const stored = await untilInterrupted(deps.artifacts.get(track.name, revision), stop);
      const sources = parseBundle(stored).encryptedSources ?? [];
      toWrite = await writeBackChanges(deps.cluster, toGitDrifted, selected, {
        files: new Set(sources.map((source) => source.path)),
        changes: async (objects) => {
          // Loaded for an encrypted object written back only: it brings the SOPS runner.
          const { reencryptedObjects, reencryptedFileOf } = await import('./reencrypt-secret.ts');
          const encrypted = await reencryptedObjects(
            track,
            objects,
            sources,
            deps,
            before.reencrypted,
          );
          for (const change of encrypted.changes) {
            const kept = reencryptedFileOf(change);
            if (kept !== undefined) made[change.subject] = kept;
          }
          return encrypted;
        },
      });
    }
    if (!job.detectOnly) reencrypted = made;
    const added =
      track.writeBack?.include && !job.detectOnly
        ? await addedInCluster(track, deps.cluster, catalog, bundle.objects)
        : { changes: [], refused: [] };
    const found = toCorrect.drifted.length > 0 || toCorrect.missing.length > 0;
    const correct = found && track.drift === 'correct' && !job.detectOnly;
    const changeset = correct
      ? await correctDrift(deps.cluster, track, toCorrect, selected, {
          timeoutMs: track.timeout,
          owned: ownedKeys(before.inventory),
          signal: stop,
        })
      : [];
    // Patches and errors may quote a substituted secret value (src/redact.ts).
    const result: DriftResult = {
      ...redactDeep({
        track: track.name,
        revision,
        drifted: report.drifted,
        missing: report.missing,
        errors: report.errors,
        corrected: correct && !changeset.some((e) => e.action === 'failed'),
        changeset,
        writeBack: [] as WriteBackChange[],
        writeBackRefused: [...toWrite.refused, ...added.refused],
      }),
      writeBack: [...toWrite.changes, ...added.changes].map(redactWriteBack),
    };
    putBack = new Set(changeset.filter((e) => e.action !== 'failed').map((e) => e.subject));
    if (correct) {
      await deps.state.appendHistory(track.name, {
        revision,
        appliedAt: now().toISOString(),
        result: result.corrected ? 'drift-corrected' : 'failed',
        trigger: job.trigger ?? 'schedule',
        drifted: report.drifted.map((d) => d.subject),
        missing: report.missing,
      });
    }
    if (result.writeBack.length === 0 && result.writeBackRefused.length > 0) {
      // No write-back job follows to record the refusals: recorded here.
      await recordRefusedWriteBack(track.name, revision, result.writeBackRefused, {
        state: deps.state,
        now,
      });
    }
    return result;
  } catch (error) {
    throw redactError(error);
  } finally {
    await updateTrackState(deps.state, track.name, (state) => {
      state.driftCheckedAt = now().toISOString();
      if (observed !== undefined) {
        state.observed = {
          at: state.driftCheckedAt,
          objects: afterCorrection(observed, putBack),
        };
      }
      if (reencrypted !== undefined) {
        // Only what this check made: a Secret no longer changed needs none.
        if (Object.keys(reencrypted).length > 0) state.reencrypted = reencrypted;
        else delete state.reencrypted;
      }
      if (revision && state.unsyncedWriteBacks !== undefined) {
        // Write-backs the compared revision holds are settled (write-back.ts).
        const unsynced = unsyncedWriteBacks(state.unsyncedWriteBacks, revision);
        if (unsynced.length > 0) state.unsyncedWriteBacks = unsynced;
        else delete state.unsyncedWriteBacks;
      }
      releaseApplyLease(state, holder);
    });
  }
}

/**
 * Objects made in the cluster that a `syncTo: git` rule claims and Git does
 * not have (`writeBack.include`), as changes adding each under
 * `writeBack.path` inside the track's subPath. Secrets are refused.
 */
async function addedInCluster(
  track: Track,
  cluster: ApplyDeps['cluster'],
  catalog: ResourceCatalog,
  inGit: readonly RenderedObject[],
): Promise<{ changes: WriteBackChange[]; refused: { subject: string; error: string }[] }> {
  const found = await objectsNotInGit(
    cluster,
    track,
    catalog,
    new Set(inGit.map((object) => object.subject)),
    (object, resource) =>
      syncToOf(track, {
        group: object.apiVersion.includes('/') ? object.apiVersion.split('/')[0]! : '',
        resource,
        namespace: object.metadata.namespace,
        name: object.metadata.name,
        labels: object.metadata.labels ?? {},
      }) === 'git',
  );
  const changes: WriteBackChange[] = [];
  const refused: { subject: string; error: string }[] = [];
  for (const object of found) {
    if (object.kind === 'Secret') {
      refused.push({
        subject: object.subject,
        error: `${object.subject}: Secrets are never written to Git in plain text; not added`,
      });
      continue;
    }
    const file = (track.writeBack?.path ?? '{namespace}/{kind}-{name}.yaml')
      .replaceAll('{namespace}', object.namespace ?? 'cluster')
      .replaceAll('{kind}', object.kind.toLowerCase())
      .replaceAll('{name}', object.name);
    changes.push({
      subject: object.subject,
      apiVersion: String(object.object['apiVersion']),
      kind: object.kind,
      name: object.name,
      ...(object.namespace === undefined ? {} : { namespace: object.namespace }),
      // Inside subPath, so the next sync reads it.
      file: track.subPath ? `${track.subPath}/${file}` : file,
      line: 0,
      add: object.object,
      fields: [],
    });
  }
  return { changes, refused };
}

/** The observation to record: what the correction put back is in sync again, its patch applied. */
function afterCorrection(
  observed: ObservedObject[],
  putBack: ReadonlySet<string>,
): ObservedObject[] {
  return observed.map(({ patch, changedBy, ...object }) =>
    putBack.has(object.subject)
      ? { ...object, sync: 'InSync', message: 'put back by the drift check' }
      : { ...object, ...(patch ? { patch } : {}), ...(changedBy ? { changedBy } : {}) },
  );
}

/**
 * A write-back change with secret values redacted, except the ciphertext of a file encrypted
 * again (reencrypt-secret.ts): random base64 may hold a short secret value's letters by
 * chance, and redacting those would corrupt the file written to Git (seen in CI: `invalid
 * armor: illegal base64 data`). That file was checked for plain-text secrets when it was made.
 */
export function redactWriteBack(change: WriteBackChange): WriteBackChange {
  const { replace, ...rest } = change;
  return replace === undefined ? redactDeep(change) : { ...redactDeep(rest), replace };
}
