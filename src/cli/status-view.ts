/** `driftless status`: the DESIGN.md JSON shape of a track's state, and its text form. */
import { shortRevision } from '../object-id.ts';
import type { ObjectStatus, TrackObjects } from '../sync/object-statuses.ts';
import type { CollectingTrack, HeldTrack } from '../sync/published-tracks.ts';
import { describeLease, leaseIdOf, liveLease, type TrackState } from '../sync/track-state.ts';
import type { Palette } from './colours.ts';
import { formatTable } from './table.ts';

export { shortRevision } from '../object-id.ts';

function colourStatus(status: string, colours: Palette): string {
  if (status === 'True') return colours.green(status);
  if (status === 'False') return colours.red(status);
  return colours.yellow(status);
}

/**
 * What runs on the track at `now`, for people: `busy: a sync since …`
 * (other commands on the track wait for it), or undefined.
 */
function busyNote(state: TrackState, now: Date): string | undefined {
  const lease = liveLease(state, now);
  return lease === undefined ? undefined : `busy: ${describeLease(lease)}`;
}

/**
 * `suspended`, when the track is and its Ready condition does not say so already: a rollback
 * or unpin on a suspended track replaces the Suspended reason, and its message ("the next
 * sync applies …") would read as if syncs ran.
 */
function suspendedNote(state: TrackState): string | undefined {
  if (state.suspended !== true) return undefined;
  const ready = state.conditions.find((c) => c.type === 'Ready');
  return ready?.reason === 'Suspended' ? undefined : 'suspended';
}

/** What a track whose GitTrack was deleted is while its objects are collected. */
function collectingNote(collecting: CollectingTrack): string {
  return `GitTrack ${collecting.gitTrack} deleted: objects being removed`;
}

/** What a track is while its source keeps it for a refused document. */
function heldNote(held: HeldTrack): string {
  return `${held.document ?? 'its document'} refused: kept, not synced`;
}

/**
 * One line per track: readiness, revisions, pin and counts; suspension and what runs on it at
 * `now`; for the track of a deleted GitTrack (`collecting`), that its objects are being removed;
 * for one whose document is refused for now (`held`), that it is kept and not synced.
 */
export function formatStatusSummary(
  entries: readonly {
    track: string;
    state: TrackState;
    collecting?: CollectingTrack;
    held?: HeldTrack;
  }[],
  colours: Palette,
  now: Date,
): string {
  const rows = entries.map(({ track, state, collecting, held }) => {
    const ready = state.conditions.find((c) => c.type === 'Ready');
    const notes = [
      collecting && collectingNote(collecting),
      held && heldNote(held),
      busyNote(state, now),
      suspendedNote(state),
    ].filter((note) => note !== undefined);
    const message = ready?.message ?? 'never synced';
    return [
      track,
      colourStatus(ready?.status ?? 'Unknown', colours),
      shortRevision(state.appliedRevision),
      shortRevision(state.desiredRevision),
      state.pinned ? colours.yellow(shortRevision(state.pinned)) : '-',
      `${state.objectsInSync}/${state.objectsDiscovered}`,
      [...notes.map((note) => colours.yellow(note)), message].join('; '),
    ];
  });
  return formatTable(
    ['TRACK', 'READY', 'APPLIED', 'DESIRED', 'PINNED', 'IN SYNC', 'MESSAGE'],
    rows,
  );
}

/**
 * The line under the detail of the track of a deleted GitTrack: its objects are being removed,
 * by which source's discoveries, and when a failed collection is tried again.
 */
export function formatCollectingNote(collecting: CollectingTrack, colours: Palette): string {
  const { retry } = collecting;
  const when =
    retry === undefined
      ? `each discovery of tracksFrom source "${collecting.source}" tries again`
      : `the collection failed${retry.failures === 1 ? '' : ` ${retry.failures} times in a row`} (its Ready condition says why); a discovery of tracksFrom source "${collecting.source}" tries again from ${retry.notBefore}`;
  return `${colours.yellow(collecting.name)}: ${collectingNote(collecting)}; ${when}`;
}

