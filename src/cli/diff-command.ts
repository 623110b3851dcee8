/** `driftless diff`: what sync would change, by server-side dry-run; exit 1 when anything would. */
import { actingAs, readWithinTimeout } from '../sync/track-cluster.ts';
import {
  previewChanges,
  type PlannedAction,
  type PlannedChange,
} from '../apply/preview-changes.ts';
import type { KubeObject } from '../cluster/kube-object.ts';
import type { KubernetesPort } from '../cluster/kubernetes-port.ts';
import type { Track } from '../config/types.ts';
import type { LocalContext } from '../sync/local-context.ts';
import { readTrackState } from '../sync/track-state.ts';
import { unchangedInGit } from '../sync/apply-revision.ts';
import { selectObjects } from '../sync/select-objects.ts';
import { maskSecret } from '../apply/mask-secret.ts';
import type { Palette } from './colours.ts';
import type { CommandHandler } from './command-handler.ts';
import type { Output } from './output.ts';
import { errorBesideSubject } from './changeset-summary.ts';
import { EXIT_DIFFERENCES, EXIT_FAILED, EXIT_OK } from './exit-codes.ts';
import { loadRevisionBundle, targetRevision, type TargetRevision } from './load-revision.ts';
import { findTrack } from './select-tracks.ts';
import { shortRevision } from './status-view.ts';
import { colourDiff } from './unified-diff.ts';
import { unifiedDiff } from '../unified-diff.ts';
import { toYaml } from '../render/manifests-yaml.ts';
import { redactAlongside } from '../redact.ts';

/** A planned change as `diff` shows it (`-o json` prints these): the two forms as a unified diff. */
export interface ShownChange {
  readonly subject: string;
  readonly action: PlannedAction;
  /** Unified diff of the object as YAML, live -> desired. */
  readonly diff?: string;
  /** Why the server refused the dry-run: sync would fail on this object. */
  readonly error?: string;
  readonly note?: string;
}

/** The object as YAML for the diff; a Secret's values masked (apply/mask-secret.ts), as kubectl diff does. */
function asYaml(object: KubeObject | undefined): string {
  return object === undefined ? '' : toYaml(maskSecret(object), { sortKeys: true });
}

/** An object to prune as shown by a track that puts secret values in objects: its name only. */
function nameOnly(object: KubeObject): KubeObject {
  const { name, namespace } = object.metadata;
  return {
    apiVersion: object.apiVersion,
    kind: object.kind,
    metadata: { name, ...(namespace === undefined ? {} : { namespace }) },
  };
}

const VALUES_NOT_SHOWN =
  'values not shown: the track decrypts or substitutes secret values, which a revision no longer in Git may have put in any object';

/**
 * The change with its unified diff in place of the two objects. The live side is redacted where
 * the desired one holds a secret value; `holdsSecrets` (a track with `decryption` or
 * `substituteFrom`) shows an object to prune by its name alone: what an earlier revision put in
 * it is not known to be secret any more.
 */
export function showChange(change: PlannedChange, holdsSecrets: boolean): ShownChange {
  const { subject, action } = change;
  if ('error' in change) return { subject, action, error: change.error };
  const hidden = holdsSecrets && change.desired === undefined && change.live !== undefined;
  const live = hidden
    ? nameOnly(change.live!)
    : change.desired === undefined
      ? change.live
      : redactAlongside(change.live, change.desired);
  const diff = unifiedDiff(
    live === undefined ? '/dev/null' : `live/${subject}`,
    change.desired === undefined ? '/dev/null' : `desired/${subject}`,
    asYaml(live),
    asYaml(change.desired),
  );
  const note = hidden ? VALUES_NOT_SHOWN : change.note;
  return { subject, action, diff, ...(note ? { note } : {}) };
}

const VERBS: Record<PlannedAction, string> = {
  create: 'to create',
  update: 'to update',
  prune: 'to prune',
};

function heading(change: ShownChange, colours: Palette): string {
  const label =
    change.action === 'create'
      ? colours.green('create')
      : change.action === 'prune'
        ? colours.magenta('prune')
        : colours.yellow('update');
  return `${colours.bold(change.subject)}: ${label}${change.note ? ` (${change.note})` : ''}`;
}