/**
 * The line under the detail of a track whose document its source refuses for now: it keeps its
 * name, state and objects, and syncs again once the document is mended; a document removed
 * frees the name, and the track is then reported as removed from the config.
 */
export function formatHeldNote(held: HeldTrack, colours: Palette): string {
  const document = held.document ?? 'the document that gave it';
  const why = held.problem === undefined ? '' : ` (${held.problem})`;
  return `${colours.yellow(held.name)}: tracksFrom source "${held.source}" refuses ${document} for now${why}; the track keeps its name, state and objects, and nothing syncs it until the document is mended`;
}

/** Everything about one track: revisions, counts, conditions, ignored objects and inventory. */
export function formatStatusDetail(
  track: string,
  state: TrackState,
  colours: Palette,
  now: Date,
): string {
  const lease = liveLease(state, now);
  const lines = [
    `${colours.bold('Track:')}     ${track}`,
    ...(lease === undefined
      ? []
      : [
          `${colours.bold('Busy:')}      ${colours.yellow(describeLease(lease))}; other syncs, rollbacks and drift checks wait for it (until ${lease.until} at the latest; lease ${leaseIdOf(lease)})`,
        ]),
    `${colours.bold('Applied:')}   ${state.appliedRevision ?? '-'}`,
    `${colours.bold('Desired:')}   ${state.desiredRevision ?? '-'}`,
    `${colours.bold('Pinned:')}    ${state.pinned ? colours.yellow(state.pinned) : '-'}`,
    `${colours.bold('Suspended:')} ${state.suspended === true ? colours.yellow('yes') : 'no'}`,
    `${colours.bold('Objects:')}   ${state.objectsDiscovered} discovered, ${state.objectsApplied} applied, ` +
      `${state.objectsIgnored} ignored, ${state.objectsInSync} in sync`,
  ];
  if (state.conditions.length > 0) {
    lines.push(
      '',
      formatTable(
        ['CONDITION', 'STATUS', 'REASON', 'SINCE', 'MESSAGE'],
        state.conditions.map((c) => [
          c.type,
          colourStatus(c.status, colours),
          c.reason,
          c.lastTransitionTime,
          c.message,
        ]),
      ),
    );
  } else {
    lines.push('', 'never synced');
  }
  const ignored = Object.entries(state.ignoredObjects);
  if (ignored.length > 0) {
    lines.push('', formatTable(['IGNORED', 'REASON'], ignored));
  }
  if (state.inventory.length > 0) {
    lines.push(
      '',
      formatTable(
        ['INVENTORY', 'API VERSION'],
        state.inventory.map((e) => [e.subject, e.apiVersion]),
      ),
    );
  }
  return lines.join('\n');
}

/**
 * `status --objects`: one row per object, sync and health coloured; then the objects the
 * track's filters and rules leave out, `Ignored` with why (dim: nothing applies or reads them).
 */
export function formatObjectStatuses({ objects, ignored }: TrackObjects, colours: Palette): string {
  if (objects.length === 0 && ignored.length === 0)
    return 'no objects: the track has not fetched a revision yet';
  // Green for the good state, red for the bad one, yellow for anything between.
  const tint = (value: string, good: string, bad: string) =>
    value === good
      ? colours.green(value)
      : value === bad
        ? colours.red(value)
        : colours.yellow(value);
  const sync = (value: ObjectStatus['sync']) => tint(value, 'InSync', 'Failed');
  const health = (value: ObjectStatus['health']) => tint(value, 'Healthy', 'Degraded');
  return formatTable(
    ['OBJECT', 'API VERSION', 'SYNC', 'HEALTH', 'MESSAGE'],
    [
      ...objects.map((o) => [o.subject, o.apiVersion, sync(o.sync), health(o.health), o.message]),
      ...ignored.map((o) => [o.subject, o.apiVersion, colours.dim('Ignored'), '-', o.reason]),
    ],
  );
}