/** Every change with its diff, then a count per action (and per error). */
export function formatChanges(
  track: string,
  revision: string,
  changes: readonly ShownChange[],
  colours: Palette,
): string {
  if (changes.length === 0) return `${track}: no differences at ${shortRevision(revision)}`;
  const blocks = changes.map((change) => {
    const lines = [heading(change, colours)];
    // Under the heading that names the object: the error without the subject it starts with.
    if (change.error) lines.push(colours.red(errorBesideSubject(change) ?? change.error));
    if (change.diff) lines.push(colourDiff(change.diff.trimEnd(), colours));
    return lines.join('\n');
  });
  const counts = (['create', 'update', 'prune'] as const)
    .map((action) => [action, changes.filter((c) => c.action === action).length] as const)
    .filter(([, n]) => n > 0)
    .map(([action, n]) => `${n} ${VERBS[action]}`);
  const errors = changes.filter((c) => c.error).length;
  if (errors > 0) counts.push(colours.red(`${errors} would fail`));
  return [...blocks, `${track} at ${shortRevision(revision)}: ${counts.join(', ')}`].join('\n\n');
}

/**
 * The revision `diff` compares with, and what a sync would change to reach it: the whole of the
 * diff's work, which ends when `signal` (its deadline) aborts. `on` is the track's cluster, each
 * request ending at that deadline.
 */
async function planDiff(
  track: Track,
  ctx: LocalContext,
  output: Output,
  on: KubernetesPort,
  signal: AbortSignal,
): Promise<{ target: TargetRevision; planned: PlannedChange[] }> {
  const state = await readTrackState(ctx.state, track.name);
  const target = await targetRevision(track, undefined, ctx, state.pinned, signal);
  if (target.origin === 'pinned') {
    output.log(`${track.name}: pinned at ${target.revision}; comparing with the pinned revision`);
  }
  const bundle = await loadRevisionBundle(
    track,
    target,
    { ...ctx, cluster: async () => on },
    'resolve',
    signal,
  );
  // A preview as the track's service account: it shows what that account may do.
  const cluster = actingAs(on, track);
  const { selected, toGit, ruledOut } = selectObjects(
    track,
    bundle.objects,
    await cluster.discover(),
  );
  // Told what the sync is told (apply-revision.ts), so that only what it would change shows:
  // `syncTo: git` objects it leaves to the cluster, and what a rule or filter keeps from prune.
  const objects = selected.map((object) => object.manifest as unknown as KubeObject);
  const createOnly = await unchangedInGit(
    track,
    { objects, toGit },
    state.appliedRevision,
    { ...ctx, cluster },
    { writeBacks: state.unsyncedWriteBacks, revision: target.revision },
  );
  const planned = await previewChanges(cluster, track, selected, state.inventory, {
    createOnly,
    keep: ruledOut,
  });
  return { target, planned };
}

export const diffCommand: CommandHandler = async (ctx, line, output) => {
  const track = findTrack(ctx.config, line.track ?? '', line.config);
  // One deadline for the whole diff, as a sync has: the track's timeout, counted from here. Every
  // request to the cluster ends by it; the resolve of the track's reference, the fetch and render
  // of a revision not stored yet, and the reads of its secrets stop at it too, so a Git host or a
  // secret's source that never answers ends the diff with the deadline's error.
  const connected = await ctx.cluster(track);
  const { target, planned } = await readWithinTimeout(track, 'diff', connected, (on, signal) =>
    planDiff(track, ctx, output, on, signal),
  );
  const holdsSecrets = track.decryption !== undefined || track.substituteFrom.length > 0;
  const changes = planned.map((change) => showChange(change, holdsSecrets));
  if (line.output === 'json') {
    output.json({ track: track.name, revision: target.revision, changes });
  } else {
    output.print(formatChanges(track.name, target.revision, changes, output.colours));
  }
  if (changes.some((c) => c.error !== undefined)) return EXIT_FAILED;
  return changes.length > 0 ? EXIT_DIFFERENCES : EXIT_OK;
};
